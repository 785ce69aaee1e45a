//! The circuit breaker seed 000 left open: after `failures` consecutive failed checks it opens for
//! `cooldown` and the store answers by policy at once instead of waiting on Redis. When the
//! cooldown is over, ONE request becomes the probe and asks Redis with a much shorter budget; every
//! other request keeps answering by policy until the probe says Redis is back. So while Redis stays
//! hung, no user request pays the full budget: the K requests that trip the breaker are the only
//! ones, and each probe pays the probe budget at most. With `ProbeBy::Background` no request is
//! the probe: the store's own task asks when the cooldown is over, and users never pay for it.
//!
//! Pure state, no I/O: time is passed in (tokio's `Instant`, so tests run on paused time).

use serde::{Deserialize, Serialize};
use std::time::Duration;
use tokio::time::Instant;

/// The breaker's thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakerSettings {
    /// K: consecutive failures that open the breaker (>= 1).
    pub failures: u32,
    /// How long it stays open before one request may probe.
    pub cooldown: Duration,
    /// The probe's whole-call budget: much shorter than a check's, since it is paid by a user.
    pub probe_budget: Duration,
    /// Who probes once the cooldown is over.
    #[serde(default)]
    pub probe_by: ProbeBy,
}

/// Who probes an open breaker for recovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProbeBy {
    /// The first user check after the cooldown asks Redis, with the probe budget, and waits.
    #[default]
    Check,
    /// A task of the store's own asks (PING on a fresh connection); every check answers by policy
    /// until it has come back.
    Background,
}

/// What the breaker looks like from outside; recorded with every check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BreakerState {
    /// Requests ask Redis.
    Closed,
    /// Requests answer by policy without asking Redis.
    Open,
    /// A probe is out; other requests answer by policy until it returns.
    HalfOpen,
}

impl std::fmt::Display for BreakerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half-open",
        })
    }
}

/// What a request should do, as decided on arrival.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Ask Redis with the full budget.
    Ask,
    /// Ask Redis with the probe budget; its result closes or reopens the breaker.
    Probe,
    /// Do not ask: answer by policy now.
    ShortCircuit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Closed { consecutive: u32 },
    Open { until: Instant },
    HalfOpen,
}

/// The state machine. One per store; callers hold it behind a lock for the instant of a transition.
#[derive(Debug, Clone)]
pub struct Breaker {
    settings: BreakerSettings,
    state: State,
    /// Times it went from closed (or half-open) to open, for the run's counters.
    opened: u64,
    /// Probes sent by the store's own task (`ProbeBy::Background`).
    background_probes: u64,
}

impl Breaker {
    /// A closed breaker.
    pub fn new(settings: BreakerSettings) -> Self {
        Breaker {
            settings,
            state: State::Closed { consecutive: 0 },
            opened: 0,
            background_probes: 0,
        }
    }

    /// Its settings.
    pub fn settings(&self) -> BreakerSettings {
        self.settings
    }

    /// The current state (an open breaker whose cooldown is over still reads open until a request
    /// arrives and becomes the probe).
    pub fn state(&self) -> BreakerState {
        match self.state {
            State::Closed { .. } => BreakerState::Closed,
            State::Open { .. } => BreakerState::Open,
            State::HalfOpen => BreakerState::HalfOpen,
        }
    }

    /// How many times it has opened.
    pub fn times_opened(&self) -> u64 {
        self.opened
    }

    /// How many probes the store's own task has sent.
    pub fn background_probes(&self) -> u64 {
        self.background_probes
    }

    /// When an open breaker's cooldown ends (None unless open).
    pub fn cooldown_ends(&self) -> Option<Instant> {
        match self.state {
            State::Open { until } => Some(until),
            _ => None,
        }
    }

    /// The background task's probe: true (half-open now; record its result as `Probe`) when the
    /// breaker is open and its cooldown is over.
    pub fn begin_background_probe(&mut self, now: Instant) -> bool {
        match self.state {
            State::Open { until } if now >= until => {
                self.state = State::HalfOpen;
                self.background_probes += 1;
                true
            }
            _ => false,
        }
    }

    /// Decides what an arriving request does; the first request after the cooldown probes, unless
    /// the store's own task does.
    pub fn admit(&mut self, now: Instant) -> Admission {
        let users_probe = self.settings.probe_by == ProbeBy::Check;
        match self.state {
            State::Closed { .. } => Admission::Ask,
            State::Open { until } if now >= until && users_probe => {
                self.state = State::HalfOpen;
                Admission::Probe
            }
            State::Open { .. } | State::HalfOpen => Admission::ShortCircuit,
        }
    }

    /// Records how an admitted request went. Returns true when this result opened the breaker
    /// (the caller drops its connection then, so the probe tests a fresh one).
    pub fn record(&mut self, admission: Admission, ok: bool, now: Instant) -> bool {
        match (admission, self.state) {
            (Admission::Ask, State::Closed { consecutive }) => {
                if ok {
                    self.state = State::Closed { consecutive: 0 };
                    return false;
                }
                let consecutive = consecutive + 1;
                if consecutive >= self.settings.failures.max(1) {
                    self.open(now);
                    return true;
                }
                self.state = State::Closed { consecutive };
                false
            }
            (Admission::Probe, State::HalfOpen) => {
                if ok {
                    self.state = State::Closed { consecutive: 0 };
                    false
                } else {
                    self.open(now);
                    true
                }
            }
            // A full-budget request that started before the breaker opened and returned after:
            // it neither closes an open breaker (a probe does that) nor extends the cooldown.
            _ => false,
        }
    }

