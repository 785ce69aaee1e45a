//! Sliding-window counter in one Lua script with Redis TIME: the previous fixed window's count,
//! weighted by how much of it the sliding window still covers, plus the current one's. Seed 002's
//! answer to the sliding log's memory: two integers per client whatever the limit.

use super::script::LuaScript;
use super::wire::ArgSink;
use super::{Attempt, LimitSpec, Strategy};
use redis::aio::MultiplexedConnection;

pub(super) fn script() -> LuaScript {
    LuaScript::new(include_str!("lua/sliding_window_counter.lua"))
}

pub(super) async fn check(
    con: &mut MultiplexedConnection,
    script: &LuaScript,
    key: &str,
    spec: &LimitSpec,
) -> Attempt {
    args(script.call(), key, spec)
        .decide(con, Strategy::LuaSwc)
        .await
}

/// KEYS and ARGV of one decision, for redis-rs's call and for the wire alike.
pub(super) fn args<S: ArgSink>(sink: S, key: &str, spec: &LimitSpec) -> S {
    sink.key(key)
        .arg(spec.capacity)
        .arg(spec.window_ms.max(1))
        .arg(spec.window_origin_ms)
}
