//! tsmember's CSV schema.

use crate::limiter::{LogClock, LogMember};
use serde::{Deserialize, Serialize};

/// One run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TsmemberRow {
    pub member: LogMember,
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
    pub max_late_us: f64,
    pub late_starts: u64,
    /// CPU seconds the open-loop generator used: near duration_s it was saturated, far below
    /// with late starts it was starved by other processes (0 flat out).
    pub generator_cpu_s: f64,
    /// Requests per second: the arrival rate achieved (open loop) or the throughput (flat out).
    pub requests_per_s: f64,
}
