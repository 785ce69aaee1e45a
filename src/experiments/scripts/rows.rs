//! scripts's CSV schemas: one row per cost run, per 100 ms of a flush run, per survival case.

use crate::limiter::Invocation;
use crate::record::CsvFile;
use serde::{Deserialize, Serialize};

/// `cost.csv`: One row per measured cost run of one invocation.
pub const COSTS: CsvFile<CostRow> = CsvFile::new("cost.csv");

/// `flush.csv`: One row per 100 ms bin of a flush run.
pub const FLUSH: CsvFile<FlushRow> = CsvFile::new("flush.csv");

/// `survival.csv`: One row per invocation after one event.
pub const SURVIVAL: CsvFile<SurvivalRow> = CsvFile::new("survival.csv");

/// `survival_custom.csv`: One row per custom limiter after one event.
pub const CUSTOM_SURVIVAL: CsvFile<CustomSurvivalRow> =
    CsvFile::new("survival_custom.csv").added(&["decided_after_ms"]);

/// One measured cost run of one invocation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CostRow {
    pub mode: Invocation,
    pub run: u32,
    pub clients: usize,
    pub keys: u64,
    pub duration_s: f64,
    pub decisions: u64,
    pub decisions_per_s: f64,
    pub errors: u64,
    /// Decisions made by a fallback (0 in steady state: the script is loaded before every run).
    pub noscript: u64,
    /// Round trips to Redis per decision (1 in steady state; a fallback adds its own).
    pub round_trips_per_decision: f64,
    pub redis_cpu_us: f64,
    pub cpu_us_per_decision: f64,
    pub redis_busy_pct: f64,
    /// The mode's command as INFO commandstats names it (eval, evalsha, fcall), its calls and
    /// its mean time per call inside Redis, µs (the script body included).
    pub command: String,
    /// Calls of that command in the window (INFO commandstats `calls`).
    pub command_calls: u64,
    /// Its mean time per call inside Redis, µs (INFO commandstats `usec_per_call`).
    pub usec_per_call: f64,
    /// Every other command Redis ran in the window but the sampler's INFO, as
    /// `name:calls:usec_per_call` separated by spaces: the script's own TIME, HMGET, HSET and
    /// PEXPIRE (counted inside `usec_per_call` too), and any reload a fallback sent.
    pub other_commands: String,
    /// Bytes Redis read from clients per decision (INFO stats `total_net_input_bytes`), and wrote.
    pub bytes_in_per_decision: f64,
    /// Bytes Redis wrote to clients per decision (INFO stats `total_net_output_bytes`).
    pub bytes_out_per_decision: f64,
    pub client_cpu_s: f64,
}

/// One 100 ms bin (`bin_ms`) of a run under steady load with a flush at t = 0.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FlushRow {
    pub mode: Invocation,
    /// What the clients do on NOSCRIPT: none, eval, script-load, function-load.
    pub fallback: String,
    /// The command sent at t = 0: `SCRIPT FLUSH` or `FUNCTION FLUSH`.
    pub flush: String,
    pub run: u32,
    /// Start of the bin, ms after the flush was sent (negative: before it).
    pub t_ms: i64,
    /// The bin's width.
    pub bin_ms: u64,
    /// Checks that ended in the bin with a decision, and with an error the user would see.
    pub decisions: u64,
    pub errors: u64,
    /// Decisions that met NOSCRIPT (or a missing function) and were made by the fallback.
    pub noscript: u64,
    /// Round trips of the checks that ended in the bin, failed ones included.
    pub round_trips: u64,
    /// Latency of the checks that ended in the bin, decisions and errors alike, µs.
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub max_us: Option<f64>,
    /// When the harness loaded the script or library again, ms after the flush (modes without a
    /// fallback only; empty when nothing but the clients reloads it).
    pub reload_at_ms: Option<f64>,
    /// The first error in the bin, if any.
    pub first_error: String,
}

/// What happens to the server between loading the script and the first call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Event {
    /// Graceful restart of a server without persistence: it comes back empty.
    RestartNoPersistence,
    /// Restart with an RDB written by SHUTDOWN SAVE.
    RestartRdb,
    /// Restart with an AOF (appendfsync always).
    RestartAof,
    /// The first call goes to a replica; the script was loaded on the primary only.
    Replica,
    /// The same replica after REPLICAOF NO ONE.
    Promoted,
    /// SCRIPT FLUSH on the server.
    ScriptFlush,
    /// FUNCTION FLUSH on the server.
    FunctionFlush,
}

