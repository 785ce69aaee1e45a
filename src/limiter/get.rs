//! Not a limiter: one plain GET, always "allowed". It is the scale reference seed 002 measured
//! decisions against ("a Lua decision costs 2.5 to 3.5 times the Redis CPU of a GET").

use super::{Decision, LimiterError};
use redis::aio::MultiplexedConnection;

pub(super) async fn check(
    con: &mut MultiplexedConnection,
    key: &str,
) -> Result<Decision, LimiterError> {
    // Only the round trip is measured; the value is discarded.
    let _: redis::Value = redis::cmd("GET").arg(key).query_async(con).await?;
    Ok(Decision::settled(true, 0, 0, 1))
}
