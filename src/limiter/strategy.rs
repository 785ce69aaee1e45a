//! The strategy names: what the command line, parameters and CSVs call each limiter.

use super::custom::CustomName;
use super::LimitSpec;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A strategy for deciding whether one request may pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// HMGET tokens, decide in the client, HSET tokens-1 (seed 000's naive bucket).
    NaiveBucket,
    /// Token bucket in one Lua script with Redis TIME.
    LuaBucket,
    /// Seed 002's own token bucket script, as published: its expiry is capacity / rate exactly.
    Seed002Bucket,
    /// Token bucket with WATCH, HMGET, a client-side decision and MULTI/EXEC, retried on abort.
    WatchBucket,
    /// GCRA in one Lua script with Redis TIME (as go-redis/redis_rate and redis-cell).
    LuaGcra,
    /// Fixed window: GET, decide in the client, MULTI INCR EXPIRE (seed 001's old middleware).
    NaiveWindow,
    /// Fixed window: INCR, compare the returned count, EXPIRE when it is 1.
    IncrWindow,
    /// Fixed window in one Lua script: INCR, PEXPIRE when new, compare.
    LuaWindow,
    /// Fixed window as MULTI INCR PEXPIRE EXEC, the count compared in the client.
    MultiWindow,
    /// Sliding log: a sorted set of admitted requests, in one Lua script with Redis TIME.
    LuaLog,
    /// Sliding-window counter: two fixed windows, the previous one weighted, in one Lua script.
    LuaSwc,
    /// Not a limiter: a plain GET, always allowed; the scale decisions are measured against.
    Get,
    /// A user's Lua limiter, named by its manifest (`--limiter`): see [`super::custom`].
    Custom(CustomName),
}

