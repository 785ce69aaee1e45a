//! Seed 000's naive token bucket: read the count, decide in the client, write the count back.
//! Two requests in flight on one connection read the same count and spend one token between them.

use super::{Decision, LimitSpec, LimiterError};
use redis::aio::MultiplexedConnection;

pub(super) async fn check(
    con: &mut MultiplexedConnection,
    key: &str,
    spec: &LimitSpec,
) -> Result<Decision, LimiterError> {
    let (tokens,): (Option<i64>,) = redis::cmd("HMGET")
        .arg(key)
        .arg("tokens")
        .query_async(con)
        .await?;
    let tokens = tokens.unwrap_or(spec.capacity as i64);
    if tokens < 1 {
        return Ok(Decision::settled(false, tokens, -1, 1));
    }
    redis::cmd("HSET")
        .arg(key)
        .arg("tokens")
        .arg(tokens - 1)
        .query_async::<()>(con)
        .await?;
    Ok(Decision::settled(true, tokens - 1, 0, 2))
}
