//! The outage experiment's rows: what each phase did to Redis, which store a run used, one row per
//! check (outage.csv), one per phase (phases.csv) and one per breaker sweep point
//! (breaker_sweep.csv).

use crate::limiter::Strategy;
use crate::record::CsvFile;
use crate::store::{BreakerState, Failure, Outcome, Policy, Reconnect, Route};
use serde::{Deserialize, Serialize};

/// `outage.csv`: One row per check.
pub const CHECKS: CsvFile<CheckRow> = CsvFile::new("outage.csv").added(&["limiter"]);

/// `phases.csv`: One row per phase of one run.
pub const PHASES: CsvFile<PhaseRow> =
    CsvFile::new("phases.csv").added(&["limiter", "recovery_checks", "recovered_ms"]);

/// `breaker_sweep.csv`: One row per sweep point in one trial.
pub const SWEEP: CsvFile<SweepRow> =
    CsvFile::new("breaker_sweep.csv").added(&["probe_by", "background_probes"]);

/// What was done to Redis before the phase's checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    Healthy,
    /// After SIGKILL (process reaped, port closed).
    Dead,
    /// After a new process started on the same port and answered PING.
    Restarted,
    /// After SIGSTOP.
    Hung,
    /// After SIGCONT.
    Resumed,
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = serde_json::to_value(self).ok();
        f.write_str(name.as_ref().and_then(|v| v.as_str()).unwrap_or("?"))
    }
}

/// Which store a run used: its policy, breaker (K, cooldown ms) if any, and who reconnects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunLabel {
    pub policy: Policy,
    pub breaker: Option<(u32, u64)>,
    pub reconnect: Reconnect,
}

impl RunLabel {
    /// Seed 000's client: the next check reconnects inside its budget.
    pub fn new(policy: Policy, breaker: Option<(u32, u64)>) -> Self {
        RunLabel {
            policy,
            breaker,
            reconnect: Reconnect::InCheck,
        }
    }

    /// No breaker; checks fail fast while a background task reconnects.
    pub fn failing_fast(policy: Policy) -> Self {
        RunLabel {
            reconnect: Reconnect::Background,
            ..RunLabel::new(policy, None)
        }
    }

    pub(super) fn columns(self) -> (Policy, &'static str, u32, u64) {
        match self.breaker {
            Some((k, cooldown_ms)) => (self.policy, "on", k, cooldown_ms),
            None => (self.policy, "off", 0, 0),
        }
    }
}

impl std::fmt::Display for RunLabel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (policy, breaker, ..) = self.columns();
        let policy = serde_json::to_value(policy).ok();
        let policy = policy.as_ref().and_then(|v| v.as_str()).unwrap_or("?");
        write!(f, "{policy}/breaker-{breaker}")?;
        match self.reconnect {
            Reconnect::InCheck => Ok(()),
            Reconnect::Background => f.write_str("/fail-fast"),
        }
    }
}

/// One check.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CheckRow {
    /// Who decided: the built-in strategy (the `strategy` parameter) or a custom limiter
    /// (`--limiter`: its manifest's name); empty in runs before custom limiters ran here, which
    /// ran the built-in alone.
    #[serde(default)]
    pub limiter: Option<Strategy>,
    pub policy: Policy,
    /// `off` or `on`.
    pub breaker: String,
    /// K (0 when off).
    pub k: u32,
    pub cooldown_ms: u64,
    /// Who reconnects: the next check (`in-check`) or a background task while checks fail fast.
    pub reconnect: Reconnect,
    pub phase: Phase,
    /// 0-based within the phase.
    pub seq: u64,
    /// When the check started, ms after the phase's fault (SIGKILL, ready after restart, ...).
    pub at_ms: f64,
    /// The whole check on the monotonic clock.
    pub latency_us: f64,
    /// allowed or denied (Redis decided), degraded-allowed or degraded-denied (the policy did).
    pub outcome: Outcome,
    /// How it was answered: `redis` (asked with the full budget), `probe` (the breaker's
    /// recovery probe) or `open` (the breaker answered by policy without asking).
    pub route: Route,
    /// Why Redis gave no decision (empty when it did).
    pub failure: Option<Failure>,
    /// The breaker after the check.
    pub breaker_state: BreakerState,
    /// The check opened a new connection to Redis.
    pub reconnected: bool,
    /// The check loaded the script again (NOSCRIPT after a restart).
    pub script_reloaded: bool,
    /// The machine slept during this check: its latency is not Redis's.
    pub suspended: bool,
    /// How long the checking thread waited for its CPU during the check (schedstat), µs: part
    /// of `latency_us` this machine's scheduling added. Empty where schedstat cannot be read,
    /// and in runs before it was recorded.
    #[serde(default)]
    pub run_queue_us: Option<f64>,
}

