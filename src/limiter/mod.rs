//! Rate-limiter strategies: the naive client-side ones the seeds show breaking, and the atomic ones
//! that fix them. One file per strategy; Lua in `lua/*.lua`, embedded with `include_str!`.

mod incr_window;
mod lua_bucket;
mod naive_bucket;
mod naive_window;

use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

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

/// The limit a strategy enforces.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LimitSpec {
    /// Bucket capacity, or requests per window.
    pub capacity: u64,
    /// Bucket refill in tokens per second (0: never refills).
    pub refill_per_sec: f64,
    /// Fixed-window length in ms.
    pub window_ms: u64,
    /// Start of window 0 in Unix ms (0: windows aligned to the epoch, as in production).
    pub window_origin_ms: u64,
    /// Expiry of a bucket that never refills, in ms.
    pub idle_ttl_ms: u64,
}

impl LimitSpec {
    /// Expiry for a bucket: once idle this long it is full again and carries no information.
    pub fn bucket_ttl_ms(&self) -> u64 {
        if self.refill_per_sec > 0.0 {
            (self.capacity as f64 / self.refill_per_sec * 1000.0).ceil() as u64 + 1000
        } else {
            self.idle_ttl_ms
        }
    }

    /// Expiry of a window counter: two windows, so a late write never outlives its window by much.
    pub fn window_ttl_secs(&self) -> u64 {
        (2 * self.window_ms).div_ceil(1000).max(1)
    }

    /// The key of the window that contains `now_ms` (caller's clock, as the seeds' clients did).
    pub fn window_key(&self, key: &str, now_ms: u64) -> String {
        let index = now_ms.saturating_sub(self.window_origin_ms) / self.window_ms.max(1);
        format!("{key}:w{index}")
    }
}

/// The answer to one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// Whether the request may pass.
    pub allowed: bool,
    /// What the strategy believes is left (tokens or requests in the window).
    pub remaining: i64,
    /// When to retry, in ms (-1: never, 0: not applicable).
    pub retry_ms: i64,
}

/// What can go wrong during a check.
#[derive(Debug, thiserror::Error)]
pub enum LimiterError {
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("unexpected reply from {strategy}: {detail}")]
    UnexpectedReply { strategy: Strategy, detail: String },
}

/// A strategy bound to its limit, ready to check keys on any connection.
#[derive(Debug, Clone)]
pub struct Limiter {
    spec: LimitSpec,
    prepared: Prepared,
}

/// A strategy with whatever it needs at check time (its script, for the Lua ones).
#[derive(Debug, Clone)]
enum Prepared {
    NaiveBucket,
    LuaBucket(redis::Script),
    NaiveWindow,
    IncrWindow,
}

impl Limiter {
    /// Binds a strategy to a limit (and prepares its script, if it has one).
    pub fn new(strategy: Strategy, spec: LimitSpec) -> Self {
        let prepared = match strategy {
            Strategy::NaiveBucket => Prepared::NaiveBucket,
            Strategy::LuaBucket => Prepared::LuaBucket(lua_bucket::script()),
            Strategy::NaiveWindow => Prepared::NaiveWindow,
            Strategy::IncrWindow => Prepared::IncrWindow,
        };
        Limiter { spec, prepared }
    }

    /// The strategy this limiter runs.
    pub fn strategy(&self) -> Strategy {
        match self.prepared {
            Prepared::NaiveBucket => Strategy::NaiveBucket,
            Prepared::LuaBucket(_) => Strategy::LuaBucket,
            Prepared::NaiveWindow => Strategy::NaiveWindow,
            Prepared::IncrWindow => Strategy::IncrWindow,
        }
    }

    /// The limit it enforces.
    pub fn spec(&self) -> &LimitSpec {
        &self.spec
    }

    /// Decides one request against `key`. In-flight checks may share `con` (it multiplexes).
    pub async fn check(
        &self,
        con: &mut MultiplexedConnection,
        key: &str,
    ) -> Result<Decision, LimiterError> {
        match &self.prepared {
            Prepared::NaiveBucket => naive_bucket::check(con, key, &self.spec).await,
            Prepared::LuaBucket(script) => lua_bucket::check(con, script, key, &self.spec).await,
            Prepared::NaiveWindow => naive_window::check(con, key, &self.spec).await,
            Prepared::IncrWindow => incr_window::check(con, key, &self.spec).await,
        }
    }
}

/// Milliseconds since the Unix epoch on this machine's clock.
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

// TEMP until the limiters branch lands (it defines this inside `impl Strategy`).
impl Strategy {
    /// Whether each in-flight request needs a connection of its own (WATCH state is per connection).
    pub fn needs_own_connection(self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> LimitSpec {
        LimitSpec {
            capacity: 100,
            refill_per_sec: 0.0,
            window_ms: 1000,
            window_origin_ms: 0,
            idle_ttl_ms: 60_000,
        }
    }

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
    fn bucket_ttl_is_time_to_refill_plus_slack() {
        let mut s = spec();
        assert_eq!(s.bucket_ttl_ms(), 60_000);
        s.refill_per_sec = 100.0;
        assert_eq!(s.bucket_ttl_ms(), 2000);
        s.refill_per_sec = 3.0;
        assert_eq!(s.bucket_ttl_ms(), 33_334 + 1000);
    }

    #[test]
    fn window_key_changes_at_the_boundary() {
        let mut s = spec();
        assert_eq!(s.window_key("k", 999), "k:w0");
        assert_eq!(s.window_key("k", 1000), "k:w1");
        s.window_origin_ms = 500;
        assert_eq!(s.window_key("k", 1499), "k:w0");
        assert_eq!(s.window_key("k", 100), "k:w0");
        assert_eq!(s.window_ttl_secs(), 2);
    }
}
