//! Token bucket in one Lua script: Redis runs it without interleaving, so it is exact under any
//! concurrency. Invoked with EVALSHA, falling back to EVAL-and-cache on NOSCRIPT.

use super::{Decision, LimitSpec, LimiterError, Strategy};
use redis::aio::MultiplexedConnection;

const SOURCE: &str = include_str!("lua/token_bucket.lua");

pub(super) fn script() -> redis::Script {
    redis::Script::new(SOURCE)
}

pub(super) async fn check(
    con: &mut MultiplexedConnection,
    script: &redis::Script,
    key: &str,
    spec: &LimitSpec,
) -> Result<Decision, LimiterError> {
    let reply: Vec<i64> = script
        .key(key)
        .arg(spec.capacity)
        .arg(spec.refill_per_sec)
        .arg(1)
        .arg(spec.bucket_ttl_ms())
        .invoke_async(con)
        .await?;
    match reply.as_slice() {
        &[allowed, remaining, retry_ms] => Ok(Decision {
            allowed: allowed == 1,
            remaining,
            retry_ms,
        }),
        other => Err(LimiterError::UnexpectedReply {
            strategy: Strategy::LuaBucket,
            detail: format!("{other:?}"),
        }),
    }
}
