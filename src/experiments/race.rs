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

use super::common::{
    fail_on_errors, progress_bar, run_experiment, Concurrency, ExperimentError, Phase, RunRecord,
    Validate,
};
use crate::context::Ctx;
use crate::limiter::{unix_ms, LimitSpec, LogVariant, Strategy};
use crate::load::{run_closed_loop, ClosedLoop, WorkerSpec};
use crate::record::MonitorCapture;
use crate::server::Target;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

const ID: &str = "race";

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
    /// What the key held afterwards: tokens left, or the window's counter.
    pub final_state: String,
    pub elapsed_ms: f64,
}

/// One command seen by MONITOR during the trace.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TraceRow {
    pub seq: usize,
    pub time_s: f64,
    pub client: String,
    pub command: String,
    pub args: String,
    /// True when the command touched the traced bucket (the rest is connection set-up).
    pub on_trace_key: bool,
}

/// Runs the experiment into `ctx.out_dir/race/`.
pub fn run(ctx: &Ctx) -> Result<PathBuf, ExperimentError> {
    run_experiment(ctx, super::Experiment::Race, |s, p: &Params| {
        run_body(s.ctx, p, s.target, s.run, s.prefix)
    })
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

fn run_body(
    ctx: &Ctx,
    p: &Params,
    target: &Target,
    run: &mut RunRecord,
    prefix: &str,
) -> Result<(), ExperimentError> {
    run.note("No warm-up is excluded: every trial starts on a fresh key; workers connect before the start signal, so connection set-up is outside elapsed_ms.");
    run.note("Trials are interleaved (trial-major, then configuration, then strategy) so drift in machine load spreads over all configurations.");
    run.note("Window strategies start window 0 at each trial's start, so a trial never spans two windows.");
    let mut rows = run
        .staging
        .csv::<RaceRow>("race.csv")
        .phase(|| "opening race.csv".into())?;
    let matrix_trials = p.trials as u64 * (p.configs.len() * p.strategies.len()) as u64;
    let burst_trials = p.trials as u64 * p.seed001_strategies.len() as u64;
    let bar = progress_bar(ctx, ID, matrix_trials + burst_trials + 1);

    for trial in 0..p.trials {
        for &config in &p.configs {
            for &strategy in &p.strategies {
                let key = format!("{prefix}m:{strategy}:{config}:{trial}");
                let trial_spec = Trial {
                    strategy,
                    config,
                    checks: p.checks,
                    limit: p.capacity,
                    key,
                };
                let row = trial_spec.run(ctx, target, p.window_ms, "matrix", trial)?;
                rows.write(&row).phase(|| "writing race.csv".into())?;
                bar.inc(1);
            }
        }
        for &strategy in &p.seed001_strategies {
            let config = Concurrency {
                processes: 1,
                in_flight: p.seed001_hits as usize,
            };
            let key = format!("{prefix}s:{strategy}:{trial}");
            let trial_spec = Trial {
                strategy,
                config,
                checks: p.seed001_hits,
                limit: p.seed001_limit,
                key,
            };
            let row = trial_spec.run(ctx, target, p.window_ms, "seed001", trial)?;
            rows.write(&row).phase(|| "writing race.csv".into())?;
            bar.inc(1);
        }
    }

    let trace_row = trace(ctx, p, target, run, prefix)?;
    rows.write(&trace_row).phase(|| "writing race.csv".into())?;
    bar.finish_and_clear();
    Ok(())
}

/// One trial's setup.
struct Trial {
    strategy: Strategy,
    config: Concurrency,
    checks: u64,
    limit: u64,
    key: String,
}

impl Trial {
    fn limit_spec(&self, window_ms: u64) -> LimitSpec {
        LimitSpec {
            capacity: self.limit,
            refill_per_sec: 0.0,
            window_ms,
            window_origin_ms: unix_ms(),
            idle_ttl_ms: 600_000,
            log: LogVariant::default(),
            watch_retries: 10,
        }
    }

    fn run(
        &self,
        ctx: &Ctx,
        target: &Target,
        window_ms: u64,
        scenario: &str,
        trial: u32,
    ) -> Result<RaceRow, ExperimentError> {
        let what = || {
            format!(
                "{scenario} trial {trial} of {} at {}",
                self.strategy, self.config
            )
        };
        let limit = self.limit_spec(window_ms);
        let plan = ClosedLoop {
            exe: &ctx.worker_exe,
            cpus: &ctx.pin.harness,
            processes: self.config.processes,
            template: WorkerSpec {
                seed: ctx.seed,
                timeouts: ctx.timeouts,
                ..WorkerSpec::one_key(
                    &target.url(),
                    self.strategy,
                    limit,
                    &self.key,
                    self.checks,
                    self.config.in_flight,
                )
            },
        };
        let tally = match run_closed_loop(&plan) {
            Ok(tally) => tally,
            Err(e) => {
                // A worker that could not connect is most often a server that died.
                target.check_alive().phase(what)?;
                return Err(e).phase(what);
            }
        };
        fail_on_errors(target, &tally).phase(what)?;
        let final_state = read_state(target, self.strategy, &self.key, &limit).phase(what)?;
        Ok(RaceRow {
            scenario: scenario.to_string(),
            strategy: self.strategy,
            processes: self.config.processes,
            in_flight: self.config.in_flight,
            trial,
            checks: tally.total(),
            admitted: tally.admitted,
            denied: tally.denied,
            errors: tally.errors,
            limit: self.limit,
            final_state,
            elapsed_ms: tally.elapsed_ns as f64 / 1e6,
        })
    }
}

/// What the key holds after the trial: the bucket's tokens or the window's counter.
fn read_state(
    target: &Target,
    strategy: Strategy,
    key: &str,
    limit: &LimitSpec,
) -> Result<String, crate::server::ServerError> {
    let mut con = target.connection()?;
    let value: Option<String> = strategy.state_command(key, limit).query(&mut con)?;
    Ok(value.unwrap_or_default())
}

/// Seed 000's MONITOR: naive-bucket, one process, 2 in flight, a bucket of 3 tokens.
fn trace(
    ctx: &Ctx,
    p: &Params,
    target: &Target,
    run: &mut RunRecord,
    prefix: &str,
) -> Result<RaceRow, ExperimentError> {
    let key = format!("{prefix}trace");
    let addr = host_port(&target.url());
    let capture =
        MonitorCapture::start(&addr, &target.url()).phase(|| "starting MONITOR".into())?;
    let config = Concurrency {
        processes: 1,
        in_flight: p.trace_in_flight,
    };
    let trial = Trial {
        strategy: Strategy::NaiveBucket,
        config,
        checks: p.trace_checks,
        limit: p.trace_capacity,
        key: key.clone(),
    };
    let row = trial.run(ctx, target, p.window_ms, "trace", 0)?;
    let lines = capture.finish().phase(|| "reading MONITOR".into())?;
    let mut sink = run
        .staging
        .csv::<TraceRow>("trace.csv")
        .phase(|| "opening trace.csv".into())?;
    for (seq, line) in lines.into_iter().enumerate() {
        let on_trace_key = line.args.first().is_some_and(|a| a == &key);
        let row = TraceRow {
            seq,
            time_s: line.time,
            client: line.client,
            command: line.command,
            args: line.args.join(" "),
            on_trace_key,
        };
        sink.write(&row).phase(|| "writing trace.csv".into())?;
    }
    run.note(format!(
        "trace: naive-bucket at 1x{} on a bucket of {} admitted {} of {} checks",
        p.trace_in_flight, p.trace_capacity, row.admitted, row.checks
    ));
    Ok(row)
}

/// `redis://host:port/db` -> `host:port`.
pub(super) fn host_port(url: &str) -> String {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let rest = rest.rsplit_once('@').map(|(_, r)| r).unwrap_or(rest);
    rest.split('/').next().unwrap_or(rest).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port_strips_scheme_auth_and_db() {
        assert_eq!(host_port("redis://127.0.0.1:6400/"), "127.0.0.1:6400");
        assert_eq!(host_port("redis://:pw@10.0.0.1:6379/2"), "10.0.0.1:6379");
    }
}
