//! # latency
//! Hypothesis (seed 000): a Lua check adds 0.16-0.18 ms at the median, one request at a time over
//! loopback; a plain GET is the floor, since every check pays at least one round trip.
//!
//! Method: one worker process, one connection, one request in flight (closed loop, faithful to
//! the seed's one-at-a-time benchmark, so there is no coordinated omission to correct), keys spread
//! over `keys` with limits high enough that every check admits. Each run first makes `warmup`
//! unrecorded checks on the same keys (excluded), then `requests` recorded ones; latency is measured
//! on the monotonic clock around each check into an hdrhistogram. Runs are interleaved across
//! strategies.
//!
//! Writes `latency/latency.csv` (percentiles per strategy and run), `latency/latency_hist.csv`
//! (every recorded bucket: strategy, run, value_us, count), `latency/meta.json`.

mod body;
mod charts;
mod report;
mod rows;

pub use rows::{HistRow, LatencyRow, HIST, LATENCY};

use super::limiters::Verdicts;
use super::{Body, Definition, Render, Summarize, Validate};
use crate::analysis::MachineFact;
use crate::limiter::Strategy;
use crate::record::Table;
use serde::{Deserialize, Serialize};

/// The latency experiment.
pub struct Latency;

impl Definition for Latency {
    const ID: &'static str = "latency";
    const TOML: &'static str = include_str!("../../../experiments/latency.toml");
    type Params = Params;
    const TAKES_LIMITERS: bool = true;
    const TAKES_PROCESSES: bool = true;
    const VERDICTS: Verdicts = report::verdicts;

    const BODY: Body<Params> = body::run;
    const CHARTS: Render = charts::render;
    const SUMMARY: Summarize = report::summary;
    const MACHINE_FACT: Option<MachineFact> = Some(report::loopback_get);

    fn tables() -> Vec<Table> {
        vec![LATENCY.table(), HIST.table()]
    }
}

/// Parameters; defaults in `experiments/latency.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Runs of every strategy, one after the other.
    pub runs: u32,
    pub requests: u64,
    pub warmup: u64,
    /// The limiters timed, beside `get` (one GET: a round trip alone).
    pub strategies: Vec<Strategy>,
    pub keys: u64,
    /// Bucket capacity and window limit, high enough that every check is admitted.
    pub capacity: u64,
    /// Bucket refill rate (tokens per second), as high as the capacity.
    pub refill_per_sec: f64,
    /// Window length of the window and log strategies.
    pub window_ms: u64,
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        if self.runs == 0 || self.requests == 0 || self.keys == 0 || self.strategies.is_empty() {
            return Err("runs, requests, keys must be >= 1 and strategies non-empty".into());
        }
        Ok(())
    }
}
