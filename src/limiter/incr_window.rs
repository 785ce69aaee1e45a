//! Fixed window done safely without a script: INCR returns the post-increment count atomically,
//! so comparing that value is one indivisible read-and-write.

use super::{unix_ms, Decision, LimitSpec, LimiterError};
use redis::aio::MultiplexedConnection;

pub(super) async fn check(
    con: &mut MultiplexedConnection,
    key: &str,
    spec: &LimitSpec,
) -> Result<Decision, LimiterError> {
    let now = unix_ms();
    let window = spec.window_key(key, now);
    let count: i64 = redis::cmd("INCR").arg(&window).query_async(con).await?;
    let mut calls = 1;
    if count == 1 {
        calls += 1;
        // Only the request that created the counter sets its expiry.
        redis::cmd("EXPIRE")
            .arg(&window)
            .arg(spec.window_ttl_secs())
            .query_async::<()>(con)
            .await?;
    }
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
        calls,
    ))
}
