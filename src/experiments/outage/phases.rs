//! One phase of an outage run: checks on a fixed schedule (a closed-loop drill of one client,
//! crate::load::drill), a row per check, and the phase's summary (counts, median / p99 / max, the
//! first normal answer after the fault). The breaker sweep's drills use the same request.

use super::rows::{CheckRow, Phase, PhaseRow, RunLabel};
use crate::analysis::stats::nearest_rank;
use crate::experiments::PhaseError;
use crate::limiter::Strategy;
use crate::load::drill::{Call, Closed, Drill, Schedule, Stop, Stopper};
use crate::record::{suspend_offset_ns, CsvSink};
use crate::server::sched::ThreadRunDelay;
use crate::store::{Answer, Failure, Outcome, Route, Store};
use std::cell::Cell;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// How long warm-up waits for Redis's first answer.
pub(super) const WARM_UP_LIMIT: Duration = Duration::from_secs(5);

/// Tokio's timer resolution: the lateness probe sleeps one tick at a time.
const TIMER_TICK: Duration = Duration::from_millis(1);

/// A check during which CLOCK_BOOTTIME - CLOCK_MONOTONIC grew by more than this slept.
const SUSPEND_NS: i128 = 10_000_000;

/// Runs checks for one store and records them.
pub struct Driver<'a> {
    pub rt: &'a tokio::runtime::Runtime,
    pub store: Rc<Store>,
    pub key: Rc<str>,
    /// Who decides: the built-in strategy or a custom limiter.
    pub limiter: Strategy,
    pub label: RunLabel,
    pub interval: Duration,
    /// The store's whole-call budget, for each phase's slowest check beyond it.
    pub budget: Duration,
    pub checks: &'a mut CsvSink<CheckRow>,
}

/// What one check of an outage drill returned.
pub struct Checked {
    pub answer: Result<Answer, String>,
    /// CLOCK_BOOTTIME - CLOCK_MONOTONIC grew during it: the machine slept.
    pub suspended: bool,
    /// How long the checking thread waited for its CPU during the check (schedstat), µs: time the
    /// machine, not Redis or the client, added to it. None where schedstat cannot be read.
    pub run_queue_us: Option<f64>,
}

impl Checked {
    /// The store's answer; its error fails the drill's reading.
    pub fn answer(&self) -> Result<&Answer, PhaseError> {
        (self.answer.as_ref()).map_err(|e| PhaseError::Invalid(e.clone()))
    }
}

/// A drill's one client, checking an interval apart (or right after a check that ran over),
/// until `stop`.
pub fn paced(interval: Duration, stop: Stop) -> Schedule {
    Schedule::Closed(Closed {
        clients: 1,
        pace: Some(interval),
        stop,
    })
}

/// The request of outage's drills: one check of `store`; an error (a limiter bug, never
/// expected) stops the drill and fails its reading.
pub fn checker(
    store: &Rc<Store>,
    key: &Rc<str>,
    stopper: Stopper,
) -> impl Fn(Call) -> Pin<Box<dyn Future<Output = Checked>>> {
    let (store, key) = (Rc::clone(store), Rc::clone(key));
    // The drill runs on this thread (a current-thread runtime): its schedstat, opened once.
    let waits = Rc::new(ThreadRunDelay::open());
    move |_| {
        let (store, key, stopper) = (Rc::clone(&store), Rc::clone(&key), stopper.clone());
        let waits = Rc::clone(&waits);
        Box::pin(async move {
            let (slept_before, waited_before) = (suspend_offset_ns(), waits.now_ns());
            let answer = store.check(&key).await.map_err(|e| e.to_string());
            let waited = waited_before.zip(waits.now_ns());
            if answer.is_err() {
                stopper.stop();
            }
            Checked {
                answer,
                suspended: suspend_offset_ns() - slept_before > SUSPEND_NS,
                run_queue_us: waited
                    .map(|(before, after)| after.saturating_sub(before) as f64 / 1e3),
            }
        })
    }
}

