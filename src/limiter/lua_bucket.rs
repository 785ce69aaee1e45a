//! Token bucket in one Lua script: Redis runs it without interleaving, so it is exact under any
//! concurrency. Invoked with EVALSHA, falling back to EVAL (which caches it again) on NOSCRIPT,
//! unless the limiter is given another [`Invocation`](super::Invocation); the same text is the
//! library's `token_bucket` function, for FCALL.

use super::library::BUCKET_FUNCTION;
use super::script::LuaScript;
use super::wire::ArgSink;
use super::{Attempt, LimitSpec, Strategy};
use redis::aio::ConnectionLike;

pub(super) fn script() -> LuaScript {
    LuaScript::new(include_str!("lua/token_bucket.lua")).with_function(BUCKET_FUNCTION)
}

pub(super) async fn check(
    con: &mut impl ConnectionLike,
    script: &LuaScript,
    key: &str,
    spec: &LimitSpec,
) -> Attempt {
    args(script.call(), key, spec)
        .decide(con, Strategy::LuaBucket)
        .await
}

/// KEYS and ARGV of one decision, for redis-rs's call and for the wire alike.
pub(super) fn args<S: ArgSink>(sink: S, key: &str, spec: &LimitSpec) -> S {
    sink.key(key)
        .arg(spec.capacity)
        .arg(spec.refill_per_sec)
        .arg(1)
        .arg(spec.bucket_ttl_ms())
}
