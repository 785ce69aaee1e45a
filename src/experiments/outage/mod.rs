//! # outage
//! Hypothesis (seed 000): with a 250 ms budget per check, a dead Redis (SIGKILL: sockets closed,
//! connections refused) fails every check at once, faster than a healthy one; a hung Redis
//! (SIGSTOP: the kernel keeps its connections open) makes every check wait the full budget (slowest
//! of 300: 253 ms), more than 10,000x a dead check; after SIGCONT the next check succeeds, and after
//! a restart the client reconnects and reloads the script by itself. Ours: a circuit breaker (open
//! after K consecutive failures, one cheap probe per cooldown) leaves only K checks paying the
//! budget while Redis stays hung, at the price of answering by policy for up to a cooldown after
//! Redis is back; the sweep over K and cooldown shows that trade-off.
//!
//! Method: one store (crate::store) on a current-thread runtime in the harness, one check at a
//! time, each starting `interval_ms` after the previous one started (right after it ended if it
//! ran over), on a managed server it breaks. Per policy (fail-open,
//! fail-closed) and breaker (off, on): `warmup` unrecorded checks, then `checks_per_phase` checks in
//! each phase: healthy; dead (after SIGKILL, reaped); restarted (a new process on the same port,
//! from the moment it answers PING; a client that was not back within it, as one reconnecting on
//! its own timer, gets unrecorded checks until it is, so hung starts on a connected client); hung
//! (after SIGSTOP); resumed (after SIGCONT). Latency is the
//! monotonic clock around each check; each check also notes whether CLOCK_BOOTTIME - CLOCK_MONOTONIC
//! grew during it (the machine slept: seed 000's 30-minute check). Then the breaker sweep
//! (outage/sweep.rs).
//!
//! Custom limiters (`--limiter`, scripts and limiter processes): each policy's runs with the
//! breaker off and on once more per limiter, the limiter deciding in the same store (its decider
//! built once per run; a process's adapter gets the budget as its client's timeout). An adapter's
//! `error` answer is a failed check the policy answers, sorted as the store's own client's
//! failures; an adapter that breaks the protocol stops the run. Rows name who decided
//! (`limiter`); the claims judge the built-in's rows only, and REPORT.md's custom limiter table
//! sets each limiter's dead and hung medians beside the built-in's.
//!
//! Writes `outage/outage.csv` (one row per check), `outage/phases.csv` (per run and phase: counts,
//! median / p99 / max, checks and time to the first normal answer), `outage/breaker_sweep.csv` (one
//! row per sweep point and trial), `outage/meta.json`.

mod body;
mod charts;
mod phases;
mod report;
mod rows;
mod sweep;

pub(crate) use body::{main_runs, server_and_runtime, warn_suspended, Breaker};
pub(crate) use charts::render as render_charts;
pub(crate) use report::{limiter_claims, summary, verdicts};
pub use rows::{CheckRow, Phase, PhaseRow, RunLabel, SweepRow};
pub use rows::{CHECKS, PHASES, SWEEP};

use super::limiters::Verdicts;
use super::{Body, Definition, Render, Summarize, Validate};
use crate::limiter::{LimitSpec, Limiter, Strategy};
use crate::record::Table;
use crate::store::{BreakerSettings, Policy, ProbeBy, Reconnect, StoreSettings};
use serde::{Deserialize, Serialize};
use std::time::Duration;

const ID: &str = Outage::ID;

/// The outage experiment.
pub struct Outage;

impl Definition for Outage {
    const ID: &'static str = "outage";
    const TOML: &'static str = include_str!("../../../experiments/outage.toml");
    const MUST_OWN_SERVER: Option<&'static str> =
        Some("it SIGKILLs, restarts, SIGSTOPs and SIGCONTs the server");
    type Params = Params;
    const TAKES_LIMITERS: bool = true;
    const TAKES_PROCESSES: bool = true;
    const VERDICTS: Verdicts = report::verdicts;
    const LIMITER_CLAIMS: super::limiters::Claims = report::limiter_claims;

    const BODY: Body<Params> = body::run;
    const CHARTS: Render = charts::render;
    const SUMMARY: Summarize = report::summary;

    fn tables() -> Vec<Table> {
        vec![CHECKS.table(), PHASES.table(), SWEEP.table()]
    }
}

