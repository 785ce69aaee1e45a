//! # window-edge
//! Hypothesis (seed 001): a fixed window of L per second admits L at the end of one window and L
//! again at the start of the next, so up to 2L pass inside one second. A token bucket (capacity
//! L, refilling L/s) admits its burst L plus only what refills meanwhile; GCRA and the
//! sliding-window counter should behave like it.
//!
//! Method: per trial and strategy, a fresh key; L requests evenly spaced over the last `edge_ms`
//! of a window and L over the first `edge_ms` of the next, scheduled by the open-loop generator
//! and aligned to the window boundary on the clock the strategy reads: the caller's for
//! incr-window, Redis's for the scripts (its offset from ours is measured with TIME). Every
//! request's send time is kept; the result is the most admitted in any sliding 1-second span,
//! beside `smooth_bound`, the most a limit of L/s refilling continuously could admit over the
//! time the admitted requests took (L + L x span).
//!
//! Writes `window-edge/window-edge.csv` (one row per trial), `window-edge/requests.csv` (one row
//! per request, times in ms from the window boundary), `window-edge/meta.json`.

mod bursts;

use super::common::{fail_on_errors, progress_bar, run_experiment, Validate};
use super::common::{ExperimentError, Phase, PhaseError, RunRecord};
use crate::context::Ctx;
use crate::limiter::Strategy;
use crate::load::{run_open_loop, OpenLoop};
use crate::server::Target;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

const ID: &str = "window-edge";
/// The seed's window, and the sliding span admissions are counted over.
const WINDOW_MS: u64 = 1000;

/// Parameters; defaults in `experiments/window-edge.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub trials: u32,
    pub limit: u64,
    pub edge_ms: u64,
    pub strategies: Vec<Strategy>,
    pub connections: usize,
    pub lead_ms: u64,
}

/// One trial of one strategy.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WindowEdgeRow {
    pub strategy: Strategy,
    pub trial: u32,
    pub limit: u64,
    pub offered: u64,
    pub admitted: u64,
    /// Admitted of the burst before the boundary, and of the one after it.
    pub admitted_before_edge: u64,
    pub admitted_after_edge: u64,
    /// The most admitted requests sent within any 1-second span.
    pub max_admitted_in_1s: u64,
    pub max_per_limit: f64,
    /// From the first admitted request's send to the last one's reply, ms.
    pub admit_span_ms: f64,
    /// L + L/s x admit_span: what continuous refill at the limit could have admitted.
    pub smooth_bound: f64,
    /// The window boundary the bursts straddle, Unix ms on this machine's clock.
    pub boundary_unix_ms: u64,
    /// The latest start against the schedule, µs.
    pub max_late_us: f64,
}

/// One request, times in ms from the window boundary (negative: before it).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RequestRow {
    pub strategy: Strategy,
    pub trial: u32,
    pub seq: usize,
    pub intended_ms: f64,
    pub sent_ms: f64,
    pub done_ms: f64,
    pub allowed: bool,
}

/// Runs the experiment into `ctx.out_dir/window-edge/`.
pub fn run(ctx: &Ctx) -> Result<PathBuf, ExperimentError> {
    run_experiment(ctx, super::Experiment::WindowEdge, |s, p: &Params| {
        let (offset_ns, rtt_ns) =
            redis_clock_offset(s.target).phase(|| "reading Redis TIME".into())?;
        s.run.note(format!("Redis's clock minus ours: {:.3} ms (TIME round trip {:.3} ms); schedules for strategies on Redis TIME are aligned to Redis's window boundaries with it.", offset_ns as f64 / 1e6, rtt_ns as f64 / 1e6));
        s.run.note("A request counts at its send time; every strategy starts each trial on a fresh key (a full bucket, an empty window).");
        body(s.ctx, p, s.target, s.run, s.prefix, offset_ns)
    })
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        if self.trials == 0
            || self.limit == 0
            || self.connections == 0
            || !(1..500).contains(&self.edge_ms)
        {
            return Err("trials, limit, connections must be >= 1 and edge_ms within 1..499".into());
        }
        Ok(())
    }
}

/// Redis's clock minus ours in ns, from the quickest of a few TIME calls, and that round trip.
fn redis_clock_offset(target: &Target) -> Result<(i64, u64), PhaseError> {
    let mut con = target.connection()?;
    let mut best: Option<(i64, u64)> = None;
    for _ in 0..5 {
        let before = unix_ms_f();
        let (secs, micros): (u64, u64) = redis::cmd("TIME").query(&mut con)?;
        let after = unix_ms_f();
        let redis_ms = secs as f64 * 1e3 + micros as f64 / 1e3;
        let offset = ((redis_ms - (before + after) / 2.0) * 1e6) as i64;
        let rtt = ((after - before) * 1e6) as u64;
        if best.is_none_or(|(_, r)| rtt < r) {
            best = Some((offset, rtt));
        }
    }
    best.ok_or_else(|| PhaseError::Invalid("no TIME reply".into()))
}

fn unix_ms_f() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1e3)
        .unwrap_or(0.0)
}

/// Whether a strategy names its windows by the caller's clock (the rest read Redis TIME).
fn on_caller_clock(s: Strategy) -> bool {
    matches!(
        s,
        Strategy::NaiveWindow | Strategy::IncrWindow | Strategy::LuaWindow | Strategy::MultiWindow
    )
}

fn body(
    ctx: &Ctx,
    p: &Params,
    target: &Target,
    run: &mut RunRecord,
    prefix: &str,
    offset_ns: i64,
) -> Result<(), ExperimentError> {
    let mut rows = run
        .staging
        .csv::<WindowEdgeRow>("window-edge.csv")
        .phase(|| "opening window-edge.csv".into())?;
    let mut requests = run
        .staging
        .csv::<RequestRow>("requests.csv")
        .phase(|| "opening requests.csv".into())?;
    let bar = progress_bar(ctx, ID, u64::from(p.trials) * p.strategies.len() as u64);
    for trial in 0..p.trials {
        for &strategy in &p.strategies {
            let what = || format!("trial {trial} of {strategy}");
            let offset = if on_caller_clock(strategy) {
                0
            } else {
                offset_ns
            };
            let key = format!("{prefix}{strategy}:{trial}");
            let plan = OpenLoop {
                exe: &ctx.worker_exe,
                cpus: &ctx.pin.harness,
                processes: 1,
                template: bursts::spec(ctx, p, &target.url(), strategy, offset, &key),
            };
            let tally = run_open_loop(&plan).phase(what)?;
            fail_on_errors(target, &tally.checks).phase(what)?;
            run.open_loop_run(&what(), &tally);
            let (row, per_request) = bursts::summarize(p, strategy, trial, &tally);
            for r in &per_request {
                requests.write(r).phase(|| "writing requests.csv".into())?;
            }
            rows.write(&row)
                .phase(|| "writing window-edge.csv".into())?;
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_profiles_parse_and_bursts_straddle_the_boundary() {
        for profile in [
            crate::experiments::params::Profile::Quick,
            crate::experiments::params::Profile::Full,
        ] {
            let (p, _): (Params, _) = crate::experiments::params::resolve(
                ID,
                super::super::Experiment::WindowEdge.params_toml(),
                profile,
                &[],
            )
            .unwrap();
            assert_eq!((p.limit, p.edge_ms), (100, 50));
            assert!(p.strategies.contains(&Strategy::IncrWindow));
        }
        assert!(on_caller_clock(Strategy::IncrWindow) && !on_caller_clock(Strategy::LuaSwc));
    }
}