impl Driver<'_> {
    /// Unrecorded checks that connect and load the script, `n` of them and then more, an interval
    /// apart, until Redis answers one (a fail-fast store connects in the background meanwhile);
    /// an error if it has not within `WARM_UP_LIMIT`, except for a custom limiter: one that never
    /// decides (a script sent by EVALSHA alone, which no one loaded on this server) is what the
    /// phases then measure, and Ok(false) says so.
    pub fn warm_up(&mut self, n: u64) -> Result<bool, PhaseError> {
        let started = Instant::now();
        let mut i = 0;
        loop {
            let answer = self.rt.block_on(self.store.check(&self.key));
            let answer = answer.map_err(|e| PhaseError::Invalid(e.to_string()))?;
            i += 1;
            if i >= n && answer.outcome.is_normal() {
                return Ok(true);
            }
            if started.elapsed() > WARM_UP_LIMIT && self.limiter.is_custom() {
                return Ok(false);
            }
            if started.elapsed() > WARM_UP_LIMIT {
                return Err(PhaseError::Invalid(format!(
                    "warm-up: Redis did not answer within {WARM_UP_LIMIT:?} ({answer:?})"
                )));
            }
            // Inside the runtime, so a background reconnect makes progress meanwhile.
            let interval = self.interval;
            self.rt
                .block_on(async move { tokio::time::sleep(interval).await });
        }
    }

    /// After a restarted phase with no normal answer: unrecorded checks an interval apart until
    /// Redis answers one, at most `WARM_UP_LIMIT` (`recovery_checks` and `recovered_ms` in `row`),
    /// so the hung phase starts on a connected client, as a stopped server's clients are.
    pub fn until_normal(
        &mut self,
        row: &mut PhaseRow,
        fault_at: Instant,
    ) -> Result<(), PhaseError> {
        if row.first_normal_seq.is_some() {
            return Ok(());
        }
        let started = Instant::now();
        let mut made = 0;
        loop {
            let answer = self.rt.block_on(self.store.check(&self.key));
            let answer = answer.map_err(|e| PhaseError::Invalid(e.to_string()))?;
            made += 1;
            row.recovery_checks = Some(made);
            if answer.outcome.is_normal() {
                row.recovered_ms = Some(fault_at.elapsed().as_secs_f64() * 1e3);
                return Ok(());
            }
            if started.elapsed() > WARM_UP_LIMIT {
                return Ok(());
            }
            let interval = self.interval;
            self.rt
                .block_on(async move { tokio::time::sleep(interval).await });
        }
    }

    /// `n` checks paced by the interval, as a drill whose clock starts at `fault_at`, when the
    /// phase's fault took effect: the origin of `at_ms` and of the time to the first normal answer.
    pub fn phase(
        &mut self,
        phase: Phase,
        fault_at: Instant,
        n: u64,
    ) -> Result<PhaseRow, PhaseError> {
        let drill = Drill::<PhaseError>::new(fault_at, paced(self.interval, Stop::Requests(n)));
        let request = checker(&self.store, &self.key, drill.stopper());
        let timer_late = Rc::new(Cell::new(Duration::ZERO));
        let ran = self.rt.block_on(async {
            tokio::select! {
                ran = drill.run(request) => ran,
                never = timer_lateness(Rc::clone(&timer_late)) => match never {},
            }
        })?;
        let (policy, breaker, k, cooldown_ms) = self.label.columns();
        let mut acc = Acc::default();
        for r in &ran.records {
            let answer = r.out.answer()?;
            let row = CheckRow {
                limiter: Some(self.limiter),
                policy,
                breaker: breaker.to_string(),
                k,
                cooldown_ms,
                reconnect: self.label.reconnect,
                phase,
                seq: r.seq,
                at_ms: r.start_ns as f64 / 1e6,
                latency_us: (r.end_ns - r.start_ns) as f64 / 1e3,
                outcome: answer.outcome,
                route: answer.route,
                failure: answer.failure,
                breaker_state: answer.breaker,
                reconnected: answer.reconnected,
                script_reloaded: answer.script_reloaded,
                suspended: r.out.suspended,
                run_queue_us: r.out.run_queue_us,
            };
            self.checks.write(&row)?;
            acc.add(&row);
        }
        let mut row = acc.row(Some(self.limiter), self.label, phase);
        row.over_budget_ms = row.max_ms - self.budget.as_secs_f64() * 1e3;
        row.timer_late_max_ms = Some(timer_late.get().as_secs_f64() * 1e3);
        Ok(row)
    }
}

