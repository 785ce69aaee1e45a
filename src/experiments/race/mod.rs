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

pub(crate) use body::Trial;
pub(crate) use charts::render as render_charts;
pub(crate) use report::{limiter_claims, summary, verdicts};
pub use rows::{KeyRow, RaceRow, TraceRow, KEYS, RACE, TRACE};

use super::limiters::Verdicts;
use super::{Body, Concurrency, Definition, Render, Summarize, Validate};
use crate::limiter::Strategy;
use crate::record::Table;
use crate::server::acl::Extra;
use serde::{Deserialize, Serialize};

/// The race experiment.
pub struct Race;

impl Definition for Race {
    const ID: &'static str = "race";
    const TOML: &'static str = include_str!("../../../experiments/race.toml");
    type Params = Params;
    const TAKES_LIMITERS: bool = true;
    const TAKES_PROCESSES: bool = true;
    const VERDICTS: Verdicts = report::verdicts;
    const LIMITER_CLAIMS: super::limiters::Claims = report::limiter_claims;
    /// The trace records the order in which the server ran the commands.
    const PERMISSIONS: &'static [Extra] = &[Extra::Monitor];

    const BODY: Body<Params> = body::run;
    const CHARTS: Render = charts::render;
    const SUMMARY: Summarize = report::summary;

    fn tables() -> Vec<Table> {
        vec![
            RACE.table(),
            TRACE.table(),
            KEYS.table().of_custom_limiters_only(),
        ]
    }
}

/// Parameters; defaults in `experiments/race.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Bucket capacity (and window limit) of the matrix; the bucket never refills, so exactly
    /// this many checks may ever pass.
    pub capacity: u64,
    /// Checks per trial, shared by all processes of the configuration.
    pub checks: u64,
    /// Repetitions of the matrix (and of seed 001's burst), interleaved across configurations.
    pub trials: u32,
    /// The matrix's configurations, `PxF`: P worker processes with F requests in flight each.
    pub configs: Vec<Concurrency>,
    /// The limiters in the matrix (naive read-then-write ones and atomic ones).
    pub strategies: Vec<Strategy>,
    /// Fixed-window length; a window starts at each trial's start, so one trial is one window.
    pub window_ms: u64,
    /// Tokens each request of the matrix and of seed 001's burst asks for: a custom limiter's
    /// `{cost}`, a limiter process's `cost`; an exact limiter then admits capacity / cost requests.
    /// The built-in strategies decide one request per check: above 1, list none in `strategies`
    /// and `seed001_strategies` (the MONITOR trace stays seed 000's one-token bucket).
    #[serde(default = "one_token")]
    pub cost: u32,
    /// Seed 001's burst: concurrent hits from one process on one window.
    pub seed001_hits: u64,
    /// Seed 001's burst: the window's limit.
    pub seed001_limit: u64,
    /// Seed 001's burst: the window limiters it runs.
    pub seed001_strategies: Vec<Strategy>,
    /// The MONITOR trace of naive-bucket: its bucket's capacity.
    pub trace_capacity: u64,
    /// The MONITOR trace: requests in flight from its one process.
    pub trace_in_flight: usize,
    /// The MONITOR trace: checks made.
    pub trace_checks: u64,
}

fn one_token() -> u32 {
    1
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        if self.capacity == 0 || self.checks == 0 || self.trials == 0 || self.window_ms == 0 {
            return Err("capacity, checks, trials and window_ms must be >= 1".into());
        }
        if self.cost == 0 {
            return Err("cost must be >= 1: a request takes at least one token".into());
        }
        let lists = [
            ("strategies", &self.strategies[..]),
            ("seed001_strategies", &self.seed001_strategies[..]),
        ];
        super::limiters::cost_for_builtins(self.cost, &lists)?;
        if self.trace_in_flight == 0 {
            return Err("trace_in_flight must be >= 1".into());
        }
        Ok(())
    }
}
