//! The strategy names: what the command line, parameters and CSVs call each limiter.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A strategy for deciding whether one request may pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// HMGET tokens, decide in the client, HSET tokens-1 (seed 000's naive bucket).
    NaiveBucket,
    /// Token bucket in one Lua script with Redis TIME.
    LuaBucket,
    /// Fixed window: GET, decide in the client, MULTI INCR EXPIRE (seed 001's old middleware).
    NaiveWindow,
    /// Fixed window: INCR, compare the returned count, EXPIRE when it is 1.
    IncrWindow,
}

impl Strategy {
    /// Every strategy, in the order charts and tables show them.
    pub const ALL: &'static [Strategy] = &[
        Strategy::NaiveBucket,
        Strategy::LuaBucket,
        Strategy::NaiveWindow,
        Strategy::IncrWindow,
    ];

    /// The name used on the command line, in parameters and in CSVs.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::NaiveBucket => "naive-bucket",
            Strategy::LuaBucket => "lua-bucket",
            Strategy::NaiveWindow => "naive-window",
            Strategy::IncrWindow => "incr-window",
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
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Strategy::ALL
            .iter()
            .copied()
            .find(|st| st.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Strategy::ALL.iter().map(|st| st.name()).collect();
                format!("unknown strategy `{s}`; valid: {}", names.join(", "))
            })
    }
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
}
