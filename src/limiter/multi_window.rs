//! Fixed window as MULTI INCR PEXPIRE EXEC (INCRBY 1, as redis-rs sends INCR): one round trip,
//! atomic, no script. The count comes back from EXEC and is compared in the client; nothing is
//! decided before the write, so nothing races.
//! PEXPIRE runs every time, as in the setup seed 002 measured.

use super::{unix_ms, wire, Decision, LimitSpec, LimiterError};
use redis::aio::MultiplexedConnection;

/// Replies one decision gets when its commands are pipelined raw: +OK, +QUEUED, +QUEUED, EXEC's.
pub(super) const REPLIES: usize = 4;

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
    Ok(decide(count, spec, now))
}

/// Appends the decision's four commands, byte for byte what [`check`] sends, for the lean client.
pub(super) fn encode(key: &str, spec: &LimitSpec, now: u64, out: &mut Vec<u8>) {
    let window = spec.window_key(key, now);
    // The buffer lives on the stack: no String per decision on this hot path.
    let mut ttl = itoa::Buffer::new();
    let ttl = ttl.format(spec.window_ttl_ms() as i64);
    wire::command(&[b"MULTI"], out);
    wire::command(&[b"INCRBY", window.as_bytes(), b"1"], out);
    wire::command(&[b"PEXPIRE", window.as_bytes(), ttl.as_bytes()], out);
    wire::command(&[b"EXEC"], out);
}

/// The decision a count after INCR gives at `now`.
pub(super) fn decide(count: i64, spec: &LimitSpec, now: u64) -> Decision {
    let limit = spec.capacity as i64;
    let allowed = count <= limit;
    let retry_ms = if allowed {
        0
    } else {
        spec.ms_to_window_end(now) as i64
    };
    Decision::settled(allowed, (limit - count).max(0), retry_ms, 1)
}
