//! What a pod decides with: a limiter on Redis, or one in its own memory.

use crate::limiter::Strategy;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A pod's limiter, as parameters and CSVs name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PodStrategy {
    /// A strategy on the shared Redis (naive-window, incr-window, lua-bucket, lua-gcra, ...).
    Redis(Strategy),
    /// Each pod a window of the whole limit in its own memory (seed 001: limit x pods).
    InMemory,
    /// Each pod a window of limit / pods in its own memory (the seed's fail-open fallback).
    InMemoryFallback,
}

impl PodStrategy {
    /// The name in parameters and CSVs.
    pub fn name(self) -> &'static str {
        match self {
            PodStrategy::Redis(s) => s.name(),
            PodStrategy::InMemory => "in-memory",
            PodStrategy::InMemoryFallback => "in-memory-fallback",
        }
    }

    /// The Redis strategy, if it decides on Redis.
    pub fn on_redis(self) -> Option<Strategy> {
        match self {
            PodStrategy::Redis(s) => Some(s),
            _ => None,
        }
    }

    /// Each pod's own limit when it decides in memory.
    pub fn in_memory_limit(self, limit: u64, pods: u32) -> Option<u64> {
        match self {
            PodStrategy::Redis(_) => None,
            PodStrategy::InMemory => Some(limit),
            PodStrategy::InMemoryFallback => Some((limit / u64::from(pods.max(1))).max(1)),
        }
    }
}

impl fmt::Display for PodStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PodStrategy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "in-memory" => return Ok(PodStrategy::InMemory),
            "in-memory-fallback" => return Ok(PodStrategy::InMemoryFallback),
            _ => {}
        }
        let strategy: Strategy = s
            .parse()
            .map_err(|e: String| format!("{e}, in-memory, in-memory-fallback"))?;
        match strategy {
            // WATCH state belongs to a connection, and a pod shares one; GET decides nothing.
            Strategy::WatchBucket | Strategy::Get => Err(format!(
                "`{s}` cannot run in a pod: a pod's in-flight requests share one connection"
            )),
            other => Ok(PodStrategy::Redis(other)),
        }
    }
}

impl Serialize for PodStrategy {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for PodStrategy {
    /// As [`FromStr`], except that a CSV read by `report` or `chart` names custom limiters that
    /// are not loaded there: they read back as [`Strategy`]'s deserializer reads them (parameters
    /// still accept only loaded ones).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::IntoDeserializer;
        let text = String::deserialize(d)?;
        let parsed = text
            .parse()
            .or_else(|e: String| match text.parse::<Strategy>() {
                // A built-in strategy a pod refuses.
                Ok(_) => Err(e),
                Err(_) => {
                    let name: serde::de::value::StrDeserializer<'_, serde::de::value::Error> =
                        text.as_str().into_deserializer();
                    Strategy::deserialize(name)
                        .map(PodStrategy::Redis)
                        .map_err(|_| e)
                }
            });
        parsed.map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_pods_refuse_what_needs_a_connection_each() {
        for name in [
            "naive-window",
            "lua-bucket",
            "in-memory",
            "in-memory-fallback",
        ] {
            assert_eq!(name.parse::<PodStrategy>().unwrap().name(), name);
        }
        assert!("watch-bucket".parse::<PodStrategy>().is_err());
        let err = "lua".parse::<PodStrategy>().unwrap_err();
        assert!(err.contains("in-memory-fallback"), "{err}");
        assert_eq!(
            PodStrategy::InMemoryFallback.in_memory_limit(100, 12),
            Some(8)
        );
        assert_eq!(PodStrategy::InMemory.in_memory_limit(100, 12), Some(100));
        let json = serde_json::to_string(&PodStrategy::InMemory).unwrap();
        assert_eq!(json, "\"in-memory\"");
        // A CSV's custom limiter that this process never loaded reads back as custom; a
        // parameter naming one is a typo, and a built-in a pod refuses stays refused.
        let read = |text: &str| serde_json::from_str::<PodStrategy>(&format!("\"{text}\""));
        let recorded = read("some-adapter").unwrap();
        assert!(
            matches!(recorded, PodStrategy::Redis(s) if s.is_custom() && s.name() == "some-adapter")
        );
        assert!(read("watch-bucket").is_err());
        assert!(crate::limiter::with_strict_names(|| read("some-adapter")).is_err());
    }
}