/// One invocation after one event: what the server still had and how the first call went.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SurvivalRow {
    pub mode: Invocation,
    /// What the client does on NOSCRIPT: none, eval, script-load, function-load.
    pub fallback: String,
    /// What happened to the server between loading the script and the first call.
    pub event: Event,
    /// What the server persisted: none, rdb, aof.
    pub persistence: String,
    /// Which server the first call went to: primary, replica, promoted replica.
    pub called: String,
    /// SCRIPT EXISTS of the bucket script (1: cached) on the primary before the event and on the
    /// called server after it, before the first call.
    pub script_exists_before: u8,
    /// SCRIPT EXISTS of the bucket script on the called server after the event (1: cached).
    pub script_exists_after: u8,
    /// Libraries FUNCTION LIST names `ratelab` (1: loaded), at the same two moments.
    pub libraries_before: u32,
    /// Libraries named `ratelab` on the called server after the event (1: loaded).
    pub libraries_after: u32,
    /// ok, noscript, readonly or error; `error` holds the error's text.
    pub first_outcome: String,
    /// The first call's error text (empty when it decided).
    pub error: String,
    /// 1 when the first decision was made (ok), else 0.
    pub ok: u8,
    /// 1 when Redis answered NOSCRIPT (or "Function not found") on the way, fallback or not.
    pub noscript: u8,
    /// Round trips the first decision took, failed ones included.
    pub round_trips: u32,
    /// Its latency, µs: every round trip, on a connection opened beforehand.
    pub first_call_us: f64,
}

/// The first call of a custom limiter (`--limiter`) after one event, in its own invocation mode.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CustomSurvivalRow {
    /// The manifest's name.
    pub strategy: crate::limiter::Strategy,
    /// Its invocation: evalsha-eval (mode evalsha) or fcall-load (mode fcall); `process` for a
    /// limiter process, which invokes whatever its library does.
    pub mode: String,
    /// What happened to the server between loading the script and the first call.
    pub event: Event,
    /// Which server the first call went to: primary, replica, promoted replica.
    pub called: String,
    /// ok, noscript, readonly or error; `error` holds the error's text.
    pub first_outcome: String,
    /// The first call's error text (empty when it decided).
    pub error: String,
    /// 1 when the first decision was made (ok), else 0.
    pub ok: u8,
    /// 1 when Redis answered NOSCRIPT (or "Function not found") and the fallback decided anyway.
    pub noscript: u8,
    /// Round trips the first decision took, failed ones included.
    pub round_trips: u32,
    /// Its latency, µs: every round trip, on a connection opened beforehand.
    pub first_call_us: f64,
    /// A limiter process whose first check failed: ms from the event's end to its library's first
    /// decision, asking again every 50 ms (empty: the first check decided, no decision within 10 s,
    /// or a script, whose every call after the event goes as its first).
    #[serde(default)]
    pub recovered_ms: Option<f64>,
    /// ms from the event's end to the first decision after it: the first call's own latency when
    /// it decided, else `recovered_ms` (empty: it did not decide again; a script asks only once).
    #[serde(default)]
    pub decided_after_ms: Option<f64>,
}

#[cfg(test)]
impl SurvivalRow {
    /// A row for the chart and report tests: the first call after `event` answered `outcome` in
    /// `round_trips`; the script and the library were gone before it.
    pub(crate) fn example(mode: Invocation, event: Event, outcome: &str, round_trips: u32) -> Self {
        SurvivalRow {
            mode,
            fallback: mode.fallback().into(),
            event,
            persistence: "none".into(),
            called: "primary".into(),
            script_exists_before: 1,
            script_exists_after: 0,
            libraries_before: 1,
            libraries_after: 0,
            first_outcome: outcome.into(),
            error: String::new(),
            ok: u8::from(outcome == "ok"),
            noscript: u8::from(outcome == "noscript"),
            round_trips,
            first_call_us: 100.0,
        }
    }
}
