//! atomic's CSV schema.

use crate::limiter::Strategy;
use crate::record::CsvFile;
use serde::{Deserialize, Serialize};

/// `atomic.csv`: One row per trial.
pub const ATOMIC: CsvFile<AtomicRow> =
    CsvFile::new("atomic.csv").added(&["cost", "watch_transactions", "watch_transactions_aborted"]);

/// `round_trips.csv`: One row per run of GETs.
pub const ROUND_TRIPS: CsvFile<RoundTripRow> = CsvFile::new("round_trips.csv");

fn one_token() -> u32 {
    1
}

/// One trial.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AtomicRow {
    pub strategy: Strategy,
    pub processes: usize,
    pub in_flight: usize,
    pub trial: u32,
    pub capacity: u64,
    /// Tokens each request asked for: an exact limiter admits capacity / cost requests (1 in runs
    /// before requests had a cost).
    #[serde(default = "one_token")]
    pub cost: u32,
    pub checks: u64,
    pub admitted: u64,
    pub refused: u64,
    pub errors: u64,
    /// watch-bucket only: WATCH transactions retried after another client's write aborted them.
    pub watch_retries: u64,
    /// watch-bucket only: checks refused because their WATCH retry budget ran out.
    pub watch_aborts: u64,
    /// watch-bucket only: WATCH transactions sent (each check's first EXEC and every retry's; 0 in
    /// runs before it was recorded).
    #[serde(default)]
    pub watch_transactions: u64,
    /// watch-bucket only: of them, those whose EXEC came back aborted because another client wrote
    /// the key (every retry's cause, and the last try of a check whose budget ran out; a refusal
    /// of an empty bucket stands whatever its EXEC answered and counts as not aborted).
    #[serde(default)]
    pub watch_transactions_aborted: u64,
    /// Round trips to Redis, all decisions of the trial, as the limiters report them.
    pub redis_calls: u64,
    /// Commands Redis executed during the trial (INFO commandstats `calls`, the sampling's own
    /// INFO excluded): a script's commands and each one inside MULTI/EXEC count, so this is load
    /// on Redis, not round trips. Empty on a server ratelab does not own (`--redis-url`), where
    /// other clients' commands would be counted too.
    pub server_commands: Option<u64>,
    pub redis_cpu_us: f64,
    pub cpu_us_per_decision: f64,
    pub elapsed_ms: f64,
}

/// One run of GETs at one configuration: what a round trip alone costs Redis there. At low
/// concurrency each command wakes the server from its event loop, which this machine charges
/// per round trip whatever the command does; a decision's CPU beside this row's shows what the
/// limiter adds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RoundTripRow {
    pub processes: usize,
    pub in_flight: usize,
    pub trial: u32,
    /// GETs of one missing key answered, and those that got no reply.
    pub checks: u64,
    pub errors: u64,
    pub redis_cpu_us: f64,
    /// Redis main-thread CPU per GET answered: what one round trip alone costs the server here.
    pub cpu_us_per_round_trip: f64,
    pub elapsed_ms: f64,
}
