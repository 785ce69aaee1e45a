//! race's CSV schema.

use crate::limiter::Strategy;
use crate::record::CsvFile;
use serde::{Deserialize, Serialize};

/// `race.csv`: One row per trial.
pub const RACE: CsvFile<RaceRow> = CsvFile::new("race.csv").added(&["cost"]);

/// `trace.csv`: One row per command MONITOR saw.
pub const TRACE: CsvFile<TraceRow> = CsvFile::new("trace.csv");

/// `keys_custom.csv`: One row per Redis key a custom limiter left for one client of a matrix trial.
pub const KEYS: CsvFile<KeyRow> = CsvFile::new("keys_custom.csv").added(&["origin_ms", "read_ms"]);

fn one_token() -> u32 {
    1
}

/// One trial.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RaceRow {
    /// `matrix` (the seed-000 grid), `seed001` (one-process burst) or `trace` (the MONITOR run).
    pub scenario: String,
    pub strategy: Strategy,
    pub processes: usize,
    pub in_flight: usize,
    pub trial: u32,
    pub checks: u64,
    pub admitted: u64,
    pub denied: u64,
    pub errors: u64,
    pub limit: u64,
    /// Tokens each request asked for: an exact limiter admits limit / cost requests (1 in runs
    /// before requests had a cost).
    #[serde(default = "one_token")]
    pub cost: u32,
    /// What the key held afterwards: tokens left, or the window's counter.
    pub final_state: String,
    pub elapsed_ms: f64,
}

/// One command seen by MONITOR during the trace.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TraceRow {
    pub seq: usize,
    /// When the server ran the command: MONITOR's timestamp, seconds since the Unix epoch.
    pub time_s: f64,
    /// The connection that sent it, as MONITOR names it (`ip:port`).
    pub client: String,
    /// The command's name as the client sent it (HMGET, HSET, EVALSHA, ...).
    pub command: String,
    /// Its arguments, space-separated.
    pub args: String,
    /// True when the command touched the traced bucket (the rest is connection set-up).
    pub on_trace_key: bool,
}

/// A key a custom limiter wrote for the one client of a matrix trial (its key, or a key that starts
/// with it), read right after the trial: what it leaves behind and for how long.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KeyRow {
    pub strategy: Strategy,
    pub processes: usize,
    pub in_flight: usize,
    pub trial: u32,
    /// The key after the client's key (empty: the client's key itself).
    pub suffix: String,
    /// Its Redis type: string, hash, zset, ...
    pub kind: String,
    /// Its time to live right after the trial, ms; -1: it never expires.
    pub pttl_ms: i64,
    /// The trial's window (fixed and sliding windows, logs), ms.
    pub window_ms: u64,
    /// The trial's window origin (its start), Unix ms on ratelab's clock: no write of the trial
    /// is earlier, so no window it counts in ends before this plus a window (0 in runs before it
    /// was recorded).
    #[serde(default)]
    pub origin_ms: u64,
    /// When the key's PTTL was read, Unix ms on ratelab's clock, taken after the reply: the key
    /// expires no later than this plus `pttl_ms` (0 in runs before it was recorded).
    #[serde(default)]
    pub read_ms: u64,
}