impl Strategy {
    /// Every strategy, in the order charts and tables show them.
    pub const ALL: &'static [Strategy] = &[
        Strategy::NaiveBucket,
        Strategy::LuaBucket,
        Strategy::Seed002Bucket,
        Strategy::WatchBucket,
        Strategy::LuaGcra,
        Strategy::NaiveWindow,
        Strategy::IncrWindow,
        Strategy::LuaWindow,
        Strategy::MultiWindow,
        Strategy::LuaLog,
        Strategy::LuaSwc,
        Strategy::Get,
    ];

    /// The name used on the command line, in parameters and in CSVs.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::NaiveBucket => "naive-bucket",
            Strategy::LuaBucket => "lua-bucket",
            Strategy::Seed002Bucket => "seed002-bucket",
            Strategy::NaiveWindow => "naive-window",
            Strategy::IncrWindow => "incr-window",
            Strategy::LuaWindow => "lua-window",
            Strategy::MultiWindow => "multi-window",
            Strategy::WatchBucket => "watch-bucket",
            Strategy::LuaGcra => "lua-gcra",
            Strategy::LuaLog => "lua-log",
            Strategy::LuaSwc => "lua-swc",
            Strategy::Get => "get",
            Strategy::Custom(name) => name.as_str(),
        }
    }

    /// The built-in strategy of the same algorithm: itself for a built-in one, the reference a
    /// custom limiter is measured against (and whose limit semantics it shares) otherwise. A
    /// custom name read back from a CSV, with no manifest loaded, is its own reference.
    pub fn reference(self) -> Strategy {
        match self {
            Strategy::Custom(name) => name.algorithm().map_or(self, |a| a.reference()),
            other => other,
        }
    }

    /// Whether it is a user's limiter rather than one of ratelab's.
    pub fn is_custom(self) -> bool {
        matches!(self, Strategy::Custom(_))
    }

    /// Whether it is a limiter process (a loaded manifest of `kind = "process"`): an adapter that
    /// decides on connections of its own to the one server it was given.
    pub fn is_process(self) -> bool {
        matches!(self, Strategy::Custom(name) if name.definition().is_some_and(|d| d.process.is_some()))
    }

    /// Whether each in-flight request needs a connection of its own. WATCH state belongs to a
    /// connection: on a shared one, one request's EXEC ends the others' WATCH and they commit
    /// unchecked. The load generator must then give each in-flight task its own connection.
    pub fn needs_own_connection(self) -> bool {
        matches!(self, Strategy::WatchBucket)
    }

    /// The Redis key that holds the state of client `key`: the key itself, except for fixed
    /// windows, whose counter is named after the window (the one starting at `window_origin_ms`),
    /// so experiments can inspect it (MEMORY USAGE, OBJECT ENCODING) without knowing the layout.
    pub fn state_key(self, key: &str, spec: &LimitSpec) -> String {
        match self {
            Strategy::Custom(name) => name.state_key(key, spec),
            Strategy::NaiveWindow
            | Strategy::IncrWindow
            | Strategy::LuaWindow
            | Strategy::MultiWindow => spec.window_key(key, spec.window_origin_ms),
            _ => key.to_string(),
        }
    }

    /// A command reading what `key` holds after a run (a bucket's tokens, a window's count), so
    /// experiments can record the final state without knowing each strategy's layout.
    pub fn state_command(self, key: &str, spec: &LimitSpec) -> redis::Cmd {
        match self {
            Strategy::NaiveBucket
            | Strategy::LuaBucket
            | Strategy::Seed002Bucket
            | Strategy::WatchBucket => redis::cmd("HGET").arg(key).arg("tokens").take(),
            Strategy::NaiveWindow
            | Strategy::IncrWindow
            | Strategy::LuaWindow
            | Strategy::MultiWindow => redis::cmd("GET").arg(self.state_key(key, spec)).take(),
            Strategy::LuaLog => redis::cmd("ZCARD").arg(key).take(),
            Strategy::LuaSwc => redis::cmd("HGET").arg(key).arg("cur").take(),
            Strategy::LuaGcra => redis::cmd("GET").arg(key).take(),
            Strategy::Get => redis::cmd("GET").arg(key).take(),
            // Its layout is the user's: the type of its first key says what it holds.
            Strategy::Custom(_) => redis::cmd("TYPE").arg(self.state_key(key, spec)).take(),
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Strategy {
    type Err = String;
    /// A built-in name, or the name of a custom limiter this process has loaded.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(st) = Strategy::ALL.iter().copied().find(|st| st.name() == s) {
            return Ok(st);
        }
        if let Some(name) = CustomName::loaded(s) {
            return Ok(Strategy::Custom(name));
        }
        let names: Vec<_> = Strategy::ALL.iter().map(|st| st.name()).collect();
        Err(format!(
            "unknown strategy `{s}`; valid: {}",
            names.join(", ")
        ))
    }
}

impl Serialize for Strategy {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Strategy {
    /// Parameters accept only the names [`FromStr`] does (a typo is an error listing the valid
    /// ones); CSVs and worker jobs carry custom limiters' names too, which read back as custom.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        match text.parse() {
            Ok(strategy) => Ok(strategy),
            Err(_) if !strict_names() => CustomName::recorded(&text)
                .map(Strategy::Custom)
                .map_err(serde::de::Error::custom),
            Err(e) => Err(serde::de::Error::custom(e)),
        }
    }
}

thread_local! {
    static STRICT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn strict_names() -> bool {
    STRICT.with(|s| s.get())
}

/// Runs `f` (the reading of an experiment's parameters) accepting only built-in strategy names
/// and loaded custom limiters, so a typo is an error rather than a custom limiter of that name.
pub fn with_strict_names<T>(f: impl FnOnce() -> T) -> T {
    let before = STRICT.with(|s| s.replace(true));
    let out = f();
    STRICT.with(|s| s.set(before));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for &s in Strategy::ALL {
            assert_eq!(s.name().parse::<Strategy>(), Ok(s));
        }
        assert!("lua"
            .parse::<Strategy>()
            .unwrap_err()
            .contains("lua-bucket"));
    }

    #[test]
    fn only_watch_needs_a_connection_per_request() {
        let own: Vec<_> = Strategy::ALL
            .iter()
            .filter(|s| s.needs_own_connection())
            .collect();
        assert_eq!(own, [&Strategy::WatchBucket]);
    }
}
