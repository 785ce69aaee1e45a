//! latency's measurement.

use super::rows::{HistRow, LatencyRow, HIST, LATENCY};
use super::Params;
use crate::experiments::{ExperimentError, Phase, Session};
use crate::limiter::LimitSpec;
use crate::load::{run_closed_loop, KeyChoice, Stop, WorkerSpec};

pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let mut rows = LATENCY.create(&s.run.staging)?;
    let mut hist_rows = HIST.create(&s.run.staging)?;
    // A custom limiter's verdict is its latency against its reference: measured in this run.
    let strategies = s.with_limiters_and_references(&p.strategies);
    let bar = s.progress((p.runs as usize * strategies.len()) as u64);
    for r in 0..p.runs {
        for &strategy in &strategies {
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
