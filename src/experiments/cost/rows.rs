//! cost's CSV schema.

use crate::limiter::Strategy;
use crate::record::CsvFile;
use serde::{Deserialize, Serialize};

/// `cost.csv`: One row per measured run.
pub const COST: CsvFile<CostRow> = CsvFile::new("cost.csv");

/// One measured run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CostRow {
    pub strategy: Strategy,
    /// `L=<limit>` for the sliding log, `hot-key` for one key, empty otherwise.
    pub variant: String,
    pub run: u32,
    /// Requests in flight per connection (absent in runs before it was measured: 1, as they ran).
    #[serde(default = "one")]
    pub depth: usize,
    /// `redis-rs` (its multiplexed connection) or `lean` (the pipelined raw-RESP client); absent
    /// in runs before the lean client: redis-rs, the only client they had.
    #[serde(default = "redis_rs")]
    pub client: String,
    pub clients: usize,
    /// Keys the clients spread their decisions over (a sliding log's: log_entries / limit).
    pub keys: u64,
    /// The limit per window (a bucket's capacity).
    pub limit: u64,
    /// The window of the window limiters and the sliding log (GCRA: its period); buckets refill
    /// per second instead.
    pub window_ms: u64,
    /// Sliding log only: mean and smallest ZCARD of its keys after the run (filled to `limit`
    /// before it; a log at its limit holds `limit`).
    pub log_entries_per_key: Option<f64>,
    /// Sliding log only: the smallest ZCARD of its keys after the run.
    pub log_entries_min: Option<u64>,
    pub duration_s: f64,
    pub decisions: u64,
    pub decisions_per_s: f64,
    pub allowed: u64,
    pub denied: u64,
    pub errors: u64,
    pub redis_cpu_us: f64,
    pub cpu_us_per_decision: f64,
    pub redis_busy_pct: f64,
    /// Redis's main thread runnable but off its CPU (run queue and steal), percent of the wall
    /// time; empty for a server the user named and in runs before it was measured.
    #[serde(default)]
    pub redis_waiting_for_cpu_pct: Option<f64>,
    /// Redis's main thread neither on a CPU nor waiting for one: idle, waiting for requests
    /// (100 - busy - waiting for a CPU); empty for a server the user named.
    #[serde(default)]
    pub redis_idle_pct: Option<f64>,
    /// Who set the rate of this run: `redis` when Redis was idle at most `redis_bound_idle_pct`
    /// of the wall time (the client kept it fed), `client` when more, `unknown` where idle is
    /// not measurable (a server the user named). Claims judge only `redis` rows.
    #[serde(default = "unknown")]
    pub rate_set_by: String,
    /// The server's slowlog-log-slower-than during the run, µs (Redis's default 10,000: 10 ms);
    /// this and the two counts below are empty in runs before the slow log was read.
    #[serde(default)]
    pub slowlog_threshold_us: Option<i64>,
    /// Commands Redis's slow log recorded during the measured run (SLOWLOG GET, entries newer
    /// than the run's start; the log keeps slowlog-max-len entries, 128 by default).
    #[serde(default)]
    pub slowlog_entries: Option<u64>,
    /// Of them, runs of a script (EVAL, EVALSHA, FCALL and their read-only forms).
    #[serde(default)]
    pub slowlog_script_entries: Option<u64>,
    /// The longest of those script runs, µs (0: none logged).
    #[serde(default)]
    pub slowlog_script_slowest_us: Option<u64>,
    /// Redis's main thread runnable but off its CPU during the measured run (run queue and
    /// steal), µs: how much of any one call's wall time the machine may have taken; empty for a
    /// server the user named.
    #[serde(default)]
    pub redis_off_cpu_us: Option<f64>,
    /// The command that took most server time (evalsha for scripts).
    pub busiest_command: String,
    /// Its mean time per call inside Redis, µs (for a script: the script body).
    pub usec_per_call: f64,
    /// All commands' in-Redis time per decision, µs (MULTI strategies make several calls).
    pub command_usec_per_decision: f64,
    pub client_cpu_s: f64,
}

fn one() -> usize {
    1
}

fn unknown() -> String {
    "unknown".into()
}

fn redis_rs() -> String {
    "redis-rs".into()
}
