//! The resilient limiter client of seed 000: every check has a budget that bounds the whole call,
//! connection set-up included; when Redis is unusable the answer comes from a policy (fail-open or
//! fail-closed) and is counted apart from normal decisions; there is no offline queue (a check
//! never waits for a reconnect beyond its own budget); and an optional circuit breaker stops asking
//! a Redis that keeps failing.
//!
//! Connections: one multiplexed connection, shared by concurrent checks. A connection error (the
//! server closed it, refused a new one) drops it, and the next check reconnects inside its own
//! budget; after a restart the script is reloaded by the limiter's EVALSHA-then-EVAL fallback. A
//! timeout keeps the connection, as the seed's client did: a hung server still holds the TCP
//! connection, so a new one would hang too. When the breaker opens, the connection is dropped, so
//! the probe tests a fresh path (what a failover or a replaced server needs).

mod breaker;
mod connection;
#[cfg(test)]
mod tests;

pub use breaker::{Admission, Breaker, BreakerSettings, BreakerState, ProbeBy};

use crate::limiter::{Decider, LimiterError};
use connection::Slot;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::time::Instant;

/// What the store answers when Redis cannot (there is no answer right for every service).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Let the request through: the service stays up, unlimited, while Redis is away.
    FailOpen,
    /// Reject the request: nothing unlimited gets through, and nothing else either.
    FailClosed,
}

/// How a store behaves; recorded with the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreSettings {
    /// Bound on one whole check: connecting (if needed), sending, waiting for the answer.
    pub budget: Duration,
    /// The answer when Redis is unusable.
    pub policy: Policy,
    /// The circuit breaker, or none (every check asks Redis and may pay the full budget).
    pub breaker: Option<BreakerSettings>,
    /// A deliberate misconfiguration (seed 003's list), for drills that measure what it does;
    /// none for a correct client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flaw: Option<Flaw>,
    /// Who reconnects after the connection is lost: the next check, inside its budget (seed 000's
    /// client), or a background task while checks fail fast (node-redis with its offline queue
    /// disabled, which answers from a not-ready flag).
    #[serde(default, skip_serializing_if = "Reconnect::is_in_check")]
    pub reconnect: Reconnect,
}

/// Who reconnects a store whose connection was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reconnect {
    /// The next check connects, inside its own budget: a dead server costs each check a refused
    /// connect.
    #[default]
    InCheck,
    /// A background task reconnects (backing off 50 ms more per failed try, at most 500 ms, as
    /// node-redis's default strategy) while every check without a connection answers by policy
    /// at once, making no system call.
    Background,
}

impl Reconnect {
    fn is_in_check(&self) -> bool {
        *self == Reconnect::InCheck
    }
}

/// The misconfigurations seed 003 says only a drill reveals; each is one thing a correct store
/// does and this one does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Flaw {
    /// The budget bounds connection set-up only: a command waits as long as Redis takes (the
    /// client library's timeout that "only covers connection setup, not command execution").
    SetupTimeoutOnly,
    /// Answers by policy are not counted: the fail-open path records nothing.
    Unrecorded,
    /// A connection that failed is kept: every later check fails on it, answered by policy for
    /// ever (a client that "cached a dead connection").
    NeverReconnects,
    /// A failure is answered as a denial whatever the policy says: the middleware's catch block
    /// rejects ("an error path in the middleware treats an exception as a denial").
    DeniesOnError,
}

/// The answer a caller acts on; degraded answers came from the policy, not from Redis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Allowed,
    Denied,
    DegradedAllowed,
    DegradedDenied,
}

impl Outcome {
    /// True when Redis decided.
    pub fn is_normal(self) -> bool {
        matches!(self, Outcome::Allowed | Outcome::Denied)
    }
}

/// How the answer was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Route {
    /// Redis was asked with the full budget.
    Redis,
    /// Redis was asked with the probe budget (the breaker's recovery probe).
    Probe,
    /// The breaker was open: answered by policy without asking.
    Open,
}

/// Why Redis gave no decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Failure {
    /// The budget ran out (a hung server: the connection looks alive, nothing answers).
    Timeout,
    /// The connection failed or was refused (a dead server).
    Connection,
    /// Redis answered with an error (loading, busy, out of memory...).
    Server,
}

/// One check's answer and how it came about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    pub outcome: Outcome,
    pub route: Route,
    pub failure: Option<Failure>,
    /// This check opened a new connection.
    pub reconnected: bool,
    /// Redis had lost the script (NOSCRIPT) and this check loaded it again.
    pub script_reloaded: bool,
    /// The breaker after this check (closed when there is none).
    pub breaker: BreakerState,
}

