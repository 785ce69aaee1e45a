//! # libraries
//! Hypothesis (seeds 000, 001): what race and outage measure of ratelab's Rust emulation of the
//! seeds' middlewares, the middlewares show on their own clients. Seed 000's naive bucket on
//! node-redis admits the limit times the requests in flight from one process, its token bucket
//! script exactly the limit; seed 001's GET then MULTI INCR EXPIRE on ioredis lets a burst of 500
//! through a window of 100; with node-redis's offline queue disabled a dead Redis fails every check
//! at once and a hung one makes every check wait its whole budget; with the queue left on, a dead
//! Redis makes every check wait its budget too. Seed 001's concurrency test (1,000 take() calls at
//! once on a fresh bucket of 100) admits exactly 100 with its script on ioredis, and that script
//! decides the first check after a script flush (defineCommand falls back to EVAL) and a restart.
//!
//! Method: the seeds' middlewares as limiter processes (examples/adapters/seed000-node-redis and
//! seed001-ioredis, each on the client library its seed used, pinned by its lock file), driven by
//! race's trials and outage's phases beside ratelab's own strategies in the same run: a trial's
//! worker processes each start their own adapter; outage's store asks the adapter, whose client
//! gets the store's budget as its timeout.
//!
//! Writes `libraries/race.csv` (race's rows: scenario `matrix`, `seed001`, `take` or `take-still`),
//! `libraries/outage.csv` and `libraries/phases.csv` (outage's rows; `limiter` names who decided),
//! `libraries/survival_custom.csv` (scripts' rows), `limiters.csv`, `libraries/meta.json`.

mod body;

use super::limiters::{ClaimsAt, Verdict};
use super::{Body, Concurrency, Definition, Render, Summarize, Validate};
use crate::analysis::claims::LimiterClaim;
use crate::analysis::AnalysisError;
use crate::charts::ChartError;
use crate::record::Table;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The libraries experiment.
pub struct Libraries;

impl Definition for Libraries {
    const ID: &'static str = "libraries";
    const TOML: &'static str = include_str!("../../../experiments/libraries.toml");
    const MUST_OWN_SERVER: Option<&'static str> =
        Some("its outage phases SIGKILL, restart, SIGSTOP and SIGCONT the server");
    type Params = Params;
    const VERDICTS: super::limiters::Verdicts = verdicts;
    const LIMITER_CLAIMS: super::limiters::Claims = limiter_claims;

    fn own_limiters(p: &Params) -> Vec<PathBuf> {
        vec![
            p.naive_bucket.clone(),
            p.lua_bucket.clone(),
            p.queued_bucket.clone(),
            p.naive_window.clone(),
            p.take_bucket.clone(),
            p.boundary.clone(),
        ]
    }

    const BODY: Body<Params> = body::run;
    const CHARTS: Render = charts;
    const SUMMARY: Summarize = summary;

    fn tables() -> Vec<Table> {
        vec![
            super::race::RACE.table(),
            super::outage::CHECKS.table(),
            super::outage::PHASES.table(),
            super::scripts::CUSTOM_SURVIVAL.table(),
            // Its adapters, probed by the frame as --limiter's are (every run has them).
            Table::of::<super::limiters::LimiterRow>(super::limiters::LIMITERS_CSV),
            Table::of_custom_limiters::<super::limiters::PromiseRow>(super::limiters::PROMISES_CSV),
        ]
    }
}

/// race's chart of the trials and outage's of the phases, from this experiment's CSVs.
fn charts(dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let mut written = super::race::render_charts(dir)?;
    written.extend(super::outage::render_charts(dir)?);
    Ok(written)
}

/// race's summary of the trials, then outage's of the phases.
fn summary(dir: &Path) -> Result<String, AnalysisError> {
    Ok(format!(
        "{}\nOutage phases:\n\n{}",
        super::race::summary(dir)?,
        super::outage::summary(dir)?
    ))
}

/// What race and outage say of each adapter, each only of the adapters it ran.
fn verdicts(dir: &Path) -> Result<Vec<Verdict>, AnalysisError> {
    let mut out = super::race::verdicts(dir)?;
    let phases = super::outage::PHASES.read(dir)?;
    let in_outage =
        |name: &str| (phases.iter()).any(|r| r.limiter.is_some_and(|l| l.to_string() == name));
    out.extend(
        (super::outage::verdicts(dir)?)
            .into_iter()
            .filter(|v| in_outage(&v.limiter)),
    );
    Ok(out)
}

/// race's, outage's and scripts' claims about each adapter, each only where it ran.
fn limiter_claims(at: &ClaimsAt) -> Result<Vec<LimiterClaim>, AnalysisError> {
    let mut out = super::race::limiter_claims(at)?;
    out.extend(super::outage::limiter_claims(at)?);
    out.extend(super::scripts::limiter_claims(at)?);
    Ok(out)
}

