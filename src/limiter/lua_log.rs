//! Sliding log in one Lua script: a sorted set of admitted requests, trimmed to the window, counted,
//! and added to while under the limit. Exact, but its memory grows with the limit (seed 002).
//! `LimitSpec::log` picks the member and the clock, so the timestamp-as-member bug can be measured.

use super::script::LuaScript;
use super::spec::{LogClock, LogMember};
use super::wire::ArgSink;
use super::{unix_ms, Attempt, LimitSpec, Strategy};
use redis::aio::MultiplexedConnection;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub(super) fn script() -> LuaScript {
    LuaScript::new(include_str!("lua/sliding_log.lua"))
}

/// Unique log members: a random prefix per limiter (so worker processes never collide) and a
/// counter shared by its clones (so tasks of one worker never collide).
#[derive(Debug, Clone)]
pub(super) struct LogMembers {
    prefix: u64,
    next: Arc<AtomicU64>,
}

impl LogMembers {
    pub(super) fn new() -> Self {
        // RandomState is seeded from the OS; the pid and the time guard against a weak seed.
        let mut h = RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        h.write_u64(unix_ms());
        LogMembers {
            prefix: h.finish() >> 16,
            next: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The next member: 12 hex digits of prefix, a dash, the counter in hex (short, as a
    /// request id would be, since every byte is paid once per logged request).
    pub(super) fn next(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("{:012x}-{n:x}", self.prefix)
    }

    /// The next member made `bytes` long: the dash and the counter kept whole (so members of one
    /// limiter never collide), the prefix cut or zero-padded before them; 8 bytes hold a prefix
    /// digit and counters up to 16.7 million. The dash keeps a member from reading as an
    /// integer, which a listpack would store in fewer bytes.
    pub(super) fn next_of(&self, bytes: usize) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let counter = format!("-{n:x}");
        let prefix = format!("{:012x}", self.prefix);
        match bytes.saturating_sub(counter.len()) {
            room if room <= prefix.len() => format!("{}{counter}", &prefix[..room]),
            room => format!("{prefix}{}{counter}", "0".repeat(room - prefix.len())),
        }
    }
}

pub(super) async fn check(
    con: &mut MultiplexedConnection,
    script: &LuaScript,
    members: &LogMembers,
    key: &str,
    spec: &LimitSpec,
) -> Attempt {
    args(script.call(), members, key, spec)
        .decide(con, Strategy::LuaLog)
        .await
}

/// KEYS and ARGV of one decision (a fresh member each), for redis-rs's call and the wire alike.
pub(super) fn args<S: ArgSink>(sink: S, members: &LogMembers, key: &str, spec: &LimitSpec) -> S {
    let member_mode = match spec.log.member {
        LogMember::UniqueId => "id",
        LogMember::TimeMs => "ms",
        LogMember::RedisMicros => "us",
    };
    let member = match (spec.log.member, spec.log.member_bytes) {
        (LogMember::UniqueId, None) => members.next(),
        (LogMember::UniqueId, Some(bytes)) => members.next_of(bytes as usize),
        (LogMember::TimeMs | LogMember::RedisMicros, _) => String::new(),
    };
    let clock = match spec.log.clock {
        LogClock::Redis => String::new(),
        LogClock::Caller => unix_ms().to_string(),
    };
    sink.key(key)
        .arg(spec.capacity)
        .arg(spec.window_ms.max(1))
        .arg(member_mode)
        .arg(member)
        .arg(clock)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_unique_across_clones_and_limiters() {
        let a = LogMembers::new();
        let b = a.clone();
        let c = LogMembers::new();
        let all: std::collections::HashSet<String> = (0..100)
            .flat_map(|_| [a.next(), b.next(), c.next()])
            .collect();
        assert_eq!(all.len(), 300);
        assert!(a.next().len() <= 20, "members stay short: {}", a.next());
    }

    #[test]
    fn members_of_a_length_are_that_long_unique_and_never_integers() {
        let a = LogMembers::new();
        for bytes in [8, 17, 25, 40, 60] {
            let all: std::collections::HashSet<String> =
                (0..300).map(|_| a.next_of(bytes)).collect();
            assert_eq!(all.len(), 300, "{bytes}");
            for m in &all {
                assert_eq!(m.len(), bytes, "{m}");
                assert!(m.contains('-') && m.parse::<i64>().is_err(), "{m}");
            }
        }
    }
}
