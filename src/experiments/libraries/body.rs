//! libraries' measurement: race's trials and seed 001's burst, then outage's phases, each with the
//! seeds' adapters beside ratelab's own strategies.

use super::{Libraries, Params};
use crate::context::Ctx;
use crate::experiments::outage;
use crate::experiments::race::{Trial, RACE};
use crate::experiments::{Concurrency, Definition, ExperimentError, Session};
use crate::limiter::Strategy;
use std::path::Path;

pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let adapter = |manifest: &Path| adapter(s.ctx, manifest);
    let (naive_bucket, lua_bucket) = (adapter(&p.naive_bucket)?, adapter(&p.lua_bucket)?);
    let naive_window = adapter(&p.naive_window)?;
    let matrix = [Strategy::NaiveBucket, naive_bucket, lua_bucket];
    let burst = [Strategy::NaiveWindow, naive_window];
    let mut rows = RACE.create(&s.run.staging)?;
    let bar =
        s.progress((p.trials as usize * (p.configs.len() * matrix.len() + burst.len())) as u64);
    for trial in 0..p.trials {
        for &config in &p.configs {
            for &strategy in &matrix {
                let key = s.key(format!("m:{strategy}:{config}:{trial}"));
                let t = Trial::starting_now(strategy, config, p.checks, p.capacity, 1, key);
                rows.write(&t.run(s, p.window_ms, "matrix", trial)?)?;
                bar.inc(1);
            }
        }
        for &strategy in &burst {
            let config = Concurrency {
                processes: 1,
                in_flight: p.burst_hits as usize,
            };
            let key = s.key(format!("s:{strategy}:{trial}"));
            let t = Trial::starting_now(strategy, config, p.burst_hits, p.burst_limit, 1, key);
            rows.write(&t.run(s, p.window_ms, "seed001", trial)?)?;
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    let (queued_bucket, boundary) = (adapter(&p.queued_bucket)?, adapter(&p.boundary)?);
    outage_phases(s, p, &[lua_bucket, queued_bucket, boundary])
}

/// The strategy a manifest of the parameters was registered as (the frame loaded them all).
fn adapter(ctx: &Ctx, manifest: &Path) -> Result<Strategy, ExperimentError> {
    let named = manifest.display().to_string();
    (ctx.limiters.iter().copied())
        .find(|l| match l {
            Strategy::Custom(name) => name.definition().is_some_and(|d| d.manifest == named),
            _ => false,
        })
        .ok_or_else(|| crate::experiments::params::ParamError::Invalid {
            experiment: Libraries::ID.into(),
            reason: format!("{named} was not loaded"),
        })
        .map_err(ExperimentError::from)
}

/// outage's main runs (fail-open, no breaker) for ratelab's store on lua-bucket, then for
/// the store asking each of `adapters` (seed 000's token bucket on node-redis with the offline queue
/// off, then on, and the do-nothing one).
fn outage_phases(
    s: &mut Session,
    p: &Params,
    adapters: &[Strategy],
) -> Result<(), ExperimentError> {
    let phases = p.outage();
    let mut ctx = s.ctx.clone();
    ctx.limiters = adapters.to_vec();
    let why = Libraries::MUST_OWN_SERVER.unwrap_or_default();
    let (server, rt) = outage::server_and_runtime(&mut s.target, why)?;
    let off = outage::Breaker::Off;
    let suspended = outage::main_runs(&ctx, &phases, off, &rt, server, &mut s.run, &s.prefix)?;
    outage::warn_suspended(&mut s.run, suspended);
    Ok(())
}