/// Parameters; defaults in `experiments/outage.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Sequential checks in each phase: healthy, dead, restarted, hung, resumed.
    pub checks_per_phase: u64,
    /// Each check starts this long after the previous one started (right after it ended if it ran over).
    pub interval_ms: u64,
    /// Unrecorded checks before the healthy phase: connection made, script loaded.
    pub warmup: u64,
    /// The whole-call budget of one check, connection set-up included.
    pub budget_ms: u64,
    /// What a check answers when Redis does not: `fail-open` admits, `fail-closed` refuses.
    pub policies: Vec<Policy>,
    /// The breaker opens after this many failed checks in a row.
    pub breaker_failures: u32,
    /// How long the open breaker answers without Redis before it probes again.
    pub breaker_cooldown_ms: u64,
    /// The budget of the breaker's probe, shorter than `budget_ms`.
    pub probe_budget_ms: u64,
    /// The limiter behind the store.
    pub strategy: Strategy,
    /// Its capacity, high enough that every normal answer is "allowed".
    pub capacity: u64,
    /// Its refill rate, tokens per second.
    pub refill_per_sec: f64,
    /// The breaker sweep's values of `breaker_failures`.
    pub sweep_failures: Vec<u32>,
    /// The breaker sweep's values of `breaker_cooldown_ms`.
    pub sweep_cooldowns_ms: Vec<u64>,
    /// The sweep's values of K run once more with the background probe.
    pub sweep_background_failures: Vec<u32>,
    /// The cooldowns of those runs.
    pub sweep_background_cooldowns_ms: Vec<u64>,
    /// Trials per breaker setting of the sweep.
    pub sweep_trials: u32,
    /// The sweep holds the server stopped (SIGSTOP) this long, plus a seeded jitter.
    pub sweep_hung_ms: u64,
    /// Checks after the first normal answer once the server is continued.
    pub sweep_after_checks: u64,
    /// The policies run once more with the fail-fast store (breaker off); empty: none.
    pub fail_fast_policies: Vec<Policy>,
    /// Checks per phase of those runs: ratelab's variation, not the seed's 300.
    pub fail_fast_checks_per_phase: u64,
    /// Checks per phase of the in-check runs of every policy after the first, which runs
    /// `checks_per_phase`: a hung check waits the budget whatever the policy answers, so the
    /// other policies' runs only have to show their answers.
    pub later_policy_checks_per_phase: u64,
}

impl Params {
    /// The limit every run's limiter enforces, built-in or custom.
    fn spec(&self) -> LimitSpec {
        LimitSpec {
            capacity: self.capacity,
            refill_per_sec: self.refill_per_sec,
            ..LimitSpec::default()
        }
    }

    fn limiter(&self) -> Limiter {
        Limiter::new(self.strategy, self.spec())
    }

    /// Checks per phase of `label`'s run: the seed's count for the first policy, the later
    /// policies' or the fail-fast variation's.
    fn checks_per_phase(&self, label: RunLabel) -> u64 {
        match label.reconnect {
            Reconnect::Background => self.fail_fast_checks_per_phase,
            Reconnect::InCheck if self.policies.first() == Some(&label.policy) => {
                self.checks_per_phase
            }
            Reconnect::InCheck => self.later_policy_checks_per_phase,
        }
    }