/// One phase of one run, derived from its checks.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PhaseRow {
    /// Who decided: the built-in strategy (the `strategy` parameter) or a custom limiter
    /// (`--limiter`: its manifest's name); empty in runs before custom limiters ran here, which
    /// ran the built-in alone.
    #[serde(default)]
    pub limiter: Option<Strategy>,
    pub policy: Policy,
    /// `off` or `on`.
    pub breaker: String,
    /// The breaker's K: failures in a row that open it (0 when off).
    pub k: u32,
    pub cooldown_ms: u64,
    /// Who reconnects: the next check (`in-check`) or a background task while checks fail fast.
    pub reconnect: Reconnect,
    pub phase: Phase,
    pub checks: u64,
    pub allowed: u64,
    pub denied: u64,
    /// Allowed by the policy because Redis gave no decision.
    pub degraded_allowed: u64,
    /// Denied by the policy because Redis gave no decision.
    pub degraded_denied: u64,
    /// Checks that asked Redis with the full budget and timed out.
    pub paid_budget: u64,
    /// Checks the open breaker answered by policy without asking Redis.
    pub short_circuited: u64,
    /// Checks that asked Redis as the breaker's recovery probe.
    pub probes: u64,
    pub min_ms: f64,
    pub median_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub mean_ms: f64,
    /// The slowest check beyond the whole-call budget, ms (max_ms - budget; negative when every
    /// check answered within it): what a timeout firing late adds.
    #[serde(default)]
    pub over_budget_ms: f64,
    /// How late this runtime's timer fired at worst during the phase, ms: a 1 ms tokio sleep
    /// repeated beside the checks on their runtime, each timed against its own deadline (the
    /// budget's timeout is a timer of the same wheel). Empty in runs before it was measured.
    #[serde(default)]
    pub timer_late_max_ms: Option<f64>,
    /// Checks answered by policy before the first normal answer (empty: none in the phase).
    pub first_normal_seq: Option<u64>,
    /// From the fault to the end of the first normal answer, ms.
    pub first_normal_ms: Option<f64>,
    /// Checks that opened a new connection to Redis.
    pub reconnects: u64,
    /// Checks that loaded the script again.
    pub script_reloads: u64,
    pub suspended_checks: u64,
    /// A restarted phase without a normal answer (a client that reconnects on its own timer, as
    /// node-redis does, was not back within it): the unrecorded checks made after it, an interval
    /// apart, until Redis answered one (at most 5 s), so the hung phase finds the client connected.
    /// Empty when the phase had its normal answer, and in runs before it was measured.
    #[serde(default)]
    pub recovery_checks: Option<u64>,
    /// ... and from the fault to the end of that first normal answer, ms (empty: none came).
    #[serde(default)]
    pub recovered_ms: Option<f64>,
}

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
    /// Who probes for recovery: `check` (the first user check after the cooldown) or `background`
    /// (the store's own task); empty when the breaker is off, and in runs before the variation.
    #[serde(default)]
    pub probe_by: String,
    pub trial: u32,
    /// Added to `sweep_hung_ms` for this trial (seeded).
    pub jitter_ms: u64,
    /// How long Redis was stopped.
    pub hung_ms: f64,
    /// Checks made while Redis was stopped.
    pub hung_checks: u64,
    /// Hung checks that asked with the full budget and timed out.
    pub paid_budget: u64,
    /// Hung checks that carried a recovery probe (each paid up to the probe budget).
    pub probes: u64,
    /// Probes the store's own task sent, hung and after (no check carried them).
    #[serde(default)]
    pub background_probes: u64,
    /// All hung checks' latencies added up: what users spent waiting.
    pub hung_cost_ms: f64,
    /// Checks answered by policy after SIGCONT, before the first normal answer.
    pub blind_checks: u64,
    /// SIGCONT to the end of the first normal answer (empty: none before the deadline).
    pub blind_ms: Option<f64>,
    pub suspended_checks: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_phases_print_as_in_the_csv() {
        let on = RunLabel::new(Policy::FailClosed, Some((3, 500)));
        assert_eq!(on.to_string(), "fail-closed/breaker-on");
        let fast = RunLabel::failing_fast(Policy::FailOpen);
        assert_eq!(fast.to_string(), "fail-open/breaker-off/fail-fast");
        assert_eq!(Phase::Restarted.to_string(), "restarted");
    }
}
