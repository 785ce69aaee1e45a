//! atomic's measurement.

use super::rows::{AtomicRow, RoundTripRow};
use super::Params;
use super::{ATOMIC, ROUND_TRIPS};
use crate::analysis::stats::Summary;
use crate::experiments::limiters::cost_needs_limiters;
use crate::experiments::measure::measure;
use crate::experiments::{ExperimentError, Session};
use crate::limiter::{unix_ms, LimitSpec, Strategy};
use crate::load::WorkerSpec;

pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    // Validation refused a cost to the built-in strategies: a custom limiter must take it.
    cost_needs_limiters(s, p.cost)?;
    let mut rows = ATOMIC.create(&s.run.staging)?;
    let mut round_trips = ROUND_TRIPS.create(&s.run.staging)?;
    let strategies = s.with_limiters(&p.strategies);
    let total = p.trials as usize * p.configs.len() * strategies.len() * p.capacities.len();
    let bar = s.progress(total as u64 + (p.round_trip_trials as usize * p.configs.len()) as u64);
    // On a server others may use, their commands would land in the count: leave it empty.
    let own_server = s.target.is_managed();
    if !own_server {
        s.note("server_commands is empty: the server is not ratelab's own (--redis-url).");
    }
    // Admitted counts so far per (capacity, config, strategy), in the loops' order.
    let mut admitted: Vec<Vec<f64>> = vec![Vec::new(); total / p.trials as usize];
    for trial in 0..p.trials {
        // A GET per round trip at every configuration, in the same trials as the decisions.
        for &config in p.configs.iter().filter(|_| trial < p.round_trip_trials) {
            let what = || format!("trial {trial} of GET round trips at {config}");
            let key = s.key(format!("get:{config}:{trial}"));
            let spec = WorkerSpec::one_key(
                Strategy::Get,
                LimitSpec::default(),
                &key,
                p.checks,
                config.in_flight,
            );
            let m = measure(&s.target, &s.closed_loop(config.processes, spec), &what)?;
            let t = &m.tally;
            round_trips.write(&RoundTripRow {
                processes: config.processes,
                in_flight: config.in_flight,
                trial,
                checks: t.admitted + t.denied,
                errors: t.errors,
                redis_cpu_us: m.server.main_thread_cpu_us,
                cpu_us_per_round_trip: m.cpu_us_per_decision(),
                elapsed_ms: t.elapsed_ns as f64 / 1e6,
            })?;
            bar.inc(1);
        }
        let mut configuration = 0;
        for &capacity in &p.capacities {
            for &config in &p.configs {
                for &strategy in &strategies {
                    let so_far = &mut admitted[configuration];
                    configuration += 1;
                    if trial >= p.min_trials && settled(so_far, p.settle_checks) {
                        bar.inc(1);
                        continue;
                    }
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
                    let spec = WorkerSpec {
                        cost: p.cost,
                        ..WorkerSpec::one_key(strategy, limit, &key, p.checks, config.in_flight)
                    };
                    let m = measure(&s.target, &s.closed_loop(config.processes, spec), &what)?;
                    let t = &m.tally;
                    so_far.push(t.admitted as f64);
                    // Every decided check sent one EXEC, and each retry another.
                    let watch = strategy == Strategy::WatchBucket;
                    rows.write(&AtomicRow {
                        strategy,
                        processes: config.processes,
                        in_flight: config.in_flight,
                        trial,
                        capacity,
                        cost: p.cost,
                        checks: t.total(),
                        admitted: t.admitted,
                        refused: t.denied,
                        errors: t.errors,
                        watch_retries: t.retries,
                        watch_aborts: t.aborted,
                        watch_transactions: if watch {
                            t.admitted + t.denied + t.retries
                        } else {
                            0
                        },
                        watch_transactions_aborted: if watch { t.retries + t.aborted } else { 0 },
                        redis_calls: t.redis_calls,
                        server_commands: own_server.then(|| m.server.commands_executed()),
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

/// Whether more trials would not move a configuration's admitted count: its 95% confidence
/// interval is within +- `checks` (a configuration exact in every trial so far settles at once).
fn settled(admitted: &[f64], checks: f64) -> bool {
    Summary::of(admitted)
        .and_then(|s| s.ci95_half_width())
        .is_some_and(|half| half <= checks)
}

#[cfg(test)]
mod tests {
    use super::settled;

    #[test]
    fn exact_trials_settle_and_spread_ones_do_not() {
        assert!(settled(&[100.0, 100.0, 100.0], 2.0));
        // sd 0.577, t(2) 4.303: half width 1.43.
        assert!(settled(&[1000.0, 1000.0, 999.0], 2.0));
        assert!(!settled(&[725.0, 767.0, 738.0], 2.0));
        // One trial has no interval.
        assert!(!settled(&[100.0], 2.0));
    }
}
