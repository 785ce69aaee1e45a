//! atomic's measurement.

use super::rows::AtomicRow;
use super::Params;
use crate::experiments::measure::measure;
use crate::experiments::{ExperimentError, Session};
use crate::limiter::{unix_ms, LimitSpec};
use crate::load::WorkerSpec;

pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let mut rows = s.csv::<AtomicRow>("atomic.csv")?;
    let strategies = s.with_limiters(&p.strategies);
    let total = p.trials as usize * p.configs.len() * strategies.len() * p.capacities.len();
    let bar = s.progress(total as u64);
    // On a server others may use, their commands would land in the count: leave it empty.
    let own_server = s.target.is_managed();
    if !own_server {
        s.note("server_commands is empty: the server is not ratelab's own (--redis-url).");
    }
    for trial in 0..p.trials {
        for &capacity in &p.capacities {
            for &config in &p.configs {
                for &strategy in &strategies {
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
