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

use super::common::{
    progress_bar, run_experiment, Concurrency, ExperimentError, Phase, RunRecord, Validate,
};
use super::measure::measure;
use crate::context::Ctx;
use crate::limiter::{unix_ms, LimitSpec, Strategy};
use crate::load::{ClosedLoop, WorkerSpec};
use crate::server::Target;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

const ID: &str = "atomic";

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

/// One trial.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AtomicRow {
    pub strategy: Strategy,
    pub processes: usize,
    pub in_flight: usize,
    pub trial: u32,
    pub capacity: u64,
    pub checks: u64,
    pub admitted: u64,
    pub refused: u64,
    pub errors: u64,
    pub watch_retries: u64,
    pub watch_aborts: u64,
    /// Round trips to Redis, all decisions of the trial.
    pub redis_calls: u64,
    pub redis_cpu_us: f64,
    pub cpu_us_per_decision: f64,
    pub elapsed_ms: f64,
}

/// Runs the experiment into `ctx.out_dir/atomic/`.
pub fn run(ctx: &Ctx) -> Result<PathBuf, ExperimentError> {
    run_experiment(ctx, super::Experiment::Atomic, |s, p: &Params| {
        s.run.note("No warm-up: every trial starts on a fresh key; workers connect before the start signal.");
        s.run.note("Redis CPU per decision includes the two INFO calls that bracket each trial (a few µs over ~1,000 decisions).");
        body(s.ctx, p, s.target, s.run, s.prefix)
    })
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

fn body(
    ctx: &Ctx,
    p: &Params,
    target: &Target,
    run: &mut RunRecord,
    prefix: &str,
) -> Result<(), ExperimentError> {
    let mut rows = run
        .staging
        .csv::<AtomicRow>("atomic.csv")
        .phase(|| "opening atomic.csv".into())?;
    let total = p.trials as usize * p.configs.len() * p.strategies.len() * p.capacities.len();
    let bar = progress_bar(ctx, ID, total as u64);
    for trial in 0..p.trials {
        for &capacity in &p.capacities {
            for &config in &p.configs {
                for &strategy in &p.strategies {
                    let what =
                        || format!("trial {trial} of {strategy} at {config}, capacity {capacity}");
                    let key = format!("{prefix}{strategy}:{config}:{capacity}:{trial}");
                    let limit = LimitSpec {
                        capacity,
                        refill_per_sec: 0.0,
                        window_ms: p.window_ms,
                        window_origin_ms: unix_ms(),
                        watch_retries: p.watch_retries,
                        ..LimitSpec::default()
                    };
                    let plan = ClosedLoop {
                        exe: &ctx.worker_exe,
                        cpus: &ctx.pin.harness,
                        processes: config.processes,
                        template: WorkerSpec {
                            seed: ctx.seed,
                            timeouts: ctx.timeouts,
                            ..WorkerSpec::one_key(
                                &target.url(),
                                strategy,
                                limit,
                                &key,
                                p.checks,
                                config.in_flight,
                            )
                        },
                    };
                    let m = measure(target, &plan, &what)?;
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
                    })
                    .phase(|| "writing atomic.csv".into())?;
                    bar.inc(1);
                }
            }
        }
    }
    bar.finish_and_clear();
    Ok(())
}
