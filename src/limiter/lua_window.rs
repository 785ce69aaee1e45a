//! Fixed window in one Lua script: INCR, PEXPIRE when the counter is new, compare. The same logic
//! as multi-window, so the pair measures what a script costs over MULTI/EXEC (seed 002: 54%).

use super::script::LuaScript;
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
    let now = unix_ms();
    script
        .call()
        .key(spec.window_key(key, now))
        .arg(spec.capacity)
        .arg(spec.window_ttl_ms())
        .arg(spec.ms_to_window_end(now))
        .decide(con, Strategy::LuaWindow)
        .await
}
