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
//! retries and aborts and the round trips per decision come from the workers.
//!
//! Writes `atomic/atomic.csv` (one row per trial), `atomic/meta.json`.

mod charts;
mod report;
mod rows;

pub use rows::AtomicRow;

use super::measure::measure;
use super::{Body, Concurrency, Definition, ExperimentError, Render, Session, Summarize, Validate};
use crate::limiter::{unix_ms, LimitSpec, Strategy};
use crate::load::WorkerSpec;
use crate::record::Table;
use serde::{Deserialize, Serialize};

/// The atomic experiment.
pub struct Atomic;

impl Definition for Atomic {
    const ID: &'static str = "atomic";
    const TOML: &'static str = include_str!("../../../experiments/atomic.toml");
    type Params = Params;

    const BODY: Body<Params> = body;
    const CHARTS: Render = charts::render;
    const SUMMARY: Summarize = report::summary;

    fn tables() -> Vec<Table> {
        vec![Table::of::<AtomicRow>("atomic.csv")]
    }
}

/// Parameters; defaults in `experiments/atomic.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub checks: u64,
    pub trials: u32,
    pub configs: Vec<Concurrency>,
    pub strategies: Vec<Strategy>,
    pub capacities: Vec<u64>,
    pub watch_retries: u32,
    pub window_ms: u64,
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
        Ok(())
    }
}

fn body(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let mut rows = s.csv::<AtomicRow>("atomic.csv")?;
    let total = p.trials as usize * p.configs.len() * p.strategies.len() * p.capacities.len();
    let bar = s.progress(total as u64);
    for trial in 0..p.trials {
        for &capacity in &p.capacities {
            for &config in &p.configs {
                for &strategy in &p.strategies {
                    let what =
                        || format!("trial {trial} of {strategy} at {config}, capacity {capacity}");
                    let key = s.key(format!("{strategy}:{config}:{capacity}:{trial}"));
                    let limit = LimitSpec {
                        capacity,
                        refill_per_sec: 0.0,
                        window_ms: p.window_ms,
                        window_origin_ms: unix_ms(),
                        watch_retries: p.watch_retries,
                        ..LimitSpec::default()
                    };
                    let spec =
                        WorkerSpec::one_key(strategy, limit, &key, p.checks, config.in_flight);
                    let m = measure(&s.target, &s.closed_loop(config.processes, spec), &what)?;
                    let t = &m.tally;
                    rows.write(&AtomicRow {
                        strategy,
                        processes: config.processes,
                        in_flight: config.in_flight,
                        trial,
                        capacity,
                        checks: t.total(),
                        admitted: t.admitted,
                        refused: t.denied,
                        errors: t.errors,
                        watch_retries: t.retries,
                        watch_aborts: t.aborted,
                        redis_calls: t.redis_calls,
                        redis_cpu_us: m.server.main_thread_cpu_us,
                        cpu_us_per_decision: m.cpu_us_per_decision(),
                        elapsed_ms: t.elapsed_ns as f64 / 1e6,
                    })?;
                    bar.inc(1);
                }
            }
        }
    }
    bar.finish_and_clear();
    Ok(())
}
