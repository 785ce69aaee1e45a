//! The breaker sweep, the question seed 000 ended on: how many timeouts should trip the breaker,
//! and how long should it stay open? A small K and a long cooldown spare users the budget but
//! leave the limiter answering by policy ("blind") long after Redis is back; a large K and a short
//! cooldown see recovery sooner but make more users wait. Measured per (K, cooldown) and with the
//! breaker off: SIGSTOP for `sweep_hung_ms` plus a seeded jitter of up to one breaker cycle, so
//! SIGCONT lands anywhere in the cycle; checks every `interval_ms` throughout; after SIGCONT,
//! checks until the first normal answer and `sweep_after_checks` more. Policy fail-open (the
//! policy changes answers, not timings). Some points run again with the probe sent by the store's
//! own task instead of a user's check, so no user pays for it.

use super::phases::{checker, paced};
use super::{Params, RunLabel, SweepRow, SWEEP};
use crate::context::Ctx;
use crate::experiments::frame::progress_bar;
use crate::experiments::{ExperimentError, Phase as _, PhaseError};
use crate::fault;
use crate::limiter::unix_ms;
use crate::load::drill::{Drill, Stop};
use crate::load::rng::SplitMix64;
use crate::record::suspend_offset_ns;
use crate::record::RunRecord;
use crate::server::RedisServer;
use crate::store::{Failure, Policy, ProbeBy, Route, Store};
use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Runs the sweep into `breaker_sweep.csv`; returns the checks during which the machine slept.
pub(super) fn run(
    ctx: &Ctx,
    p: &Params,
    rt: &tokio::runtime::Runtime,
    server: &mut RedisServer,
    record: &mut RunRecord,
) -> Result<u64, ExperimentError> {
    let mut rows = SWEEP.create(&record.staging)?;
    let grid = |ks: &[u32], cooldowns: &[u64], by: ProbeBy| -> Vec<Option<Point>> {
        (ks.iter())
            .flat_map(|&k| cooldowns.iter().map(move |&c| Some((k, c, by))))
            .collect()
    };
    let points: Vec<Option<Point>> = std::iter::once(None)
        .chain(grid(
            &p.sweep_failures,
            &p.sweep_cooldowns_ms,
            ProbeBy::Check,
        ))
        .chain(grid(
            &p.sweep_background_failures,
            &p.sweep_background_cooldowns_ms,
            ProbeBy::Background,
        ))
        .collect();
    let mut rng = SplitMix64::new(ctx.seed, 0x5ee9);
    let bar = progress_bar(
        ctx,
        "outage sweep",
        points.len() as u64 * u64::from(p.sweep_trials),
    );
    let mut suspended = 0;
    // Trials outermost, so machine noise spreads over every point alike.
    for trial in 0..p.sweep_trials {
        for &point in &points {
            let cycle = match point {
                Some((_, cooldown, _)) => cooldown + p.probe_budget_ms,
                None => p.budget_ms,
            };
            let jitter_ms = rng.below(cycle);
            let what = || format!("breaker sweep {point:?}, trial {trial}");
            let row = one(p, rt, server, point, trial, jitter_ms).phase(what)?;
            suspended += row.suspended_checks;
            rows.write(&row)?;
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok(suspended)
}

/// A breaker setting of the sweep: K, cooldown (ms) and who probes.
type Point = (u32, u64, ProbeBy);

/// One hang and recovery with a fresh store: a drill of checks while Redis is stopped, SIGCONT,
/// and a drill of checks until the first normal answer and `sweep_after_checks` more.
fn one(
    p: &Params,
    rt: &tokio::runtime::Runtime,
    server: &RedisServer,
    point: Option<Point>,
    trial: u32,
    jitter_ms: u64,
) -> Result<SweepRow, PhaseError> {
    let mut settings = p.settings(RunLabel::new(
        Policy::FailOpen,
        point.map(|(k, c, _)| (k, c)),
    ));
    if let (Some(breaker), Some((_, _, by))) = (&mut settings.breaker, point) {
        breaker.probe_by = by;
    }
    let store = Store::new(&server.url(), p.limiter(), settings)
        .map_err(|e| PhaseError::Invalid(format!("store: {}", crate::errors::one_line(&e))))?;
    let (store, key): (_, Rc<str>) = (
        Rc::new(store),
        format!("ratelab:outage:sweep:{:x}", unix_ms()).into(),
    );
    let mut row = SweepRow {
        breaker: if point.is_some() { "on" } else { "off" }.into(),
        k: point.map_or(0, |b| b.0),
        cooldown_ms: point.map_or(0, |b| b.1),
        probe_budget_ms: p.probe_budget_ms,
        probe_by: point
            .map(|(_, _, by)| crate::record::csv_text(&by))
            .unwrap_or_default(),
        trial,
        jitter_ms,
        hung_ms: 0.0,
        hung_checks: 0,
        paid_budget: 0,
        probes: 0,
        background_probes: 0,
        hung_cost_ms: 0.0,
        blind_checks: 0,
        blind_ms: None,
        suspended_checks: 0,
    };
    for _ in 0..3 {
        let slept = suspend_offset_ns();
        let answer = rt
            .block_on(store.check(&key))
            .map_err(|e| PhaseError::Invalid(e.to_string()));
        row.suspended_checks += u64::from(suspend_offset_ns() - slept > 10_000_000);
        if !answer?.outcome.is_normal() {
            return Err(PhaseError::Invalid(
                "Redis did not answer before the hang".into(),
            ));
        }
    }
    let interval = Duration::from_millis(p.interval_ms);
    let hung = fault::suspend(server)?;
    let until = Duration::from_millis(p.sweep_hung_ms + jitter_ms);
    // A timer as precise as the thread's sleep the sweep was measured with: a 2 ms pace on
    // tokio's ms ticks would run about 3 ms apart.
    let drill = Drill::<PhaseError>::new(hung.at, paced(interval, Stop::At(until))).precise();
    let request = checker(&store, &key, drill.stopper());
    let ran = rt.block_on(drill.run(request))?;
    let hung_at = hung.at;
    let resumed = hung.resume()?;
    row.hung_ms = (resumed - hung_at).as_secs_f64() * 1e3;
    for r in &ran.records {
        let a = r.out.answer()?;
        row.hung_checks += 1;
        row.paid_budget +=
            u64::from(a.route == Route::Redis && a.failure == Some(Failure::Timeout));
        row.probes += u64::from(a.route == Route::Probe);
        row.hung_cost_ms += (r.end_ns - r.start_ns) as f64 / 1e6;
        row.suspended_checks += u64::from(r.out.suspended);
    }
    recovery(p, rt, (&store, &key), resumed, &mut row)?;
    row.background_probes = store.counters().background_probes;
    Ok(row)
}

/// After SIGCONT: checks until the first normal answer and `sweep_after_checks` more, or until a
/// breaker cycle and 2 s have passed; the checks answered by policy before the first normal one
/// ("blind"), and the time to it.
fn recovery(
    p: &Params,
    rt: &tokio::runtime::Runtime,
    (store, key): (&Rc<Store>, &Rc<str>),
    resumed: Instant,
    row: &mut SweepRow,
) -> Result<(), PhaseError> {
    let cycle = Duration::from_millis(row.cooldown_ms + p.probe_budget_ms);
    let stop = Stop::At(cycle + Duration::from_secs(2));
    let drill =
        Drill::<PhaseError>::new(resumed, paced(Duration::from_millis(p.interval_ms), stop));
    let (stopper, normals) = (drill.stopper(), Rc::new(Cell::new(0)));
    let check = checker(store, key, stopper.clone());
    let enough = p.sweep_after_checks + 2;
    let request = move |call| {
        let (checked, stopper, normals) = (check(call), stopper.clone(), Rc::clone(&normals));
        async move {
            let c = checked.await;
            normals.set(
                normals.get() + u64::from(c.answer.as_ref().is_ok_and(|a| a.outcome.is_normal())),
            );
            if normals.get() >= enough {
                stopper.stop();
            }
            c
        }
    };
    for r in &rt.block_on(drill.run(request))?.records {
        row.suspended_checks += u64::from(r.out.suspended);
        match (r.out.answer()?.outcome.is_normal(), row.blind_ms) {
            (true, None) => row.blind_ms = Some(r.end_ns as f64 / 1e6),
            (true, Some(_)) => {}
            // Policy answers after recovery would mean the breaker flapped: count them as blind.
            (false, _) => row.blind_checks += 1,
        }
    }
    Ok(())
}
