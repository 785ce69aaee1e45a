//! The limit a strategy enforces, and the keys and expiries derived from it.

use serde::{Deserialize, Serialize};

/// The limit a strategy enforces.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LimitSpec {
    /// The limit: bucket capacity, GCRA burst, or requests per window (fixed, sliding, log).
    pub capacity: u64,
    /// Bucket refill in tokens per second (0: never refills).
    pub refill_per_sec: f64,
    /// Window length in ms: fixed and sliding windows, the sliding log, GCRA's period.
    pub window_ms: u64,
    /// Start of window 0 in Unix ms for fixed windows and the sliding-window counter (0: windows
    /// aligned to the epoch, as in production).
    pub window_origin_ms: u64,
    /// Expiry of a bucket that never refills, in ms.
    pub idle_ttl_ms: u64,
    /// How the sliding log names and times its entries (absent in older JSON: the safe default).
    #[serde(default)]
    pub log: LogVariant,
    /// Retries of an aborted WATCH transaction before refusing (watch-bucket; seed 002's budget, 10).
    #[serde(default = "default_watch_retries")]
    pub watch_retries: u32,
}

fn default_watch_retries() -> u32 {
    10
}

impl Default for LimitSpec {
    /// 100 per second-long window, no refill, aligned windows, seed 002's WATCH budget.
    fn default() -> Self {
        LimitSpec {
            capacity: 100,
            refill_per_sec: 0.0,
            window_ms: 1000,
            window_origin_ms: 0,
            idle_ttl_ms: 600_000,
            log: LogVariant::default(),
            watch_retries: default_watch_retries(),
        }
    }
}

/// The sliding log's member and clock, which seed 002's timestamp-as-member experiment varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LogVariant {
    /// What each entry's member is.
    #[serde(default)]
    pub member: LogMember,
    /// Whose clock scores the entries.
    #[serde(default)]
    pub clock: LogClock,
    /// Unique members made exactly this many bytes long (memory's member-length sweep: a
    /// listpack stores each member's bytes); `None`: ratelab's short id (~17 bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member_bytes: Option<u32>,
}

/// The member of a sliding-log entry: only a unique one counts every request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LogMember {
    /// A per-request id from the caller: exact whatever the timing.
    #[default]
    UniqueId,
    /// The time in ms (`ZADD key now now`): requests in the same ms share an entry, the bug.
    TimeMs,
    /// Redis's time in µs: exact only because no two scripts run in the same µs.
    RedisMicros,
}

/// The clock that scores sliding-log entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LogClock {
    /// Redis's TIME, read inside the script: one clock for every caller.
    #[default]
    Redis,
    /// The caller's clock, sent in ARGV, as clients without TIME in the script do.
    Caller,
}

impl LimitSpec {
    /// Expiry for a bucket: once idle this long it is full again and carries no information.
    pub fn bucket_ttl_ms(&self) -> u64 {
        if self.refill_per_sec > 0.0 {
            (self.capacity as f64 / self.refill_per_sec * 1000.0).ceil() as u64 + 1000
        } else {
            self.idle_ttl_ms
        }
    }

    /// Expiry of a window counter: two windows, so a late write never outlives its window by much.
    pub fn window_ttl_secs(&self) -> u64 {
        (2 * self.window_ms).div_ceil(1000).max(1)
    }

    /// Expiry of a window counter in ms: two windows, as `window_ttl_secs` but without rounding.
    pub fn window_ttl_ms(&self) -> u64 {
        (2 * self.window_ms).max(1)
    }

    /// Time left in the window that contains `now_ms`: when a denied request may try again.
    pub fn ms_to_window_end(&self, now_ms: u64) -> u64 {
        let window = self.window_ms.max(1);
        window - now_ms.saturating_sub(self.window_origin_ms) % window
    }

    /// The key of the window that contains `now_ms` (caller's clock, as the seeds' clients did).
    pub fn window_key(&self, key: &str, now_ms: u64) -> String {
        let index = now_ms.saturating_sub(self.window_origin_ms) / self.window_ms.max(1);
        format!("{key}:w{index}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> LimitSpec {
        LimitSpec {
            capacity: 100,
            refill_per_sec: 0.0,
            window_ms: 1000,
            window_origin_ms: 0,
            idle_ttl_ms: 60_000,
            log: LogVariant::default(),
            watch_retries: 10,
        }
    }

    #[test]
    fn older_json_without_the_new_fields_gets_the_safe_defaults() {
        let json = r#"{"capacity":5,"refill_per_sec":1.0,"window_ms":1000,"window_origin_ms":0,"idle_ttl_ms":9}"#;
        let s: LimitSpec = serde_json::from_str(json).unwrap();
        assert_eq!(s.log.member, LogMember::UniqueId);
        assert_eq!(s.log.clock, LogClock::Redis);
        assert_eq!(s.watch_retries, 10);
        let json = r#"{"capacity":5,"refill_per_sec":1.0,"window_ms":1000,"window_origin_ms":0,
            "idle_ttl_ms":9,"log":{"member":"time-ms","clock":"caller"}}"#;
        let s: LimitSpec = serde_json::from_str(json).unwrap();
        assert_eq!(
            (s.log.member, s.log.clock),
            (LogMember::TimeMs, LogClock::Caller)
        );
        let back: LimitSpec = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn bucket_ttl_is_time_to_refill_plus_slack() {
        let mut s = spec();
        assert_eq!(s.bucket_ttl_ms(), 60_000);
        s.refill_per_sec = 100.0;
        assert_eq!(s.bucket_ttl_ms(), 2000);
        s.refill_per_sec = 3.0;
        assert_eq!(s.bucket_ttl_ms(), 33_334 + 1000);
    }

    #[test]
    fn window_key_changes_at_the_boundary() {
        let mut s = spec();
        assert_eq!(s.window_key("k", 999), "k:w0");
        assert_eq!(s.window_key("k", 1000), "k:w1");
        s.window_origin_ms = 500;
        assert_eq!(s.window_key("k", 1499), "k:w0");
        assert_eq!(s.window_key("k", 100), "k:w0");
        assert_eq!(s.window_ttl_secs(), 2);
        assert_eq!(s.window_ttl_ms(), 2000);
    }

    #[test]
    fn window_end_is_the_next_boundary() {
        let mut s = spec();
        assert_eq!(s.ms_to_window_end(0), 1000);
        assert_eq!(s.ms_to_window_end(999), 1);
        assert_eq!(s.ms_to_window_end(1000), 1000);
        s.window_origin_ms = 500;
        assert_eq!(s.ms_to_window_end(1400), 100);
    }
}
