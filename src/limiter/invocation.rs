//! How a strategy's Lua reaches Redis, separate from the strategy itself: seed 002's three ways
//! (EVAL, EVALSHA, FCALL) and what a client does when Redis has lost the script (NOSCRIPT after a
//! restart, on a replica, after SCRIPT FLUSH), as go-redis, ioredis and redis-rs each do it.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// One way of invoking a script, with its fallback when Redis answers that it has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Invocation {
    /// EVAL with the whole script text on every call: never NOSCRIPT, the most bytes sent.
    Eval,
    /// EVALSHA only: a NOSCRIPT reply is the caller's error.
    Evalsha,
    /// EVALSHA, and on NOSCRIPT the same call as EVAL, which caches the script again (go-redis
    /// `Script.Run`, ioredis `defineCommand`): one failed call and one extra round trip.
    #[default]
    EvalshaEval,
    /// EVALSHA, and on NOSCRIPT SCRIPT LOAD then EVALSHA again (redis-rs `Script::invoke_async`):
    /// two extra round trips.
    EvalshaLoad,
    /// FCALL of the strategy's function in the `ratelab` library (FUNCTION LOAD): functions are
    /// kept in the RDB and AOF and replicated; a missing one is the caller's error.
    Fcall,
    /// FCALL, and on "Function not found" FUNCTION LOAD REPLACE of the library then FCALL again.
    FcallLoad,
}

impl Invocation {
    /// Every invocation, in the order charts and tables show them.
    pub const ALL: &'static [Invocation] = &[
        Invocation::Eval,
        Invocation::Evalsha,
        Invocation::EvalshaEval,
        Invocation::EvalshaLoad,
        Invocation::Fcall,
        Invocation::FcallLoad,
    ];

    /// The name used in parameters and CSVs.
    pub fn name(self) -> &'static str {
        match self {
            Invocation::Eval => "eval",
            Invocation::Evalsha => "evalsha",
            Invocation::EvalshaEval => "evalsha-eval",
            Invocation::EvalshaLoad => "evalsha-load",
            Invocation::Fcall => "fcall",
            Invocation::FcallLoad => "fcall-load",
        }
    }

    /// What the client does when Redis lacks the script or function: `none`, `eval`,
    /// `script-load` or `function-load`.
    pub fn fallback(self) -> &'static str {
        match self {
            Invocation::Eval | Invocation::Evalsha | Invocation::Fcall => "none",
            Invocation::EvalshaEval => "eval",
            Invocation::EvalshaLoad => "script-load",
            Invocation::FcallLoad => "function-load",
        }
    }

    /// Whether it recovers on its own from a missing script or function.
    pub fn has_fallback(self) -> bool {
        self.fallback() != "none"
    }

    /// The command of its first call, as INFO commandstats names it.
    pub fn command(self) -> &'static str {
        match self {
            Invocation::Eval => "eval",
            Invocation::Evalsha | Invocation::EvalshaEval | Invocation::EvalshaLoad => "evalsha",
            Invocation::Fcall | Invocation::FcallLoad => "fcall",
        }
    }

    /// Whether it calls a library function rather than a cached script.
    pub fn uses_function(self) -> bool {
        matches!(self, Invocation::Fcall | Invocation::FcallLoad)
    }
}

impl fmt::Display for Invocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Invocation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        (Invocation::ALL.iter().copied())
            .find(|i| i.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Invocation::ALL.iter().map(|i| i.name()).collect();
                format!("unknown invocation `{s}`; valid: {}", names.join(", "))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_match_serde() {
        for &i in Invocation::ALL {
            assert_eq!(i.name().parse::<Invocation>(), Ok(i));
            assert_eq!(serde_json::to_string(&i).unwrap(), format!("\"{i}\""));
        }
        assert!("sha"
            .parse::<Invocation>()
            .unwrap_err()
            .contains("evalsha-eval"));
        assert_eq!(Invocation::default(), Invocation::EvalshaEval);
    }

    #[test]
    fn only_the_fallback_ways_recover() {
        let recovering: Vec<_> = (Invocation::ALL.iter())
            .filter(|i| i.has_fallback())
            .map(|i| i.name())
            .collect();
        assert_eq!(recovering, ["evalsha-eval", "evalsha-load", "fcall-load"]);
    }
}