/// Running totals; degraded answers are counted apart so an outage is not read as traffic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    pub allowed: u64,
    pub denied: u64,
    pub degraded_allowed: u64,
    pub degraded_denied: u64,
    pub timeouts: u64,
    pub connection_errors: u64,
    pub server_errors: u64,
    pub short_circuited: u64,
    pub probes: u64,
    /// Probes the store's own task sent (`ProbeBy::Background`): no user check carried them.
    pub background_probes: u64,
    pub reconnects: u64,
    pub script_reloads: u64,
    pub breaker_opened: u64,
}

/// A check that could not be answered at all: a bug, never hidden behind the policy.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("bad redis url")]
    Url(#[from] redis::RedisError),
    #[error(transparent)]
    Limiter(LimiterError),
}

/// The resilient client: a decider, a connection it manages, a policy and maybe a breaker.
pub struct Store {
    decider: Decider,
    /// The decider runs a script (so a check of more than one round trip reloaded it).
    scripted: bool,
    settings: StoreSettings,
    slot: Slot,
    /// Shared with the background probe's task, which holds it weakly.
    breaker: Option<Arc<Mutex<Breaker>>>,
    /// The background probe's task is running.
    probing: Arc<AtomicBool>,
    counters: Mutex<Counters>,
}

/// Locks a mutex whose data stays consistent even if a holder panicked (plain counters and state).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Store {
    /// A store for `url` deciding with `limiter` (a [`Limiter`](crate::limiter::Limiter) or any
    /// [`Decider`]); it connects lazily, on the first check, inside that check's budget (never,
    /// for a decider with a link of its own).
    pub fn new(
        url: &str,
        limiter: impl Into<Decider>,
        settings: StoreSettings,
    ) -> Result<Self, StoreError> {
        let decider = limiter.into();
        Ok(Store {
            scripted: decider.limiter().is_some_and(|l| l.script().is_some()),
            decider,
            slot: Slot::new(url, &settings)?,
            breaker: settings
                .breaker
                .map(|b| Arc::new(Mutex::new(Breaker::new(b)))),
            probing: Arc::new(AtomicBool::new(false)),
            settings,
            counters: Mutex::new(Counters::default()),
        })
    }

    /// Its settings.
    pub fn settings(&self) -> StoreSettings {
        self.settings
    }

    /// The redis-rs connection and response timeouts it sets (both the budget: the whole-call
    /// timeout around them is what bounds a check; these only keep redis-rs from its own default).
    /// `Duration::MAX` is no response timeout at all (the `SetupTimeoutOnly` flaw).
    pub fn client_timeouts(&self) -> (Duration, Duration) {
        self.slot.timeouts()
    }

    /// The totals so far.
    pub fn counters(&self) -> Counters {
        let mut c = *lock(&self.counters);
        if let Some(b) = &self.breaker {
            let b = lock(b);
            (c.breaker_opened, c.background_probes) = (b.times_opened(), b.background_probes());
        }
        c
    }

    /// Decides one request against `key`, within the budget, whatever Redis is doing.
    pub async fn check(&self, key: &str) -> Result<Answer, StoreError> {
        let admission = match &self.breaker {
            Some(b) => lock(b).admit(Instant::now()),
            None => Admission::Ask,
        };
        let budget = match (admission, self.settings.breaker) {
            (Admission::ShortCircuit, _) => return Ok(self.degraded(Route::Open, None, false)),
            (Admission::Probe, Some(b)) => b.probe_budget,
            _ => self.settings.budget,
        };
        // A probe whose caller gives up must not leave the breaker half-open for ever.
        let mut probe = ProbeGuard {
            store: self,
            armed: admission == Admission::Probe,
        };
        let asked = self.slot.ask(&self.decider, key, budget).await;
        probe.armed = false;
        let route = match admission {
            Admission::Probe => Route::Probe,
            _ => Route::Redis,
        };
        let decision = match asked.result {
            Ok(decision) => decision,
            Err(connection::AskFailure::Bug(e)) => {
                self.record(admission, true);
                return Err(StoreError::Limiter(e));
            }
            Err(connection::AskFailure::Redis(failure)) => {
                let keeps_dead = self.settings.flaw == Some(Flaw::NeverReconnects);
                if self.record(admission, false) && !keeps_dead {
                    self.slot.forget_any();
                } else if failure == Failure::Connection && !keeps_dead {
                    self.slot.forget(asked.generation);
                }
                return Ok(self.degraded(route, Some(failure), asked.reconnected));
            }
        };
        self.record(admission, true);
        let script_reloaded = self.scripted && decision.redis_calls > 1;
        let outcome = match decision.allowed {
            true => Outcome::Allowed,
            false => Outcome::Denied,
        };
        let mut c = lock(&self.counters);
        c.allowed += u64::from(decision.allowed);
        c.denied += u64::from(!decision.allowed);
        c.reconnects += u64::from(asked.reconnected);
        c.script_reloads += u64::from(script_reloaded);
        c.probes += u64::from(route == Route::Probe);
        Ok(Answer {
            outcome,
            route,
            failure: None,
            reconnected: asked.reconnected,
            script_reloaded,
            breaker: self.breaker_state(),
        })
    }

    /// After the last check: what its decider still owes checks whose budget ran out (a limiter
    /// process's late answers) has come, or the error that says it broke: never a few more
    /// timeouts.
    pub fn settle(&self) -> Result<(), LimiterError> {
        crate::limiter::Decide::settle(&self.decider)
    }

    /// The breaker's state (closed when there is none).
    pub fn breaker_state(&self) -> BreakerState {
        self.breaker
            .as_ref()
            .map_or(BreakerState::Closed, |b| lock(b).state())
    }

    /// Feeds a result to the breaker; true when it opened.
    fn record(&self, admission: Admission, ok: bool) -> bool {
        let Some(b) = &self.breaker else {
            return false;
        };
        let opened = lock(b).record(admission, ok, Instant::now());
        let background = self.settings.breaker.map(|s| s.probe_by) == Some(ProbeBy::Background);
        if opened && background {
            self.probe_in_background(b);
        }
        opened
    }

    /// Starts the background probe's task unless it runs: after each cooldown it PINGs on a
    /// fresh connection within the probe budget, until Redis answers (the breaker closes and
    /// the connection becomes the store's) or the store is gone. No check waits for it.
    fn probe_in_background(&self, breaker: &Arc<Mutex<Breaker>>) {
        // Outside a runtime (a check's future dropped late) the next opening starts it.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.probing.swap(true, Ordering::AcqRel) {
            return;
        }
        let budget = lock(breaker).settings().probe_budget;
        let (breaker, running) = (Arc::downgrade(breaker), Arc::clone(&self.probing));
        let prober = self.slot.prober();
        runtime.spawn(async move {
            loop {
                while let Some(ends) = cooldown_ends(&breaker) {
                    tokio::time::sleep_until(ends).await;
                    let Some(b) = breaker.upgrade() else { break };
                    if !lock(&b).begin_background_probe(Instant::now()) {
                        continue;
                    }
                    drop(b);
                    let ok = prober.ping(budget).await;
                    let Some(b) = breaker.upgrade() else { break };
                    lock(&b).record(Admission::Probe, ok, Instant::now());
                }
                running.store(false, Ordering::Release);
                // An opening between the last look and now found the task running: take it on.
                if cooldown_ends(&breaker).is_none() || running.swap(true, Ordering::AcqRel) {
                    break;
                }
            }
        });
    }

    /// The policy's answer, counted apart from normal decisions.
    fn degraded(&self, route: Route, failure: Option<Failure>, reconnected: bool) -> Answer {
        let outcome = match (self.settings.flaw, self.settings.policy) {
            // The flaw: a denial as Redis would give it, not the policy's answer.
            (Some(Flaw::DeniesOnError), _) => Outcome::Denied,
            (_, Policy::FailOpen) => Outcome::DegradedAllowed,
            (_, Policy::FailClosed) => Outcome::DegradedDenied,
        };
        // The flaw: the answer is the policy's, and nothing anywhere says so.
        if self.settings.flaw != Some(Flaw::Unrecorded) {
            let mut c = lock(&self.counters);
            c.degraded_allowed += u64::from(outcome == Outcome::DegradedAllowed);
            c.degraded_denied += u64::from(outcome == Outcome::DegradedDenied);
            c.timeouts += u64::from(failure == Some(Failure::Timeout));
            c.connection_errors += u64::from(failure == Some(Failure::Connection));
            c.server_errors += u64::from(failure == Some(Failure::Server));
            c.short_circuited += u64::from(route == Route::Open);
            c.probes += u64::from(route == Route::Probe);
            c.reconnects += u64::from(reconnected);
        }
        Answer {
            outcome,
            route,
            failure,
            reconnected,
            script_reloaded: false,
            breaker: self.breaker_state(),
        }
    }
}

/// When the breaker's cooldown ends, while it is open and the store exists.
fn cooldown_ends(breaker: &std::sync::Weak<Mutex<Breaker>>) -> Option<Instant> {
    breaker.upgrade().and_then(|b| lock(&b).cooldown_ends())
}

/// Reports a probe as failed if its future is dropped before it returns.
struct ProbeGuard<'a> {
    store: &'a Store,
    armed: bool,
}

impl Drop for ProbeGuard<'_> {
    fn drop(&mut self) {
        if self.armed && self.store.record(Admission::Probe, false) {
            self.store.slot.forget_any();
        }
    }
}