/// A tokio sleep of one tick (1 ms), again and again, each timed against its own deadline; the
/// worst lateness goes into `worst`. Beside a phase's checks on their runtime it reads how late
/// that runtime's timers fire (tick rounding, a late wake-up, a busy or descheduled thread) while
/// the checks' own timeouts are due: a bound measured in the run for what a timeout may add.
async fn timer_lateness(worst: Rc<Cell<Duration>>) -> Infallible {
    loop {
        let due = tokio::time::Instant::now() + TIMER_TICK;
        tokio::time::sleep_until(due).await;
        let late = tokio::time::Instant::now().saturating_duration_since(due);
        worst.set(worst.get().max(late));
    }
}

/// Running totals of a phase.
#[derive(Default)]
struct Acc {
    latencies_ms: Vec<f64>,
    outcomes: [u64; 4],
    paid_budget: u64,
    short_circuited: u64,
    probes: u64,
    first_normal: Option<(u64, f64)>,
    reconnects: u64,
    script_reloads: u64,
    suspended: u64,
}

impl Acc {
    fn add(&mut self, r: &CheckRow) {
        let latency_ms = r.latency_us / 1e3;
        self.latencies_ms.push(latency_ms);
        self.outcomes[r.outcome as usize] += 1;
        self.paid_budget +=
            u64::from(r.route == Route::Redis && r.failure == Some(Failure::Timeout));
        self.short_circuited += u64::from(r.route == Route::Open);
        self.probes += u64::from(r.route == Route::Probe);
        if r.outcome.is_normal() && self.first_normal.is_none() {
            self.first_normal = Some((r.seq, r.at_ms + latency_ms));
        }
        self.reconnects += u64::from(r.reconnected);
        self.script_reloads += u64::from(r.script_reloaded);
        self.suspended += u64::from(r.suspended);
    }

    fn row(mut self, limiter: Option<Strategy>, label: RunLabel, phase: Phase) -> PhaseRow {
        let (policy, breaker, k, cooldown_ms) = label.columns();
        self.latencies_ms.sort_by(f64::total_cmp);
        let l = &self.latencies_ms;
        PhaseRow {
            limiter,
            policy,
            breaker: breaker.to_string(),
            k,
            cooldown_ms,
            reconnect: label.reconnect,
            phase,
            checks: l.len() as u64,
            allowed: self.outcomes[Outcome::Allowed as usize],
            denied: self.outcomes[Outcome::Denied as usize],
            degraded_allowed: self.outcomes[Outcome::DegradedAllowed as usize],
            degraded_denied: self.outcomes[Outcome::DegradedDenied as usize],
            paid_budget: self.paid_budget,
            short_circuited: self.short_circuited,
            probes: self.probes,
            min_ms: l.first().copied().unwrap_or(0.0),
            median_ms: nearest_rank(l, 0.5),
            p99_ms: nearest_rank(l, 0.99),
            max_ms: l.last().copied().unwrap_or(0.0),
            mean_ms: l.iter().sum::<f64>() / l.len().max(1) as f64,
            over_budget_ms: 0.0,
            timer_late_max_ms: None,
            first_normal_seq: self.first_normal.map(|f| f.0),
            first_normal_ms: self.first_normal.map(|f| f.1),
            recovery_checks: None,
            recovered_ms: None,
            reconnects: self.reconnects,
            script_reloads: self.script_reloads,
            suspended_checks: self.suspended,
        }
    }
}

/// A phase row with the given figures and zeros elsewhere, for tests of what reads phases.csv.
#[cfg(test)]
pub(super) fn tests_row(
    label: RunLabel,
    phase: Phase,
    [min_ms, median_ms, max_ms]: [f64; 3],
    paid_budget: u64,
    first_normal_seq: Option<u64>,
    script_reloads: u64,
) -> PhaseRow {
    let mut row = Acc::default().row(None, label, phase);
    row.min_ms = min_ms;
    row.median_ms = median_ms;
    row.p99_ms = max_ms;
    row.max_ms = max_ms;
    row.paid_budget = paid_budget;
    row.first_normal_seq = first_normal_seq;
    row.first_normal_ms = first_normal_seq.map(|s| s as f64 * 2.0);
    row.script_reloads = script_reloads;
    row
}
