//! outage's measurement.

use super::rows::{Phase, RunLabel, CHECKS, PHASES};
use super::{phases, sweep, Outage, Params, ID};
use crate::context::Ctx;
use crate::experiments::{Definition, ExperimentError, Phase as _, PhaseError, Session};
use crate::fault;
use crate::record::RunRecord;
use crate::server::{RedisServer, ServerError};
use crate::store::Store;
use std::rc::Rc;
use std::time::{Duration, Instant};

pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let why = Outage::MUST_OWN_SERVER.unwrap_or_default();
    let server = s
        .target
        .managed(why)
        .phase(|| "checking the target".into())?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ServerError::from)
        .phase(|| "building the async runtime".into())?;
    let suspended = main_runs(s.ctx, p, &rt, server, &mut s.run, &s.prefix)?
        + sweep::run(s.ctx, p, &rt, server, &mut s.run)?;
    if suspended > 0 {
        let warning = format!(
            "WARNING: the machine was suspended during {suspended} check(s) (CLOCK_BOOTTIME \
            - CLOCK_MONOTONIC grew); their latencies are sleep, not Redis (column `suspended`)"
        );
        eprintln!("ratelab: outage: {warning}");
        s.run.note(warning);
    }
    Ok(())
}

/// The four runs (policy x breaker off/on) through all five phases; returns suspended checks.
fn main_runs(
    ctx: &Ctx,
    p: &Params,
    rt: &tokio::runtime::Runtime,
    server: &mut RedisServer,
    run: &mut RunRecord,
    prefix: &str,
) -> Result<u64, ExperimentError> {
    let mut checks = CHECKS.create(&run.staging)?;
    let mut phase_rows = PHASES.create(&run.staging)?;
    let mut runs: Vec<RunLabel> = (p.policies.iter())
        .flat_map(|&policy| {
            [None, Some((p.breaker_failures, p.breaker_cooldown_ms))]
                .map(|b| RunLabel::new(policy, b))
        })
        .collect();
    runs.extend((p.fail_fast_policies.iter()).map(|&policy| RunLabel::failing_fast(policy)));
    let bar = crate::experiments::frame::progress_bar(ctx, ID, (runs.len() * 5) as u64);
    let mut suspended = 0;
    for label in runs {
        let what = || format!("{label}");
        let store = (Store::new(&server.url(), p.limiter(), p.settings(label)))
            .map(Rc::new)
            .map_err(|e| PhaseError::Invalid(format!("store: {}", crate::errors::one_line(&e))))
            .phase(what)?;
        let mut driver = phases::Driver {
            rt,
            store: Rc::clone(&store),
            key: format!("{prefix}{label}").into(),
            label,
            interval: Duration::from_millis(p.interval_ms),
            checks: &mut checks,
        };
        driver.warm_up(p.warmup).phase(what)?;
        let mut measure = |phase: Phase, fault_at: Instant| -> Result<(), ExperimentError> {
            let row = (driver.phase(phase, fault_at, p.checks_per_phase(label)))
                .phase(|| format!("{label}, {phase} phase"))?;
            suspended += row.suspended_checks;
            phase_rows.write(&row)?;
            bar.inc(1);
            Ok(())
        };
        measure(Phase::Healthy, Instant::now())?;
        measure(Phase::Dead, fault::kill(server).phase(what)?)?;
        measure(Phase::Restarted, fault::restart(server).phase(what)?)?;
        let hung = fault::suspend(server).phase(what)?;
        measure(Phase::Hung, hung.at)?;
        // An error above drops `hung`, which continues the server.
        measure(Phase::Resumed, hung.resume().phase(what)?)?;
        let counters = serde_json::to_string(&store.counters()).unwrap_or_default();
        run.note(format!("{label}: store counters {counters}"));
    }
    bar.finish_and_clear();
    Ok(suspended)
}
