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

use super::common::{
    fail_on_errors, progress_bar, run_experiment, ExperimentError, Phase, RunRecord, Validate,
};
use crate::context::Ctx;
use crate::limiter::{LimitSpec, Strategy};
use crate::load::{run_closed_loop, ClosedLoop, KeyChoice, Stop, WorkerSpec};
use crate::server::Target;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

const ID: &str = "latency";

/// Parameters; defaults in `experiments/latency.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub runs: u32,
    pub requests: u64,
    pub warmup: u64,
    pub strategies: Vec<Strategy>,
    pub keys: u64,
    pub capacity: u64,
    pub refill_per_sec: f64,
    pub window_ms: u64,
}

/// Percentiles of one run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LatencyRow {
    pub strategy: Strategy,
    pub run: u32,
    pub requests: u64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    pub mean_us: f64,
}

/// One recorded histogram bucket.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HistRow {
    pub strategy: Strategy,
    pub run: u32,
    /// The bucket's highest equivalent value, µs.
    pub value_us: f64,
    pub count: u64,
}

/// Runs the experiment into `ctx.out_dir/latency/`.
pub fn run(ctx: &Ctx) -> Result<PathBuf, ExperimentError> {
    run_experiment(ctx, super::Experiment::Latency, |s, p: &Params| {
        s.run.note(format!(
            "Warm-up excluded: each run starts with {} unrecorded checks on the same keys.",
            p.warmup
        ));
        s.run.note("One connection, one request in flight: latency is the round trip of one check as the caller sees it (loopback); a check with no limiter costs no round trip, so p50 here is the latency a limiter adds.");
        body(s.ctx, p, s.target, s.run, s.prefix)
    })
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        if self.runs == 0 || self.requests == 0 || self.keys == 0 || self.strategies.is_empty() {
            return Err("runs, requests, keys must be >= 1 and strategies non-empty".into());
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
        .csv::<LatencyRow>("latency.csv")
        .phase(|| "opening latency.csv".into())?;
    let mut hist_rows = run
        .staging
        .csv::<HistRow>("latency_hist.csv")
        .phase(|| "opening latency_hist.csv".into())?;
    let bar = progress_bar(ctx, ID, (p.runs as usize * p.strategies.len()) as u64);
    for r in 0..p.runs {
        for &strategy in &p.strategies {
            let what = || format!("run {r} of {strategy}");
            let spec = WorkerSpec {
                url: target.url(),
                strategy,
                limit: LimitSpec {
                    capacity: p.capacity,
                    refill_per_sec: p.refill_per_sec,
                    window_ms: p.window_ms,
                    ..LimitSpec::default()
                },
                keys: KeyChoice::Uniform {
                    prefix: format!("{prefix}{strategy}:"),
                    count: p.keys,
                },
                stop: Stop::AfterChecks(p.warmup),
                connections: 1,
                in_flight: 1,
                record_latency: false,
                seed: ctx.seed ^ u64::from(r),
                worker_index: 0,
                timeouts: ctx.timeouts,
            };
            let mut plan = ClosedLoop {
                exe: &ctx.worker_exe,
                cpus: &ctx.pin.harness,
                processes: 1,
                template: spec,
            };
            if p.warmup > 0 {
                let warm = run_closed_loop(&plan).phase(what)?;
                fail_on_errors(target, &warm).phase(what)?;
            }
            plan.template.stop = Stop::AfterChecks(p.requests);
            plan.template.record_latency = true;
            let tally = run_closed_loop(&plan).phase(what)?;
            fail_on_errors(target, &tally).phase(what)?;
            let h = tally.latency_histogram().phase(what)?;
            let us = |ns: u64| ns as f64 / 1000.0;
            rows.write(&LatencyRow {
                strategy,
                run: r,
                requests: h.len(),
                p50_us: us(h.value_at_quantile(0.50)),
                p90_us: us(h.value_at_quantile(0.90)),
                p99_us: us(h.value_at_quantile(0.99)),
                p999_us: us(h.value_at_quantile(0.999)),
                max_us: us(h.max()),
                mean_us: h.mean() / 1000.0,
            })
            .phase(|| "writing latency.csv".into())?;
            for (value, count) in crate::load::latency::buckets(&h) {
                hist_rows
                    .write(&HistRow {
                        strategy,
                        run: r,
                        value_us: us(value),
                        count,
                    })
                    .phase(|| "writing latency_hist.csv".into())?;
            }
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok(())
}
