//! calibrate's CSV schema.

use crate::record::CsvFile;
use serde::{Deserialize, Serialize};

/// `calibrate.csv`: One row per run of one tool.
pub const CALIBRATE: CsvFile<CalibrateRow> = CsvFile::new("calibrate.csv");

/// One run of one tool.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CalibrateRow {
    /// What both tools send: `GET` (a plain GET) or `EVALSHA` (the lua-bucket script).
    pub command: String,
    /// `ratelab` (its lean raw-RESP client), `redis-rs` (ratelab's redis-rs path, which the
    /// experiments' one-at-a-time checks take; depth 1 only) or `redis-benchmark`.
    pub tool: String,
    pub pair: u32,
    /// Requests in flight per connection (redis-benchmark's `-P`).
    pub depth: usize,
    /// Commands the tool completed in the run.
    pub ops: u64,
    pub ops_per_s: f64,
    pub client_cpu_s: f64,
    /// Client CPU per op, µs: the tool's processes' user + sys over its ops.
    pub client_cpu_us_per_op: f64,
    pub duration_s: f64,
    pub clients: usize,
    pub keys: u64,
    /// Redis main-thread CPU (INFO used_cpu_*_main_thread) per command completed.
    pub redis_cpu_us_per_op: f64,
    pub redis_busy_pct: f64,
    /// Redis's main thread runnable but off its CPU (run queue and steal), percent of the wall
    /// time; empty for a server the user named (its /proc is not ours to read).
    #[serde(default)]
    pub redis_waiting_for_cpu_pct: Option<f64>,
    /// Redis's main thread neither on a CPU nor waiting for one: idle, waiting for requests
    /// (100 - busy - waiting for a CPU); empty for a server the user named.
    #[serde(default)]
    pub redis_idle_pct: Option<f64>,
    /// The client's CPU (user + sys, start-up included) as a percentage of the run's wall time:
    /// near 100, one core's worth, the client was the limit; well under it while Redis idled, the
    /// client waited (a stall, its scheduling). Empty in runs before it was measured.
    #[serde(default)]
    pub client_cpu_pct: Option<f64>,
    /// Steal on the harness's CPUs (the client's) during the run, percent of its wall time: time
    /// the hypervisor gave someone else. Empty when the harness is not pinned and in runs before it
    /// was measured.
    #[serde(default)]
    pub harness_steal_pct: Option<f64>,
}
