//! The pods experiment's rows: one per run per second (pods.csv), one per run (runs.csv).

use super::PodStrategy;
use crate::record::CsvFile;
use serde::{Deserialize, Serialize};

/// `pods.csv`: One row per run per second.
pub const SECONDS: CsvFile<PodsSecondRow> =
    CsvFile::new("pods.csv").added(&["work_ms", "partner_ms", "skew_ms"]);

/// `runs.csv`: One row per run.
pub const RUNS: CsvFile<PodsRunRow> = CsvFile::new("runs.csv").added(&[
    "slowlog_threshold_us",
    "slowlog_entries",
    "slowlog_script_entries",
    "slowlog_script_slowest_us",
    "evicted_keys",
    "maxmemory_policy",
    "redis_off_cpu_us",
    "work_ms",
    "partner_ms",
    "skew_ms",
    "decide_mean_ms",
    "offered_within_decide",
    "decide_p99_ms",
    "max_open",
    "mean_open",
]);

/// Where a second lies in its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SecondPhase {
    /// The first seconds: a full bucket, the first window; excluded from the statistics.
    WarmUp,
    /// A second of the schedule after the warm-up: what the statistics are over.
    Measured,
    /// After the schedule: replies of its last requests still arriving.
    Tail,
}

/// One second of one run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PodsSecondRow {
    pub strategy: PodStrategy,
    /// Pod processes.
    pub pods: u32,
    /// Offered requests per second, all pods together.
    pub offered_rps: f64,
    /// Round trip added to the pods' Redis connections by the fault proxy, ms (0: loopback).
    pub rtt_ms: f64,
    /// Synchronous work each request did on its pod's event loop before its check, ms.
    #[serde(default)]
    pub work_ms: f64,
    /// How long the partner (the sink) took to answer each admitted request, ms.
    #[serde(default)]
    pub partner_ms: f64,
    /// The pods' clocks spread evenly over this many ms when naming windows (0: one clock).
    #[serde(default)]
    pub skew_ms: f64,
    pub trial: u32,
    /// Seconds since the run's start (its windows' origin).
    pub second: u32,
    pub phase: SecondPhase,
    /// The tenant's limit per second.
    pub limit: u64,
    /// Requests the schedule started in this second.
    pub offered: u64,
    /// Decided "allowed" by the pods in this second, on their clock (the seed's limiter metric).
    pub decided_allowed: u64,
    /// Decided "denied" by the pods in this second.
    pub denied: u64,
    /// Sent to the sink by the pods in this second.
    pub sent: u64,
    /// Received by the sink in this second, on its clock: what reached the partner.
    pub reached: u64,
    /// Reached exceeded decided by more than 2% (the seed's alert rule).
    pub alert: bool,
}

