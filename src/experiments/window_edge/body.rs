//! window-edge's measurement.

use super::{bursts, on_caller_clock, redis_clock_offset, Params};
use super::{REQUESTS, WINDOW_EDGE};
use crate::experiments::{ExperimentError, Phase, Session};
use crate::load::run_open_loop;

pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let (offset_ns, rtt_ns) =
        redis_clock_offset(&s.target).phase(|| "reading Redis TIME".into())?;
    s.note(format!("Redis's clock minus ours: {:.3} ms (TIME round trip {:.3} ms); schedules for strategies on \
        Redis TIME are aligned to Redis's window boundaries with it.", offset_ns as f64 / 1e6, rtt_ns as f64 / 1e6));
    let mut rows = WINDOW_EDGE.create(&s.run.staging)?;
    let mut requests = REQUESTS.create(&s.run.staging)?;
    let strategies = s.with_limiters(&p.strategies);
    let bar = s.progress(u64::from(p.trials) * strategies.len() as u64);
    for trial in 0..p.trials {
        for &strategy in &strategies {
            let what = || format!("trial {trial} of {strategy}");
            let offset = if on_caller_clock(strategy) {
                0
            } else {
                offset_ns
            };
            let key = s.key(format!("{strategy}:{trial}"));
            let plan = s.open_loop(1, bursts::spec(s.ctx, p, strategy, offset, &key));
            let tally = run_open_loop(&plan).phase(what)?;
            s.fail_on_errors(&tally.checks).phase(what)?;
            s.run.open_loop_run(&what(), &tally);
            let (row, per_request) = bursts::summarize(p, strategy, trial, &tally);
            for r in &per_request {
                requests.write(r)?;
            }
            rows.write(&row)?;
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok(())
}
