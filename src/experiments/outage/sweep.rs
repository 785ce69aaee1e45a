//! The breaker sweep, the question seed 000 ended on: how many timeouts should trip the breaker,
//! and how long should it stay open? A small K and a long cooldown spare users the budget but
//! leave the limiter answering by policy ("blind") long after Redis is back; a large K and a short
//! cooldown see recovery sooner but make more users wait. Measured per (K, cooldown) and with the
//! breaker off: SIGSTOP for `sweep_hung_ms` plus a seeded jitter of up to one breaker cycle, so
//! SIGCONT lands anywhere in the cycle; checks every `interval_ms` throughout; after SIGCONT,
//! checks until the first normal answer and `sweep_after_checks` more. Policy fail-open (the
//! policy changes answers, not timings).

use super::{Params, RunLabel};
use crate::context::Ctx;
use crate::experiments::frame::progress_bar;
use crate::experiments::{ExperimentError, Phase as _, PhaseError};
use crate::fault;
use crate::limiter::unix_ms;
use crate::load::rng::SplitMix64;
use crate::record::suspend_offset_ns;
use crate::record::RunRecord;
use crate::server::RedisServer;
use crate::store::{Failure, Policy, Route, Store};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// One sweep point in one trial.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SweepRow {
    /// `off` or `on`.
    pub breaker: String,
    /// K (0 when off).
    pub k: u32,
    pub cooldown_ms: u64,
    /// The budget of the breaker's recovery probe (a normal check has the whole call budget).
    pub probe_budget_ms: u64,
    pub trial: u32,
    /// Added to `sweep_hung_ms` for this trial (seeded).
    pub jitter_ms: u64,
    /// How long Redis was stopped.
    pub hung_ms: f64,
    /// Checks made while Redis was stopped.
    pub hung_checks: u64,
    /// Hung checks that asked with the full budget and timed out.
    pub paid_budget: u64,
    /// Recovery probes while hung (each paid the probe budget).
    pub probes: u64,
    /// All hung checks' latencies added up: what users spent waiting.
    pub hung_cost_ms: f64,
    /// Checks answered by policy after SIGCONT, before the first normal answer.
    pub blind_checks: u64,
    /// SIGCONT to the end of the first normal answer (empty: none before the deadline).
    pub blind_ms: Option<f64>,
    pub suspended_checks: u64,
}

/// Runs the sweep into `breaker_sweep.csv`; returns the checks during which the machine slept.
pub(super) fn run(
    ctx: &Ctx,
    p: &Params,
    rt: &tokio::runtime::Runtime,
    server: &mut RedisServer,
    record: &mut RunRecord,
) -> Result<u64, ExperimentError> {
    let mut rows = record.staging.csv::<SweepRow>("breaker_sweep.csv")?;
    let points: Vec<Option<(u32, u64)>> =
        std::iter::once(None)
            .chain(p.sweep_failures.iter().flat_map(|&k| {
                (p.sweep_cooldowns_ms.iter()).map(move |&cooldown| Some((k, cooldown)))
            }))
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
                Some((_, cooldown)) => cooldown + p.probe_budget_ms,
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

/// One hang and recovery with a fresh store.
fn one(
    p: &Params,
    rt: &tokio::runtime::Runtime,
    server: &RedisServer,
    point: Option<(u32, u64)>,
    trial: u32,
    jitter_ms: u64,
) -> Result<SweepRow, PhaseError> {
    let store = Store::new(
        &server.url(),
        p.limiter(),
        p.settings(RunLabel::new(Policy::FailOpen, point)),
    )
    .map_err(|e| PhaseError::Invalid(format!("store: {}", crate::errors::one_line(&e))))?;
    let key = format!("ratelab:outage:sweep:{:x}", unix_ms());
    let interval = Duration::from_millis(p.interval_ms);
    let mut row = SweepRow {
        breaker: if point.is_some() { "on" } else { "off" }.into(),
        k: point.map_or(0, |b| b.0),
        cooldown_ms: point.map_or(0, |b| b.1),
        probe_budget_ms: p.probe_budget_ms,
        trial,
        jitter_ms,
        hung_ms: 0.0,
        hung_checks: 0,
        paid_budget: 0,
        probes: 0,
        hung_cost_ms: 0.0,
        blind_checks: 0,
        blind_ms: None,
        suspended_checks: 0,
    };
    let check = |row: &mut SweepRow| {
        let slept = suspend_offset_ns();
        let t0 = Instant::now();
        let answer = rt.block_on(store.check(&key));
        let done = Instant::now();
        row.suspended_checks += u64::from(suspend_offset_ns() - slept > 10_000_000);
        let answer = answer.map_err(|e| PhaseError::Invalid(e.to_string()))?;
        Ok::<_, PhaseError>((answer, t0, done))
    };
    for _ in 0..3 {
        if !check(&mut row)?.0.outcome.is_normal() {
            return Err(PhaseError::Invalid(
                "Redis did not answer before the hang".into(),
            ));
        }
    }

    let hung = fault::suspend(server)?;
    let until = hung.at + Duration::from_millis(p.sweep_hung_ms + jitter_ms);
    let mut next = Instant::now();
    while next < until {
        sleep_until(next);
        let (a, t0, done) = check(&mut row)?;
        // As in the phases: the next check an interval after this one started, or right after it.
        next = (next + interval).max(done);
        row.hung_checks += 1;
        row.paid_budget +=
            u64::from(a.route == Route::Redis && a.failure == Some(Failure::Timeout));
        row.probes += u64::from(a.route == Route::Probe);
        row.hung_cost_ms += (done - t0).as_secs_f64() * 1e3;
    }
    let hung_at = hung.at;
    let resumed = hung.resume()?;
    row.hung_ms = (resumed - hung_at).as_secs_f64() * 1e3;

    let cooldown = Duration::from_millis(row.cooldown_ms + p.probe_budget_ms);
    let deadline = resumed + cooldown + Duration::from_secs(2);
    let mut after = 0;
    let mut next = Instant::now();
    while after <= p.sweep_after_checks && Instant::now() < deadline {
        sleep_until(next);
        let (a, _, done) = check(&mut row)?;
        next = (next + interval).max(done);
        match (a.outcome.is_normal(), row.blind_ms) {
            (true, None) => row.blind_ms = Some((done - resumed).as_secs_f64() * 1e3),
            (true, Some(_)) => after += 1,
            (false, None) => row.blind_checks += 1,
            // Policy answers after recovery would mean the breaker flapped: count them as blind.
            (false, Some(_)) => row.blind_checks += 1,
        }
    }
    Ok(row)
}

/// Sleeps until `at` (at once if it has passed): the sweep's checks keep a fixed schedule.
fn sleep_until(at: Instant) {
    let now = Instant::now();
    if at > now {
        std::thread::sleep(at - now);
    }
}
