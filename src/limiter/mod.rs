//! Rate-limiter strategies: the naive client-side ones the seeds show breaking, the atomic ones
//! that fix them (Lua scripts, MULTI/EXEC, optimistic WATCH), and a plain GET to measure them
//! against. One file per strategy; Lua in `lua/*.lua`, embedded with `include_str!`.

mod get;
mod incr_window;
mod lua_bucket;
mod lua_gcra;
mod lua_log;
mod lua_swc;
mod lua_window;
mod multi_window;
mod naive_bucket;
mod naive_window;
mod script;
mod spec;
mod strategy;
mod watch_bucket;

pub use spec::{LimitSpec, LogClock, LogMember, LogVariant};
pub use strategy::Strategy;

use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};
use std::time::{SystemTime, UNIX_EPOCH};

/// The answer to one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// Whether the request may pass.
    pub allowed: bool,
    /// What the strategy believes is left (tokens or requests in the window).
    pub remaining: i64,
    /// When to retry, in ms (-1: never, 0: not applicable).
    pub retry_ms: i64,
    /// Round trips to Redis this decision took, for "Redis calls per decision".
    #[serde(default)]
    pub redis_calls: u32,
    /// Optimistic transactions that aborted and were retried (WATCH strategies only).
    #[serde(default)]
    pub retries: u32,
    /// Refused because the WATCH retry budget ran out, not because the limit was reached.
    #[serde(default)]
    pub aborted: bool,
}

impl Decision {
    /// A decision reached without optimistic retries, the case of every non-WATCH strategy.
    pub(crate) fn settled(allowed: bool, remaining: i64, retry_ms: i64, redis_calls: u32) -> Self {
        Decision {
            allowed,
            remaining,
            retry_ms,
            redis_calls,
            retries: 0,
            aborted: false,
        }
    }
}

/// What can go wrong during a check.
#[derive(Debug, thiserror::Error)]
pub enum LimiterError {
    /// Redis refused a command or the connection failed: no decision was made.
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// A reply had the wrong shape: a bug in a script or in its caller, never silently allowed.
    #[error("unexpected reply from {strategy}: {detail}")]
    UnexpectedReply { strategy: Strategy, detail: String },
}

/// A strategy bound to its limit, ready to check keys; shared by a worker's in-flight tasks.
#[derive(Debug, Clone)]
pub struct Limiter {
    spec: LimitSpec,
    prepared: Prepared,
}

/// A strategy with whatever it needs at check time (its script, for the Lua ones).
#[derive(Debug, Clone)]
enum Prepared {
    NaiveBucket,
    LuaBucket(script::LuaScript),
    WatchBucket,
    NaiveWindow,
    IncrWindow,
    LuaWindow(script::LuaScript),
    MultiWindow,
    LuaLog(script::LuaScript, lua_log::LogMembers),
    LuaSwc(script::LuaScript),
    LuaGcra(script::LuaScript),
    Get,
}

impl Limiter {
    /// Binds a strategy to a limit (and prepares its script, if it has one).
    pub fn new(strategy: Strategy, spec: LimitSpec) -> Self {
        let prepared = match strategy {
            Strategy::NaiveBucket => Prepared::NaiveBucket,
            Strategy::LuaBucket => Prepared::LuaBucket(lua_bucket::script()),
            Strategy::WatchBucket => Prepared::WatchBucket,
            Strategy::NaiveWindow => Prepared::NaiveWindow,
            Strategy::IncrWindow => Prepared::IncrWindow,
            Strategy::LuaWindow => Prepared::LuaWindow(lua_window::script()),
            Strategy::MultiWindow => Prepared::MultiWindow,
            Strategy::LuaLog => Prepared::LuaLog(lua_log::script(), lua_log::LogMembers::new()),
            Strategy::LuaSwc => Prepared::LuaSwc(lua_swc::script()),
            Strategy::LuaGcra => Prepared::LuaGcra(lua_gcra::script()),
            Strategy::Get => Prepared::Get,
        };
        Limiter { spec, prepared }
    }

    /// The strategy this limiter runs.
    pub fn strategy(&self) -> Strategy {
        match self.prepared {
            Prepared::NaiveBucket => Strategy::NaiveBucket,
            Prepared::LuaBucket(_) => Strategy::LuaBucket,
            Prepared::WatchBucket => Strategy::WatchBucket,
            Prepared::NaiveWindow => Strategy::NaiveWindow,
            Prepared::IncrWindow => Strategy::IncrWindow,
            Prepared::LuaWindow(_) => Strategy::LuaWindow,
            Prepared::MultiWindow => Strategy::MultiWindow,
            Prepared::LuaLog(..) => Strategy::LuaLog,
            Prepared::LuaSwc(_) => Strategy::LuaSwc,
            Prepared::LuaGcra(_) => Strategy::LuaGcra,
            Prepared::Get => Strategy::Get,
        }
    }

    /// The limit it enforces.
    pub fn spec(&self) -> &LimitSpec {
        &self.spec
    }

    /// The Lua source and SHA-1 of its script, if it has one: for redis-benchmark, which calls
    /// EVALSHA itself in the calibration.
    pub fn script(&self) -> Option<(&'static str, &str)> {
        match &self.prepared {
            Prepared::LuaBucket(s)
            | Prepared::LuaWindow(s)
            | Prepared::LuaLog(s, _)
            | Prepared::LuaSwc(s)
            | Prepared::LuaGcra(s) => Some((s.source(), s.hash())),
            _ => None,
        }
    }

    /// Decides one request against `key`. In-flight checks may share `con` (it multiplexes),
    /// unless `Strategy::needs_own_connection`: then each needs a connection of its own.
    pub async fn check(
        &self,
        con: &mut MultiplexedConnection,
        key: &str,
    ) -> Result<Decision, LimiterError> {
        match &self.prepared {
            Prepared::NaiveBucket => naive_bucket::check(con, key, &self.spec).await,
            Prepared::LuaBucket(script) => lua_bucket::check(con, script, key, &self.spec).await,
            Prepared::WatchBucket => watch_bucket::check(con, key, &self.spec).await,
            Prepared::NaiveWindow => naive_window::check(con, key, &self.spec).await,
            Prepared::IncrWindow => incr_window::check(con, key, &self.spec).await,
            Prepared::LuaWindow(script) => lua_window::check(con, script, key, &self.spec).await,
            Prepared::MultiWindow => multi_window::check(con, key, &self.spec).await,
            Prepared::LuaLog(script, members) => {
                lua_log::check(con, script, members, key, &self.spec).await
            }
            Prepared::LuaSwc(script) => lua_swc::check(con, script, key, &self.spec).await,
            Prepared::LuaGcra(script) => lua_gcra::check(con, script, key, &self.spec).await,
            Prepared::Get => get::check(con, key).await,
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
