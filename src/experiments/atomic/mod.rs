//! # atomic
//! Hypothesis (seeds 002, 000): only strategies that read, decide and write in one step are exact
//! under contention. WATCH/MULTI is exact when it commits but, with a retry budget, refuses
//! legitimate requests when transactions keep aborting (seed 002 cites 42% at 10 retries). Each
//! exact strategy has a price in Redis CPU per decision.
//!
//! Method: `checks` checks per trial on ONE key from P worker processes x F in flight, for every
//! strategy, at two capacities: one >= checks (every request legitimate: refusals are
//! under-admission) and one below (admissions past it are over-admission). Trials interleave
//! configurations and strategies. Redis main-thread CPU is sampled around each trial; WATCH
//! retries and aborts and the round trips per decision come from the workers. Redis's own count of
//! the commands it executed (INFO commandstats, around the same window) is written beside them:
//! commands, not round trips (a MULTI/EXEC of four is one round trip; a script's calls count).
//!
//! Beside them, in the first `round_trip_trials` trials, GETs of a missing key at every configuration:
//! the Redis CPU of a round trip alone. On a VM a lone command can cost Redis several times what
//! it costs with 16 in flight (each one wakes the server from its event loop), so at 1x1 a
//! decision's CPU can be mostly the machine's; the GET rows say how much.
//!
//! Writes `atomic/atomic.csv` (one row per trial), `atomic/round_trips.csv` (one row per GET
//! run), `atomic/meta.json`.

mod body;
mod charts;
mod report;
mod rows;

pub use rows::{AtomicRow, RoundTripRow, ATOMIC, ROUND_TRIPS};

use super::{Body, Concurrency, Definition, Render, Summarize, Validate};
use crate::limiter::Strategy;
use crate::record::Table;
use serde::{Deserialize, Serialize};

/// The atomic experiment.
pub struct Atomic;

impl Definition for Atomic {
    const ID: &'static str = "atomic";
    const TOML: &'static str = include_str!("../../../experiments/atomic.toml");
    type Params = Params;
    const TAKES_LIMITERS: bool = true;
    const TAKES_PROCESSES: bool = true;
    const LIMITER_CLAIMS: super::limiters::Claims = report::limiter_claims;

    const BODY: Body<Params> = body::run;
    const CHARTS: Render = charts::render;
    const SUMMARY: Summarize = report::summary;

    fn tables() -> Vec<Table> {
        vec![ATOMIC.table(), ROUND_TRIPS.table()]
    }
}

/// Parameters; defaults in `experiments/atomic.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Checks per trial, all on one fresh key.
    pub checks: u64,
    /// The most trials per configuration (strategy x processes x in-flight x capacity).
    pub trials: u32,
    /// Trials every configuration runs (up to `trials`); after them one stops once settled.
    pub min_trials: u32,
    /// Settled: the 95% confidence interval of its admitted count is within +- this many checks.
    pub settle_checks: f64,
    /// Trials (the first ones) that also run GETs at every configuration (round_trips.csv).
    pub round_trip_trials: u32,
    /// `PxF`: P worker processes with F requests in flight each, all on one key.
    pub configs: Vec<Concurrency>,
    /// The limiters compared (naive, WATCH, MULTI and Lua ones).
    pub strategies: Vec<Strategy>,
    /// Limits: at or above `checks` every refusal is under-admission; below it every admission
    /// beyond the limit is over-admission.
    pub capacities: Vec<u64>,
    /// watch-bucket: times a request starts over after EXEC was aborted (a WATCHed key
    /// changed) before it is refused.
    pub watch_retries: u32,
    /// Fixed-window length; long enough that a trial is one window.
    pub window_ms: u64,
    /// Tokens each request asks for: a custom limiter's `{cost}`, a limiter process's `cost`;
    /// an exact limiter then admits capacity / cost requests. The built-in strategies decide one
    /// request per check: above 1, list none in `strategies`.
    #[serde(default = "one_token")]
    pub cost: u32,
}

fn one_token() -> u32 {
    1
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        if self.checks == 0
            || self.trials == 0
            || self.capacities.contains(&0)
            || self.window_ms == 0
        {
            return Err("checks, trials, capacities and window_ms must be >= 1".into());
        }
        if self.cost == 0 {
            return Err("cost must be >= 1: a request takes at least one token".into());
        }
        super::limiters::cost_for_builtins(self.cost, &[("strategies", &self.strategies)])?;
        if self.min_trials < 2 {
            // One trial has no spread, so nothing could say it settled.
            return Err("min_trials must be >= 2 (at most `trials` of them run)".into());
        }
        if self.round_trip_trials == 0 || self.round_trip_trials > self.trials {
            return Err("round_trip_trials must be within 1..=trials".into());
        }
        if self.settle_checks.is_nan() || self.settle_checks < 0.0 {
            return Err("settle_checks must be >= 0".into());
        }
        Ok(())
    }
}