    fn open(&mut self, now: Instant) {
        self.state = State::Open {
            until: now + self.settings.cooldown,
        };
        self.opened += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::{advance, pause};

    fn breaker(k: u32, cooldown_ms: u64) -> Breaker {
        Breaker::new(BreakerSettings {
            failures: k,
            cooldown: Duration::from_millis(cooldown_ms),
            probe_budget: Duration::from_millis(20),
            probe_by: ProbeBy::Check,
        })
    }

    fn fail(b: &mut Breaker) -> (Admission, bool) {
        let a = b.admit(Instant::now());
        let opened = a != Admission::ShortCircuit && b.record(a, false, Instant::now());
        (a, opened)
    }

    #[tokio::test(flavor = "current_thread")]
    async fn opens_after_k_consecutive_failures_and_a_success_resets_the_count() {
        pause();
        let mut b = breaker(3, 1000);
        assert_eq!(fail(&mut b), (Admission::Ask, false));
        assert_eq!(fail(&mut b), (Admission::Ask, false));
        let a = b.admit(Instant::now());
        assert!(!b.record(a, true, Instant::now()), "a success resets");
        assert_eq!(fail(&mut b), (Admission::Ask, false));
        assert_eq!(fail(&mut b), (Admission::Ask, false));
        assert_eq!(fail(&mut b), (Admission::Ask, true));
        assert_eq!(b.state(), BreakerState::Open);
        assert_eq!(b.times_opened(), 1);
        // Open: every request is answered at once, for the whole cooldown.
        advance(Duration::from_millis(999)).await;
        assert_eq!(b.admit(Instant::now()), Admission::ShortCircuit);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn one_probe_after_the_cooldown_then_closed_on_success() {
        pause();
        let mut b = breaker(1, 500);
        assert_eq!(fail(&mut b), (Admission::Ask, true));
        advance(Duration::from_millis(500)).await;
        assert_eq!(b.admit(Instant::now()), Admission::Probe);
        assert_eq!(b.state(), BreakerState::HalfOpen);
        // While the probe is out, nobody else asks Redis.
        assert_eq!(b.admit(Instant::now()), Admission::ShortCircuit);
        assert!(!b.record(Admission::Probe, true, Instant::now()));
        assert_eq!(b.state(), BreakerState::Closed);
        assert_eq!(b.admit(Instant::now()), Admission::Ask);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_failed_probe_reopens_for_a_full_cooldown() {
        pause();
        let mut b = breaker(2, 300);
        fail(&mut b);
        fail(&mut b);
        advance(Duration::from_millis(300)).await;
        assert_eq!(b.admit(Instant::now()), Admission::Probe);
        advance(Duration::from_millis(20)).await;
        assert!(
            b.record(Admission::Probe, false, Instant::now()),
            "reopened"
        );
        assert_eq!(b.times_opened(), 2);
        advance(Duration::from_millis(299)).await;
        assert_eq!(b.admit(Instant::now()), Admission::ShortCircuit);
        advance(Duration::from_millis(1)).await;
        assert_eq!(b.admit(Instant::now()), Admission::Probe);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn late_results_of_full_budget_requests_do_not_move_an_open_breaker() {
        pause();
        let mut b = breaker(1, 100);
        let early = b.admit(Instant::now());
        fail(&mut b);
        assert_eq!(b.state(), BreakerState::Open);
        // The request admitted before the trip returns successfully while the breaker is open.
        assert!(!b.record(early, true, Instant::now()));
        assert_eq!(b.state(), BreakerState::Open);
        assert!(!b.record(early, false, Instant::now()));
        assert_eq!(b.times_opened(), 1);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn with_a_background_probe_no_request_probes_and_the_task_closes_it() {
        pause();
        let mut b = Breaker::new(BreakerSettings {
            probe_by: ProbeBy::Background,
            ..breaker(1, 100).settings()
        });
        assert!(
            !b.begin_background_probe(Instant::now()),
            "closed: nothing to probe"
        );
        fail(&mut b);
        let ends = b.cooldown_ends().expect("open");
        assert!(
            !b.begin_background_probe(Instant::now()),
            "not before the cooldown ends"
        );
        advance(Duration::from_millis(100)).await;
        assert_eq!(Instant::now(), ends);
        assert_eq!(
            b.admit(Instant::now()),
            Admission::ShortCircuit,
            "users never probe"
        );
        assert!(b.begin_background_probe(Instant::now()));
        assert_eq!(b.state(), BreakerState::HalfOpen);
        assert!(
            b.record(Admission::Probe, false, Instant::now()),
            "a failed probe reopens"
        );
        advance(Duration::from_millis(100)).await;
        assert!(b.begin_background_probe(Instant::now()));
        assert!(!b.record(Admission::Probe, true, Instant::now()));
        assert_eq!(b.state(), BreakerState::Closed);
        assert_eq!((b.background_probes(), b.times_opened()), (2, 2));
    }

    #[test]
    fn states_print_as_recorded() {
        let names = [
            BreakerState::Closed,
            BreakerState::Open,
            BreakerState::HalfOpen,
        ]
        .map(|s| s.to_string());
        assert_eq!(names, ["closed", "open", "half-open"]);
    }
}
