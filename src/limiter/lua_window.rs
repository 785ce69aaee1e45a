//! Fixed window in one Lua script: INCR, PEXPIRE when the counter is new, compare. The same logic
//! as multi-window, so the pair measures what a script costs over MULTI/EXEC (seed 002: 54%).

use super::script::LuaScript;
use super::wire::ArgSink;
use super::{unix_ms, Attempt, LimitSpec, Strategy};
use redis::aio::ConnectionLike;

pub(super) fn script() -> LuaScript {
    LuaScript::new(include_str!("lua/fixed_window.lua"))
}

pub(super) async fn check(
    con: &mut impl ConnectionLike,
    script: &LuaScript,
    key: &str,
    spec: &LimitSpec,
) -> Attempt {
    args(script.call(), key, spec, unix_ms())
        .decide(con, Strategy::LuaWindow)
        .await
}

/// KEYS and ARGV of one decision at `now` (ms), for redis-rs's call and for the wire alike.
pub(super) fn args<S: ArgSink>(sink: S, key: &str, spec: &LimitSpec, now: u64) -> S {
    sink.key(spec.window_key(key, now))
        .arg(spec.capacity)
        .arg(spec.window_ttl_ms())
        .arg(spec.ms_to_window_end(now))
}
