//! libraries' measurement: race's trials and seed 001's burst, then outage's phases, each with the
//! seeds' adapters beside ratelab's own strategies.

use super::{Libraries, Params};
use crate::context::Ctx;
use crate::experiments::outage;
use crate::experiments::race::{RaceRow, Trial, RACE};
use crate::experiments::scripts;
use crate::experiments::{Concurrency, Definition, ExperimentError, Phase, Session};
use crate::limiter::{LimitSpec, Strategy};
use crate::record::CsvSink;
use indicatif::ProgressBar;
use std::path::Path;

pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let adapter = |manifest: &Path| adapter(s.ctx, manifest);
    let (naive_bucket, lua_bucket) = (adapter(&p.naive_bucket)?, adapter(&p.lua_bucket)?);
    let naive_window = adapter(&p.naive_window)?;
    let matrix = [Strategy::NaiveBucket, naive_bucket, lua_bucket];
    let burst = [Strategy::NaiveWindow, naive_window];
    let waved = [Strategy::NaiveBucket, naive_bucket];
    let in_flight = || p.configs.iter().filter(|c| c.in_flight > 1);
    let mut rows = RACE.create(&s.run.staging)?;
    let waved_trials = in_flight().count() * waved.len();
    let per_trial =
        p.configs.len() * matrix.len() + waved_trials + burst.len() + TAKE_TRIALS_PER_TRIAL;
    let bar = s.progress((p.trials as usize * per_trial) as u64);
    for trial in 0..p.trials {
        for &config in &p.configs {
            for &strategy in &matrix {
                let key = s.key(format!("m:{strategy}:{config}:{trial}"));
                let t = Trial::starting_now(strategy, config, p.checks, p.capacity, 1, key);
                rows.write(&t.run(s, p.window_ms, "matrix", trial)?)?;
                bar.inc(1);
            }
        }
        // The same in-flight checks in waves: does keeping them together restore the seed's
        // pairs through the adapter (the drift the matrix's reason supposes)?
        for &config in in_flight() {
            for &strategy in &waved {
                let key = s.key(format!("w:{strategy}:{config}:{trial}"));
                let t = Trial {
                    waves: true,
                    ..Trial::starting_now(strategy, config, p.checks, p.capacity, 1, key)
                };
                rows.write(&t.run(s, p.window_ms, "waves", trial)?)?;
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
    let take_bucket = adapter(&p.take_bucket)?;
    take_bursts(s, p, take_bucket, &mut rows, &bar)?;
    bar.finish_and_clear();
    survival(s, p, take_bucket)?;
    let (queued_bucket, boundary) = (adapter(&p.queued_bucket)?, adapter(&p.boundary)?);
    outage_phases(s, p, &[lua_bucket, queued_bucket, boundary])
}

/// Take trials per trial: two scenarios by two strategies.
const TAKE_TRIALS_PER_TRIAL: usize = 4;

/// Seed 001's concurrency test: `take_checks` at once on a fresh bucket of `take_capacity`, at
/// the seed's refill rate (`take`) and with none (`take-still`), by ratelab's lua-bucket and the
/// seed's ioredis script (`take_bucket`).
fn take_bursts(
    s: &mut Session,
    p: &Params,
    take_bucket: Strategy,
    rows: &mut CsvSink<RaceRow>,
    bar: &ProgressBar,
) -> Result<(), ExperimentError> {
    let config = Concurrency {
        processes: 1,
        in_flight: p.take_checks as usize,
    };
    for trial in 0..p.trials {
        for (scenario, refill_per_sec) in [("take", p.take_refill_per_s), ("take-still", 0.0)] {
            for strategy in [Strategy::LuaBucket, take_bucket] {
                let key = s.key(format!("t:{scenario}:{strategy}:{trial}"));
                let t = Trial {
                    refill_per_sec,
                    ..Trial::starting_now(strategy, config, p.take_checks, p.take_capacity, 1, key)
                };
                rows.write(&t.run(s, p.window_ms, scenario, trial)?)?;
                bar.inc(1);
            }
        }
    }
    Ok(())
}

/// Seed 001's "a Redis restart does not break the limiter": its script on ioredis through
/// scripts' survival events (each on a fresh server: one decision, the event, the first check
/// after it), into `survival_custom.csv`. ioredis sends a script's first call on a connection as
/// EVAL, so only an event after that first decision makes it meet NOSCRIPT and fall back.
fn survival(s: &mut Session, p: &Params, take_bucket: Strategy) -> Result<(), ExperimentError> {
    let mut rows = scripts::CUSTOM_SURVIVAL.create(&s.run.staging)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .phase(|| "building the async runtime".into())?;
    let limit = LimitSpec {
        capacity: p.take_capacity,
        refill_per_sec: p.take_refill_per_s,
        ..LimitSpec::default()
    };
    for &event in &p.survival_events {
        let what = || format!("survival of {take_bucket} after {}", event.name());
        let row = scripts::process_survival(s, limit, &rt, take_bucket, event).phase(what)?;
        rows.write(&row)?;
    }
    Ok(())
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
