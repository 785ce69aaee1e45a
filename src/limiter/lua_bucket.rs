//! Token bucket in one Lua script: Redis runs it without interleaving, so it is exact under any
//! concurrency. Invoked with EVALSHA, falling back to EVAL (which caches it again) on NOSCRIPT.

use super::script::LuaScript;
use super::{Decision, LimitSpec, LimiterError, Strategy};
use redis::aio::MultiplexedConnection;

pub(super) fn script() -> LuaScript {
    LuaScript::new(include_str!("lua/token_bucket.lua"))
}

pub(super) async fn check(
    con: &mut MultiplexedConnection,
    script: &LuaScript,
    key: &str,
    spec: &LimitSpec,
) -> Result<Decision, LimiterError> {
    script
        .call()
        .key(key)
        .arg(spec.capacity)
        .arg(spec.refill_per_sec)
        .arg(1)
        .arg(spec.bucket_ttl_ms())
        .decide(con, Strategy::LuaBucket)
        .await
}
