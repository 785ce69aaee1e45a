//! Fixed window as MULTI INCR PEXPIRE EXEC: one round trip, atomic, no script. The count comes back
//! from EXEC and is compared in the client; nothing is decided before the write, so nothing races.
//! PEXPIRE runs every time, as in the setup seed 002 measured.

use super::{unix_ms, Decision, LimitSpec, LimiterError};
use redis::aio::MultiplexedConnection;

pub(super) async fn check(
    con: &mut MultiplexedConnection,
    key: &str,
    spec: &LimitSpec,
) -> Result<Decision, LimiterError> {
    let now = unix_ms();
    let window = spec.window_key(key, now);
    // Without WATCH, EXEC cannot abort, so a nil reply would be a parse error, not a silent pass.
    let (count,): (i64,) = redis::pipe()
        .atomic()
        .incr(&window, 1)
        .pexpire(&window, spec.window_ttl_ms() as i64)
        .ignore()
        .query_async(con)
        .await?;
    let limit = spec.capacity as i64;
    let allowed = count <= limit;
    let retry_ms = if allowed {
        0
    } else {
        spec.ms_to_window_end(now) as i64
    };
    Ok(Decision::settled(
        allowed,
        (limit - count).max(0),
        retry_ms,
        1,
    ))
}
