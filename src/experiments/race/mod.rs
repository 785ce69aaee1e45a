//! # race
//! Hypothesis (seeds 000, 001): a limiter that reads its state, decides in the client and writes
//! back admits more than its limit as soon as requests overlap, even from ONE process, because
//! in-flight requests on one connection arrive as read, read, write, write. Atomic strategies (a
//! Lua script; INCR and compare) admit exactly the limit at any concurrency.
//!
//! Method: a bucket of `capacity` tokens that never refills (or a window of `capacity` that never
//! rolls over within a trial), `checks` checks per trial on one fresh key, spread over P worker
//! processes with F requests in flight each. Trials are interleaved across configurations so
//! machine noise spreads evenly. Then seed 001's one-process burst of 500 hits on a limit of 100,
//! and a MONITOR capture of naive-bucket at 1 x 2 on a bucket of 3.
//!
//! Writes `race/race.csv` (one row per trial; scenario `matrix`, `seed001` or `trace`),
//! `race/trace.csv` (one row per command MONITOR saw), `race/meta.json`.

mod body;
mod charts;
mod report;
mod rows;

pub use rows::{RaceRow, TraceRow};

use super::limiters::Verdicts;
use super::{Body, Concurrency, Definition, Render, Summarize, Validate};
use crate::limiter::Strategy;
use crate::record::Table;
use serde::{Deserialize, Serialize};

/// The race experiment.
pub struct Race;

impl Definition for Race {
    const ID: &'static str = "race";
    const TOML: &'static str = include_str!("../../../experiments/race.toml");
    type Params = Params;
    const TAKES_LIMITERS: bool = true;
    const VERDICTS: Verdicts = report::verdicts;

    const BODY: Body<Params> = body::run;
    const CHARTS: Render = charts::render;
    const SUMMARY: Summarize = report::summary;

    fn tables() -> Vec<Table> {
        vec![
            Table::of::<RaceRow>("race.csv"),
            Table::of::<TraceRow>("trace.csv"),
        ]
    }
}

/// Parameters; defaults in `experiments/race.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub capacity: u64,
    pub checks: u64,
    pub trials: u32,
    pub configs: Vec<Concurrency>,
    pub strategies: Vec<Strategy>,
    pub window_ms: u64,
    pub seed001_hits: u64,
    pub seed001_limit: u64,
    pub seed001_strategies: Vec<Strategy>,
    pub trace_capacity: u64,
    pub trace_in_flight: usize,
    pub trace_checks: u64,
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        if self.capacity == 0 || self.checks == 0 || self.trials == 0 || self.window_ms == 0 {
            return Err("capacity, checks, trials and window_ms must be >= 1".into());
        }
        if self.trace_in_flight == 0 {
            return Err("trace_in_flight must be >= 1".into());
        }
        Ok(())
    }
}
