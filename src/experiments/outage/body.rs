//! outage's measurement.

use super::rows::{CheckRow, Phase, PhaseRow, RunLabel, CHECKS, PHASES};
use super::{phases, sweep, Outage, Params, ID};
use crate::context::Ctx;
use crate::experiments::{Definition, ExperimentError, Phase as _, PhaseError, Session};
use crate::fault;
use crate::limiter::process::Reach;
use crate::limiter::{Decider, Invocation, LimiterError, Strategy};
use crate::load::LoadError;
use crate::record::{CsvSink, RunRecord};
use crate::server::{RedisServer, ServerError, Target};
use crate::store::{Counters, Store};
use std::rc::Rc;
use std::time::{Duration, Instant};

pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let why = Outage::MUST_OWN_SERVER.unwrap_or_default();
    let (server, rt) = server_and_runtime(&mut s.target, why)?;
    let suspended = main_runs(
        s.ctx,
        p,
        Breaker::OffAndOn,
        &rt,
        server,
        &mut s.run,
        &s.prefix,
    )? + sweep::run(s.ctx, p, &rt, server, &mut s.run)?;
    warn_suspended(&mut s.run, suspended);
    Ok(())
}

/// The server the phases break (refused unless ratelab owns it: `why`) and the runtime their
/// stores run on; libraries' outage phases use them too.
pub(crate) fn server_and_runtime<'t>(
    target: &'t mut Target,
    why: &str,
) -> Result<(&'t mut RedisServer, tokio::runtime::Runtime), ExperimentError> {
    let server = target.managed(why).phase(|| "checking the target".into())?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ServerError::from)
        .phase(|| "building the async runtime".into())?;
    Ok((server, rt))
}

/// Says loudly, on stderr and in the run's notes, that checks slept with the machine.
pub(crate) fn warn_suspended(record: &mut RunRecord, suspended: u64) {
    if suspended > 0 {
        let warning = format!(
            "WARNING: the machine was suspended during {suspended} check(s) (CLOCK_BOOTTIME \
            - CLOCK_MONOTONIC grew); their latencies are sleep, not Redis (column `suspended`)"
        );
        eprintln!("ratelab: {}: {warning}", record.id());
        record.note(warning);
    }
}

/// Which main runs put ratelab's circuit breaker in front of the decider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Breaker {
    /// Each policy with the breaker off, then on (outage's own runs).
    OffAndOn,
    /// Without it only: a middleware as its seed wrote it (libraries; seed 000 had not built one).
    Off,
}

/// The main runs through all five phases, one after another (libraries runs the seed's own
/// middleware through them too); returns suspended checks.
pub(crate) fn main_runs(
    ctx: &Ctx,
    p: &Params,
    breaker: Breaker,
    rt: &tokio::runtime::Runtime,
    server: &mut RedisServer,
    record: &mut RunRecord,
    prefix: &str,
) -> Result<u64, ExperimentError> {
    let runs = runs(ctx, p, breaker);
    let mut runner = Runner {
        p,
        rt,
        prefix,
        checks: CHECKS.create(&record.staging)?,
        phases: PHASES.create(&record.staging)?,
        bar: crate::experiments::frame::progress_bar(ctx, ID, (runs.len() * 5) as u64),
        suspended: 0,
        undecided: Vec::new(),
    };
    for run in runs {
        let counters = runner.run(server, run)?;
        let counters = serde_json::to_string(&counters).unwrap_or_default();
        record.note(format!("{run}: store counters {counters}"));
    }
    runner.bar.finish_and_clear();
    for run in &runner.undecided {
        record.note(format!(
            "{run}: no check decided in the warm-up ({:?}): its phases measure a limiter that \
             does not decide on this server",
            super::phases::WARM_UP_LIMIT
        ));
    }
    Ok(runner.suspended)
}

/// One run of the main phases: who decides, and the store that asks it.
#[derive(Debug, Clone, Copy)]
struct Run {
    /// The built-in strategy (the `strategy` parameter) or a custom limiter (`--limiter`).
    limiter: Strategy,
    label: RunLabel,
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.limiter.is_custom() {
            true => write!(f, "{}/{}", self.limiter, self.label),
            false => write!(f, "{}", self.label),
        }
    }
}

