//! tsmember's CSV schema.

use super::runs::Failed;
use crate::limiter::{LogClock, LogMember, Strategy};
use crate::record::CsvFile;
use serde::{Deserialize, Serialize};

/// `tsmember.csv`: One row per run.
pub const TSMEMBER: CsvFile<TsmemberRow> = CsvFile::new("tsmember.csv");

/// `tsmember_custom.csv`: One row per run of a custom limiter.
pub const CUSTOM: CsvFile<CustomRow> = CsvFile::new("tsmember_custom.csv");

/// One run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TsmemberRow {
    /// What the sliding log stores as each entry's member: `unique-id` (per request), `time-ms`
    /// (the time in ms: requests in the same ms share an entry) or `redis-micros` (Redis's µs).
    pub member: LogMember,
    /// Whose clock scores the entries: `redis` (TIME in the script) or `caller` (passed in).
    pub clock: LogClock,
    /// Arrival rate in requests/s, or `flat-out` for the closed loop.
    pub rate: String,
    /// Requests per arrival instant: 1 is Poisson; more arrive in batches at the same rate (0 flat
    /// out).
    pub batch: u32,
    pub trial: u32,
    pub duration_s: f64,
    pub offered: u64,
    pub admitted: u64,
    pub denied: u64,
    pub limit: u64,
    /// admitted / limit: 1 for an exact log, above 1 when colliding members let more through.
    pub admitted_per_limit: f64,
    /// Entries in the log afterwards: fewer than `admitted` when members collided.
    pub log_entries: u64,
    /// Latency percentiles, µs: from the intended start (open loop), from the send (flat out).
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// How late starts were against the schedule, µs (99th percentile and latest), and starts
    /// later than 1 ms (open loop only).
    pub p99_late_us: f64,
    /// The latest start against the schedule.
    pub max_late_us: f64,
    /// Starts later than 1 ms against the schedule.
    pub late_starts: u64,
    /// CPU seconds the open-loop generator used: near duration_s it was saturated, far below
    /// with late starts it was starved by other processes (0 flat out).
    pub generator_cpu_s: f64,
    /// Requests per second: the arrival rate achieved (open loop) or the throughput (flat out).
    pub requests_per_s: f64,
}

/// One run of a custom limiter (`--limiter`) on the same schedule as the built-in variants.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CustomRow {
    /// The manifest's name.
    pub strategy: Strategy,
    /// Whether its manifest hands it the caller's clock (`{now_ms}` and the like).
    pub caller_clock: bool,
    /// Arrival rate in requests/s, or `flat-out` for the closed loop.
    pub rate: String,
    pub trial: u32,
    pub duration_s: f64,
    pub offered: u64,
    pub admitted: u64,
    pub denied: u64,
    /// Checks a limiter process's library answered with its own error (its client timed out or
    /// lost the connection): no decision, the library not keeping the offered rate.
    pub failed: u64,
    /// The first failed check's error, or empty.
    pub first_failure: String,
    pub limit: u64,
    /// admitted / limit.
    pub admitted_per_limit: f64,
    /// The most an exact limiter of its algorithm could admit in the run's span from a fresh key.
    pub ideal: f64,
    pub p99_us: f64,
    /// The latest start against the schedule.
    pub max_late_us: f64,
    /// Requests per second: the arrival rate achieved (open loop) or the throughput (flat out).
    pub requests_per_s: f64,
}

impl CustomRow {
    /// The custom limiter's row from the row its run would have as a built-in variant, and the
    /// checks its library failed.
    pub(super) fn of(
        strategy: Strategy,
        caller_clock: bool,
        ideal: f64,
        r: &TsmemberRow,
        failed: Failed,
    ) -> Self {
        CustomRow {
            strategy,
            caller_clock,
            rate: r.rate.clone(),
            trial: r.trial,
            duration_s: r.duration_s,
            offered: r.offered,
            admitted: r.admitted,
            denied: r.denied,
            failed: failed.count,
            first_failure: failed.first,
            limit: r.limit,
            admitted_per_limit: r.admitted_per_limit,
            ideal,
            p99_us: r.p99_us,
            max_late_us: r.max_late_us,
            requests_per_s: r.requests_per_s,
        }
    }
}