/// Parameters; defaults in `experiments/libraries.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Seed 000's naive bucket on node-redis (HMGET, decide in JavaScript, HSET): its manifest.
    pub naive_bucket: PathBuf,
    /// Seed 000's token bucket script on node-redis, offline queue disabled: its manifest.
    pub lua_bucket: PathBuf,
    /// The same script on node-redis with its offline queue left on (outage's phases only).
    pub queued_bucket: PathBuf,
    /// Seed 001's GET then MULTI INCR EXPIRE on ioredis: its manifest.
    pub naive_window: PathBuf,
    /// Seed 001's fix on ioredis: its token bucket script by defineCommand: its manifest.
    pub take_bucket: PathBuf,
    /// The do-nothing adapter (no Redis): beside the outage runs, what the process boundary costs.
    pub boundary: PathBuf,
    /// The trials' bucket, which never refills: exactly this many checks may ever pass.
    pub capacity: u64,
    /// Checks per trial, shared by its processes.
    pub checks: u64,
    /// Repetitions of the trials and of the burst.
    pub trials: u32,
    /// The trials' configurations, `PxF`: P processes (each its own adapter) with F in flight.
    pub configs: Vec<Concurrency>,
    /// Fixed-window length; a window starts at each trial's start.
    pub window_ms: u64,
    /// Seed 001's burst: concurrent hits from one process on one window.
    pub burst_hits: u64,
    /// Seed 001's burst: the window's limit.
    pub burst_limit: u64,
    /// Seed 001's concurrency test: checks at once from one process on one fresh bucket.
    pub take_checks: u64,
    /// Seed 001's concurrency test: the bucket's capacity.
    pub take_capacity: u64,
    /// Seed 001's concurrency test: the bucket's refill rate in the `take` trials (the
    /// `take-still` trials have none).
    pub take_refill_per_s: f64,
    /// scripts' survival events `take_bucket` goes through, each on a fresh server.
    pub survival_events: Vec<super::scripts::Event>,
    /// Checks in each of outage's five phases.
    pub checks_per_phase: u64,
    /// Each outage check starts this long after the previous one started.
    pub interval_ms: u64,
    /// Unrecorded checks before the healthy phase.
    pub warmup: u64,
    /// The whole-call budget of one outage check (the adapter's client timeout too).
    pub budget_ms: u64,
}

impl Params {
    /// outage's parameters for its main runs here: fail-open only, no breaker (seed 000's middleware
    /// had none), no sweep, no fail-fast runs.
    fn outage(&self) -> super::outage::Params {
        super::outage::Params {
            checks_per_phase: self.checks_per_phase,
            interval_ms: self.interval_ms,
            warmup: self.warmup,
            budget_ms: self.budget_ms,
            policies: vec![crate::store::Policy::FailOpen],
            // Unused (main_runs runs without the breaker here) but valid.
            breaker_failures: 1,
            breaker_cooldown_ms: self.budget_ms,
            probe_budget_ms: self.budget_ms.div_ceil(2),
            strategy: crate::limiter::Strategy::LuaBucket,
            // Every normal answer is "allowed": a degraded answer is never a real deny.
            capacity: 1_000_000_000,
            refill_per_sec: 1_000_000.0,
            // main_runs runs neither the sweep nor fail-fast runs.
            sweep_failures: Vec::new(),
            sweep_cooldowns_ms: Vec::new(),
            sweep_background_failures: Vec::new(),
            sweep_background_cooldowns_ms: Vec::new(),
            sweep_trials: 0,
            sweep_hung_ms: 0,
            sweep_after_checks: 0,
            fail_fast_policies: Vec::new(),
            fail_fast_checks_per_phase: self.checks_per_phase,
            later_policy_checks_per_phase: self.checks_per_phase,
        }
    }
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        let p = self;
        let bad = [
            (
                p.capacity == 0 || p.checks == 0 || p.trials == 0 || p.window_ms == 0,
                "capacity, checks, trials and window_ms must be >= 1",
            ),
            (p.configs.is_empty(), "configs must not be empty"),
            (p.budget_ms < 2, "budget_ms must be >= 2"),
            (
                p.burst_hits == 0 || p.burst_limit == 0,
                "burst_hits and burst_limit must be >= 1",
            ),
            (
                p.take_checks == 0 || p.take_capacity == 0,
                "take_checks and take_capacity must be >= 1",
            ),
            (
                !(p.take_refill_per_s.is_finite() && p.take_refill_per_s >= 0.0),
                "take_refill_per_s must be a number >= 0",
            ),
            (
                p.survival_events.iter().any(|e| e.needs_replica()),
                "survival_events: an adapter is set up with one server, so no event that moves the call to a replica",
            ),
        ];
        match bad.iter().find(|(is_bad, _)| *is_bad) {
            Some((_, reason)) => Err((*reason).to_string()),
            None => p.outage().validate(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Profile;

    #[test]
    fn both_profiles_name_the_seeds_adapters_and_the_seeds_trials() {
        for profile in [Profile::Quick, Profile::Full] {
            let p: Params = crate::experiments::frame::resolve::<Libraries>(profile, &[]).unwrap();
            p.validate().unwrap();
            for manifest in Libraries::own_limiters(&p) {
                let at = Path::new(env!("CARGO_MANIFEST_DIR")).join(&manifest);
                assert!(
                    at.is_file(),
                    "{} names {}",
                    profile.name(),
                    manifest.display()
                );
            }
            let two = Concurrency {
                processes: 1,
                in_flight: 2,
            };
            assert!(p.configs.contains(&two), "the seed's 1 x 2");
        }
        let full: Params =
            crate::experiments::frame::resolve::<Libraries>(Profile::Full, &[]).unwrap();
        assert_eq!(full.trials, 10, "the seed's ten trials");
        assert_eq!((full.burst_hits, full.burst_limit), (500, 100));
    }

    #[test]
    fn a_budget_too_short_for_outage_is_refused() {
        let mut p: Params =
            crate::experiments::frame::resolve::<Libraries>(Profile::Quick, &[]).unwrap();
        p.budget_ms = 1;
        assert!(p.validate().unwrap_err().contains("budget_ms"));
    }
}
