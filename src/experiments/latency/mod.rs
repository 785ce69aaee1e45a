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

mod charts;
mod report;
mod rows;

pub use rows::{HistRow, LatencyRow};

use super::{Body, Definition, ExperimentError, Phase, Render, Session, Summarize, Validate};
use crate::limiter::{LimitSpec, Strategy};
use crate::load::{run_closed_loop, KeyChoice, Stop, WorkerSpec};
use crate::record::Table;
use serde::{Deserialize, Serialize};

/// The latency experiment.
pub struct Latency;

impl Definition for Latency {
    const ID: &'static str = "latency";
    const TOML: &'static str = include_str!("../../../experiments/latency.toml");
    type Params = Params;

    const BODY: Body<Params> = body;
    const CHARTS: Render = charts::render;
    const SUMMARY: Summarize = report::summary;

    fn tables() -> Vec<Table> {
        vec![
            Table::of::<LatencyRow>("latency.csv"),
            Table::of::<HistRow>("latency_hist.csv"),
        ]
    }
}

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

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        if self.runs == 0 || self.requests == 0 || self.keys == 0 || self.strategies.is_empty() {
            return Err("runs, requests, keys must be >= 1 and strategies non-empty".into());
        }
        Ok(())
    }
}

fn body(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let mut rows = s.csv::<LatencyRow>("latency.csv")?;
    let mut hist_rows = s.csv::<HistRow>("latency_hist.csv")?;
    let bar = s.progress((p.runs as usize * p.strategies.len()) as u64);
    for r in 0..p.runs {
        for &strategy in &p.strategies {
            let what = || format!("run {r} of {strategy}");
            let limit = LimitSpec {
                capacity: p.capacity,
                refill_per_sec: p.refill_per_sec,
                window_ms: p.window_ms,
                ..LimitSpec::default()
            };
            let keys = KeyChoice::Uniform {
                prefix: s.key(format!("{strategy}:")),
                count: p.keys,
            };
            let spec = WorkerSpec::new(strategy, limit, keys, Stop::AfterChecks(p.warmup));
            let mut plan = s.closed_loop(1, spec);
            plan.template.seed ^= u64::from(r);
            if p.warmup > 0 {
                let warm = run_closed_loop(&plan).phase(what)?;
                s.fail_on_errors(&warm).phase(what)?;
            }
            plan.template.stop = Stop::AfterChecks(p.requests);
            plan.template.record_latency = true;
            let tally = run_closed_loop(&plan).phase(what)?;
            s.fail_on_errors(&tally).phase(what)?;
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
            })?;
            for (value, count) in crate::load::latency::buckets(&h) {
                hist_rows.write(&HistRow {
                    strategy,
                    run: r,
                    value_us: us(value),
                    count,
                })?;
            }
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok(())
}
