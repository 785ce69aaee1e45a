//! Seed 001's old middleware: GET the window's counter, decide in the client, then MULTI INCR
//! EXPIRE. The MULTI makes the write atomic, but the read and the decision stay outside it.

use super::{unix_ms, Decision, LimitSpec, LimiterError};
use redis::aio::MultiplexedConnection;

pub(super) async fn check(
    con: &mut MultiplexedConnection,
    key: &str,
    spec: &LimitSpec,
) -> Result<Decision, LimiterError> {
    let now = unix_ms();
    let window = spec.window_key(key, now);
    let used: Option<i64> = redis::cmd("GET").arg(&window).query_async(con).await?;
    let used = used.unwrap_or(0);
    let limit = spec.capacity as i64;
    if used >= limit {
        let retry_ms = spec.ms_to_window_end(now) as i64;
        return Ok(Decision::settled(false, 0, retry_ms, 1));
    }
    redis::pipe()
        .atomic()
        .incr(&window, 1)
        .ignore()
        .expire(&window, spec.window_ttl_secs() as i64)
        .ignore()
        .query_async::<()>(con)
        .await?;
    Ok(Decision::settled(true, limit - used - 1, 0, 2))
}