/// One run: totals, the measured seconds' statistics, and what it cost Redis.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PodsRunRow {
    pub strategy: PodStrategy,
    /// Pod processes.
    pub pods: u32,
    /// Offered requests per second, all pods together.
    pub offered_rps: f64,
    /// Round trip added to the pods' Redis connections by the fault proxy, ms (0: loopback).
    pub rtt_ms: f64,
    /// Synchronous work each request did on its pod's event loop before its check, ms.
    #[serde(default)]
    pub work_ms: f64,
    /// How long the partner (the sink) took to answer each admitted request, ms.
    #[serde(default)]
    pub partner_ms: f64,
    /// The pods' clocks spread evenly over this many ms when naming windows (0: one clock).
    #[serde(default)]
    pub skew_ms: f64,
    pub trial: u32,
    pub limit: u64,
    /// Each pod's own limit (in-memory strategies; 0 on Redis).
    pub pod_limit: u64,
    pub duration_s: u32,
    /// Seconds the statistics are over (after the warm-up, within the schedule).
    pub measured_s: u32,
    /// Totals of the run: scheduled, decided, written to the sink, answered by it, received by it.
    pub offered: u64,
    /// Decided "allowed" by the pods over the run, on their clock.
    pub decided_allowed: u64,
    pub denied: u64,
    /// Written to the sink by the pods over the run.
    pub sent: u64,
    /// Answered by the sink over the run (the pods saw its reply).
    pub acknowledged: u64,
    /// Received by the sink over the run: what reached the partner.
    pub reached: u64,
    /// Sent by the pods and never received by the sink (negative: received more than sent).
    pub lost: i64,
    /// Reached per second over the measured seconds: mean, lowest, highest.
    pub reached_per_s: f64,
    /// Reached in the measured second that received the fewest.
    pub reached_min_per_s: u64,
    /// Reached in the measured second that received the most.
    pub reached_max_per_s: u64,
    /// Decided allowed per second over the measured seconds, mean.
    pub decided_per_s: f64,
    /// Offered requests that arrived per second over the measured seconds, mean.
    pub arrived_per_s: f64,
    /// Reached per second over the limit, mean of the measured seconds.
    pub excess_per_s: f64,
    /// Requests offered within one added round trip (offered_rps x rtt): the naive window's
    /// predicted excess per window.
    pub offered_within_rtt: f64,
    /// Requests offered within one mean check (offered_rps x decide_mean_ms): for the naive
    /// window, those that read a count short of the one before them.
    #[serde(default)]
    pub offered_within_decide: f64,
    /// Reached per second over limit x pods: 1 when each pod admits its own full limit.
    pub reached_per_pod_limit: f64,
    /// Share of the measured seconds in which reached exceeded decided by more than 2%, percent.
    pub alert_pct: f64,
    /// The second in which the most reached the sink (any phase), and how many.
    pub peak_second: u32,
    /// Received by the sink in that second.
    pub peak_reached: u64,
    /// Latency of a decision from its intended start, ms (the sink's hop not included).
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Most requests in flight at once in one pod.
    pub max_in_flight: u64,
    /// Starts later than 1 ms against the schedule, and the latest, ms.
    pub late_starts: u64,
    /// The latest start against the schedule, ms.
    pub max_late_ms: f64,
    /// CPU seconds the pods used.
    pub pods_cpu_s: f64,
    /// Redis main thread busy over the run, percent.
    pub redis_busy_pct: f64,
    /// Redis main-thread CPU per decision, µs.
    pub redis_cpu_us_per_decision: f64,
    /// The busiest command (INFO commandstats: the script for Lua strategies) and its µs per call.
    pub command: String,
    /// That command's mean time per call inside Redis (INFO commandstats usec_per_call).
    pub usec_per_call: f64,
    /// The server's slowlog-log-slower-than during the run, µs (10,000, 10 ms, is Redis's
    /// default; 0 in runs before it was recorded).
    #[serde(default)]
    pub slowlog_threshold_us: i64,
    /// Commands Redis's slow log recorded during the run (SLOWLOG GET, entries newer than the run).
    #[serde(default)]
    pub slowlog_entries: u64,
    /// Of them, runs of the limiter's script (EVAL, EVALSHA, FCALL and their read-only forms).
    #[serde(default)]
    pub slowlog_script_entries: u64,
    /// The longest of those script runs, µs (0: none logged).
    #[serde(default)]
    pub slowlog_script_slowest_us: u64,
    /// Keys Redis evicted during the run (INFO stats evicted_keys, after less before): seed 001
    /// ruled eviction out as the leak's cause by this count.
    #[serde(default)]
    pub evicted_keys: u64,
    /// The server's maxmemory-policy during the run (INFO memory), e.g. noeviction.
    #[serde(default)]
    pub maxmemory_policy: String,
    /// Redis's main thread runnable but off its CPU during the run (run queue and steal), µs:
    /// how much of any one call's wall time the machine may have taken (0 for a server the user
    /// named).
    #[serde(default)]
    pub redis_off_cpu_us: f64,
    /// Time from a check's send to its decision, mean, ms: for the naive window the span from its
    /// GET to its EXEC's reply, in which every other GET reads a count short of this one.
    #[serde(default)]
    pub decide_mean_ms: f64,
    /// The same, 99th percentile, ms.
    #[serde(default)]
    pub decide_p99_ms: f64,
    /// Most requests open at once in one pod: from the intended start to the partner's answer
    /// (to the decision, when denied).
    #[serde(default)]
    pub max_open: u64,
    /// Requests open in a pod on average over the schedule: their open times summed, over the
    /// schedule's length and the pods (Little's law).
    #[serde(default)]
    pub mean_open: f64,
}