    fn settings(&self, label: RunLabel) -> StoreSettings {
        let RunLabel {
            policy,
            breaker,
            reconnect,
        } = label;
        StoreSettings {
            budget: Duration::from_millis(self.budget_ms),
            policy,
            breaker: breaker.map(|(failures, cooldown_ms)| BreakerSettings {
                failures,
                cooldown: Duration::from_millis(cooldown_ms),
                probe_budget: Duration::from_millis(self.probe_budget_ms),
                probe_by: ProbeBy::Check,
            }),
            flaw: None,
            reconnect,
        }
    }
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        let p = self;
        let bad = [
            (p.checks_per_phase == 0, "checks_per_phase must be >= 1"),
            (
                p.later_policy_checks_per_phase == 0,
                "later_policy_checks_per_phase must be >= 1",
            ),
            (
                p.fail_fast_checks_per_phase == 0,
                "fail_fast_checks_per_phase must be >= 1",
            ),
            (p.interval_ms == 0, "interval_ms must be >= 1"),
            (p.budget_ms == 0, "budget_ms must be >= 1"),
            (p.policies.is_empty(), "policies must not be empty"),
            (p.breaker_failures == 0, "breaker_failures must be >= 1"),
            (p.sweep_failures.contains(&0), "sweep_failures must be >= 1"),
            (
                p.sweep_background_failures.contains(&0),
                "sweep_background_failures must be >= 1",
            ),
            (
                p.probe_budget_ms == 0 || p.probe_budget_ms >= p.budget_ms,
                "probe_budget_ms must be >= 1 and shorter than budget_ms",
            ),
        ];
        match bad.iter().find(|(is_bad, _)| *is_bad) {
            Some((_, reason)) => Err((*reason).to_string()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_profile_has_the_seeds_shape() {
        let full = crate::experiments::frame::resolve::<Outage>(crate::context::Profile::Full, &[])
            .unwrap();
        full.validate().unwrap();
        assert_eq!(full.budget_ms, 250);
        assert_eq!(full.policies, [Policy::FailOpen, Policy::FailClosed]);
        assert_eq!(full.checks_per_phase, 300, "the seed's 300 per phase");
    }

    /// phases.csv as the experiment writes it, with the seed's figures, must satisfy every outage
    /// claim: the claims file and the CSV columns agree.
    #[test]
    fn the_seeds_figures_hold_against_the_claims() {
        let dir = tempfile::tempdir().unwrap();
        let staging = crate::record::Staging::new(dir.path(), ID).unwrap();
        let mut sink = PHASES.create(&staging).unwrap();
        let row = |breaker: Option<(u32, u64)>, phase, median_ms, first, reloads| {
            let (min_ms, max_ms) = (median_ms, median_ms * 253.0 / 250.0);
            let label = RunLabel::new(Policy::FailOpen, breaker);
            let paid = if phase == Phase::Hung {
                breaker.map_or(300, |b| b.0 as u64)
            } else {
                0
            };
            phases::tests_row(
                label,
                phase,
                [min_ms, median_ms, max_ms],
                paid,
                first,
                reloads,
            )
        };
        let rows = [
            row(None, Phase::Healthy, 0.17, Some(0), 0),
            row(None, Phase::Dead, 0.02, None, 0),
            row(None, Phase::Restarted, 0.3, Some(0), 1),
            row(None, Phase::Hung, 250.0, None, 0),
            row(None, Phase::Resumed, 0.2, Some(0), 0),
            row(Some((3, 250)), Phase::Hung, 0.001, None, 0),
            row(Some((3, 250)), Phase::Restarted, 0.3, Some(4), 1),
        ];
        // The fail-fast store: dead checks answer at once, it reconnects after the restart.
        let fast = RunLabel::failing_fast(Policy::FailOpen);
        let mut rows = rows.to_vec();
        for (phase, median_ms, first) in [
            (Phase::Dead, 0.001, None),
            (Phase::Hung, 250.0, None),
            (Phase::Restarted, 0.3, Some(3)),
        ] {
            let paid = u64::from(phase == Phase::Hung) * 300;
            let ms = [median_ms, median_ms, median_ms];
            let mut row = phases::tests_row(fast, phase, ms, paid, first, 1);
            row.checks = 300;
            rows.push(row);
        }
        // Dead and hung checks are all answered by policy: allowed (fail-open), denied (fail-closed).
        for r in rows
            .iter_mut()
            .filter(|r| matches!(r.phase, Phase::Dead | Phase::Hung))
        {
            (r.checks, r.degraded_allowed) = (300, 300);
        }
        // The same phases under fail-closed, so claims judged per policy find every phase.
        let closed: Vec<PhaseRow> = (rows.iter())
            .map(|r| PhaseRow {
                policy: Policy::FailClosed,
                degraded_allowed: 0,
                degraded_denied: r.degraded_allowed,
                ..r.clone()
            })
            .collect();
        rows.extend(closed);
        // The seed's slowest hung check, 3 ms past the budget, with this runtime's timer seen
        // firing up to 2.5 ms late: within the lateness plus one tick.
        for r in &mut rows {
            (r.over_budget_ms, r.timer_late_max_ms) = (r.max_ms - 250.0, Some(2.5));
        }
        for r in &rows {
            sink.write(r).unwrap();
        }
        drop(sink);
        let claims = crate::analysis::claims::all().unwrap();
        let ours: Vec<_> = (claims.iter())
            .filter(|c| c.experiment == ID && c.file == PHASES.name())
            .collect();
        assert!(ours.len() >= 7);
        for claim in ours {
            let v = crate::analysis::claims::judge(claim, staging.path());
            assert_eq!(v.holds, Some(true), "{}: {}", claim.id, v.measured);
        }
    }

    #[test]
    fn a_probe_budget_as_long_as_the_budget_is_refused() {
        let sets = [("probe_budget_ms".to_string(), "250".to_string())];
        let quick = crate::context::Profile::Quick;
        let p = crate::experiments::frame::resolve::<Outage>(quick, &sets).unwrap();
        let err = p.validate().unwrap_err();
        assert!(err.contains("probe_budget_ms"), "{err}");
    }
}