/// The built-in strategy's runs (each policy with the breaker off and on, or off only, then the
/// fail-fast runs), then each custom limiter's: each policy with the breaker off and on, or off.
/// The fail-fast runs vary how ratelab's own client reconnects, which a limiter process does by
/// itself.
fn runs(ctx: &Ctx, p: &Params, breaker: Breaker) -> Vec<Run> {
    let on = Some((p.breaker_failures, p.breaker_cooldown_ms));
    let breakers = match breaker {
        Breaker::OffAndOn => vec![None, on],
        Breaker::Off => vec![None],
    };
    let policy_runs = |limiter| {
        let breakers = &breakers;
        (p.policies.iter()).flat_map(move |&policy| {
            breakers.iter().map(move |&b| Run {
                limiter,
                label: RunLabel::new(policy, b),
            })
        })
    };
    let mut runs: Vec<Run> = policy_runs(p.strategy).collect();
    runs.extend((p.fail_fast_policies.iter()).map(|&policy| Run {
        limiter: p.strategy,
        label: RunLabel::failing_fast(policy),
    }));
    for &limiter in ctx.limiters.iter().filter(|l| l.is_custom()) {
        runs.extend(policy_runs(limiter));
    }
    runs
}

/// Who decides in a run, built once for it: the built-in strategy's limiter, or a custom
/// limiter's decider (a limiter process's adapter started against the server, given the budget
/// as its client's timeout: the timeout the store's own client has).
fn decider(p: &Params, limiter: Strategy, url: &str) -> Result<Decider, LimiterError> {
    Decider::reaching(
        limiter,
        p.spec(),
        Invocation::default(),
        &Reach::to(url, p.budget_ms),
    )
}

/// What every main run writes into, and the run's totals.
struct Runner<'a> {
    p: &'a Params,
    rt: &'a tokio::runtime::Runtime,
    prefix: &'a str,
    checks: CsvSink<CheckRow>,
    phases: CsvSink<PhaseRow>,
    bar: indicatif::ProgressBar,
    suspended: u64,
    /// The custom limiters' runs whose warm-up never had a decision.
    undecided: Vec<String>,
}

impl Runner<'_> {
    /// `run` through all five phases with a fresh store and decider; the store's counters.
    fn run(&mut self, server: &mut RedisServer, run: Run) -> Result<Counters, ExperimentError> {
        let (p, label) = (self.p, run.label);
        let what = || format!("{run}");
        // A mode without a fallback loads its script when its service starts, as its library does:
        // each run is a new start, on a server the runs before it restarted.
        (self.rt.block_on(async {
            let client = crate::server::endpoint::client(&server.url())?;
            let mut con = client.get_multiplexed_async_connection().await?;
            crate::limiter::custom::initialise(&mut con, run.limiter).await
        }))
        .phase(what)?;
        let decider = decider(p, run.limiter, &server.url())
            .map_err(LoadError::from)
            .phase(what)?;
        let store = (Store::new(&server.url(), decider, p.settings(label)))
            .map(Rc::new)
            .map_err(|e| PhaseError::Invalid(format!("store: {}", crate::errors::one_line(&e))))
            .phase(what)?;
        let mut driver = phases::Driver {
            rt: self.rt,
            store: Rc::clone(&store),
            key: format!("{}{run}", self.prefix).into(),
            limiter: run.limiter,
            label,
            interval: Duration::from_millis(p.interval_ms),
            budget: Duration::from_millis(p.budget_ms),
            checks: &mut self.checks,
        };
        if !driver.warm_up(p.warmup).phase(what)? {
            self.undecided.push(run.to_string());
        }
        let (phases, bar, suspended) = (&mut self.phases, &self.bar, &mut self.suspended);
        let mut measure = |phase: Phase, fault_at: Instant| -> Result<(), ExperimentError> {
            let what = || format!("{run}, {phase} phase");
            let mut row = (driver.phase(phase, fault_at, p.checks_per_phase(label))).phase(what)?;
            // The hung phase must find a client connected, as a stopped server's clients are.
            if phase == Phase::Restarted {
                driver.until_normal(&mut row, fault_at).phase(what)?;
            }
            *suspended += row.suspended_checks;
            phases.write(&row)?;
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
        // A limiter process that fell silent in the last checks stops the run here.
        (store.settle().map_err(LoadError::from))
            .phase(|| format!("{run}: the answers its limiter owed"))?;
        Ok(store.counters())
    }
}
