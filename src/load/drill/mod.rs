//! One engine for timed drills. A drill is a schedule of requests (open loop: each starts at its
//! planned instant whatever the replies do; closed loop: clients each one request at a time,
//! paced or back to back) and a plan of faults fired at planned instants beside it (each an
//! experiment's callback: a signal, a proxy mode, a promotion, a flush). Every request is recorded
//! with its intended start, its real start and its end; every fault with its planned and real
//! instants. Readings bin the records with [`Bins`], the one binning routine. What stays in an
//! experiment is its plan, its request, and its reading of the records.
//!
//! It runs on the caller's current-thread runtime: requests are local tasks on a `LocalSet` the
//! engine makes, so a request owns what it uses (`Rc`, `Arc`); the plan runs inline, so a fault
//! may borrow the experiment's state (a proxy, an admin connection) for the drill's length.
//! Requests start by tokio's timers (whole ms) unless the drill asks for the precise one
//! ([`Drill::precise`]); faults always fire by tokio's.

mod bins;
mod run;

pub use bins::Bins;

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// What a request is told: who sends it and when it was meant to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    /// Closed loop: the client (0..clients). Open loop: 0.
    pub client: usize,
    /// Open loop: the arrival's index in the schedule. Closed loop: the client's n-th request.
    pub seq: u64,
    /// The arrival's tag (open loop: which key, which service); 0 in a closed loop.
    pub tag: u64,
    /// The intended start, ns after the drill's origin.
    pub intended_ns: u64,
}

/// One request as the engine saw it, ns after the drill's origin, and what it returned.
#[derive(Debug, Clone, PartialEq)]
pub struct Record<O> {
    pub client: usize,
    pub seq: u64,
    pub tag: u64,
    /// When it was meant to start: the schedule's instant (open), or the pace's (closed).
    pub intended_ns: u64,
    /// When it started (its task first ran) and when its future completed.
    pub start_ns: u64,
    pub end_ns: u64,
    pub out: O,
}

/// One open-loop arrival: its instant (ns after the origin) and a tag handed to the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    pub at_ns: u64,
    pub tag: u64,
}

/// How requests start.
#[derive(Debug, Clone, PartialEq)]
pub enum Schedule {
    /// Each arrival starts at its instant, whatever earlier ones are doing (ascending instants).
    Open(Vec<Arrival>),
    /// `clients` clients, each one request at a time.
    Closed(Closed),
}

impl Schedule {
    /// An open loop of untagged starts (ns after the origin, ascending).
    pub fn open(starts: Vec<u64>) -> Schedule {
        Schedule::Open(
            starts
                .into_iter()
                .map(|at_ns| Arrival { at_ns, tag: 0 })
                .collect(),
        )
    }

    /// Several open-loop streams side by side as one schedule, each arrival tagged with its
    /// stream's index; within a stream the order is kept.
    pub fn streams(streams: Vec<Vec<u64>>) -> Schedule {
        let mut all: Vec<Arrival> = (streams.into_iter().enumerate())
            .flat_map(|(i, s)| {
                s.into_iter().map(move |at_ns| Arrival {
                    at_ns,
                    tag: i as u64,
                })
            })
            .collect();
        all.sort_by_key(|a| a.at_ns);
        Schedule::Open(all)
    }
}

/// A closed loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed {
    pub clients: usize,
    /// Each request starts this long after the client's previous one started, or as soon as it
    /// ended if it ran over (no catching up); None: back to back.
    pub pace: Option<Duration>,
    pub stop: Stop,
}

/// When a closed-loop client stops (besides the drill's [`Stopper`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// After this many requests (each client).
    Requests(u64),
    /// No request is meant to start at or after this long past the origin.
    At(Duration),
}

/// A switch any request or fault can throw: no request starts after it is thrown (open loop:
/// the remaining arrivals are not sent, and are not recorded).
#[derive(Debug, Clone, Default)]
pub struct Stopper(Rc<Cell<bool>>);

impl Stopper {
    /// Stops the drill's requests from starting.
    pub fn stop(&self) {
        self.0.set(true);
    }

    /// Whether it was thrown.
    pub fn stopped(&self) -> bool {
        self.0.get()
    }
}

/// When a fault fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// This long after the drill's origin.
    At(Duration),
    /// This long after the previous fault of the plan started (an operator's reaction to it).
    AfterPrevious(Duration),
}

type Act<'a, E> = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = Result<(), E>> + 'a>> + 'a>;

/// One fault of the plan: an experiment's callback, fired once at its instant.
pub struct Fault<'a, E> {
    name: String,
    when: When,
    act: Act<'a, E>,
}

/// A fault as it happened, ns after the origin (a fault `AfterPrevious` is planned from the
/// previous one's real start).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fired {
    pub name: String,
    pub planned_ns: u64,
    /// When its callback was called, and when it returned.
    pub started_ns: u64,
    pub done_ns: u64,
}

/// A span of the drill between faults: before the first (`fault` None), then from each fault's
/// start to the next one's, the last to the drill's end given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span<'r> {
    pub fault: Option<&'r str>,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// A drill to run: its origin, schedule and plan.
pub struct Drill<'a, E> {
    origin: Instant,
    schedule: Schedule,
    plan: Vec<Fault<'a, E>>,
    hold: Option<Duration>,
    stopper: Stopper,
    precise: bool,
}

impl<'a, E: 'a> Drill<'a, E> {
    /// A drill whose clock starts at `origin` (may be now, ahead to leave set-up time, or past:
    /// the fault the drill measures the aftermath of); closed-loop clients start at once if it
    /// has passed.
    pub fn new(origin: Instant, schedule: Schedule) -> Self {
        Drill {
            origin,
            schedule,
            plan: Vec::new(),
            hold: None,
            stopper: Stopper::default(),
            precise: false,
        }
    }

    /// Adds a fault: `act` is called once, at `when`, after the faults added before it returned.
    pub fn fault<F, Fut>(mut self, when: When, name: impl Into<String>, act: F) -> Self
    where
        F: FnOnce() -> Fut + 'a,
        Fut: Future<Output = Result<(), E>> + 'a,
    {
        let act: Act<'a, E> = Box::new(move || Box::pin(act()));
        self.plan.push(Fault {
            name: name.into(),
            when,
            act,
        });
        self
    }

    /// The drill lasts at least this long after its origin, requests finished or not (a last
    /// window after the last fault).
    pub fn hold_until(mut self, after_origin: Duration) -> Self {
        self.hold = Some(after_origin);
        self
    }

    /// Starts requests by a µs-precise timer (load's timerfd) instead of tokio's whole-ms ticks:
    /// a pace of a few ms would otherwise stretch by up to a ms per request.
    pub fn precise(mut self) -> Self {
        self.precise = true;
        self
    }

    /// The drill's stop switch, for a request or a fault to throw.
    pub fn stopper(&self) -> Stopper {
        self.stopper.clone()
    }
}

/// What a drill recorded.
#[derive(Debug, Clone)]
pub struct Ran<O> {
    /// The drill's clock: every ns below is after it.
    pub origin: Instant,
    /// Every request started, by intended start (then client, then seq).
    pub records: Vec<Record<O>>,
    /// Every fault of the plan, in plan order.
    pub faults: Vec<Fired>,
    /// Open loop: arrivals in the schedule (all recorded unless the stopper was thrown).
    pub scheduled: u64,
    /// When the last request ended or the plan and hold were done, whichever came later.
    pub end_ns: u64,
}

impl<O> Ran<O> {
    /// `at` on the drill's clock, ns (negative: before the origin).
    pub fn ns(&self, at: Instant) -> i64 {
        signed_ns(self.origin, at)
    }

    /// The spans between faults, the last one ending at `end_ns`, or where it starts if its fault
    /// fired later than that (a stalled machine): a span never ends before it starts.
    pub fn spans(&self, end_ns: u64) -> Vec<Span<'_>> {
        let last_start = self.faults.last().map_or(0, |f| f.started_ns);
        let end_ns = end_ns.max(last_start);
        let starts = std::iter::once((None, 0))
            .chain((self.faults.iter()).map(|f| (Some(f.name.as_str()), f.started_ns)));
        let ends = (self.faults.iter().map(|f| f.started_ns)).chain([end_ns]);
        (starts.zip(ends))
            .map(|((fault, start_ns), end_ns)| Span {
                fault,
                start_ns,
                end_ns,
            })
            .collect()
    }

    /// The fault named `name`, if the plan had one.
    pub fn fault(&self, name: &str) -> Option<&Fired> {
        self.faults.iter().find(|f| f.name == name)
    }
}

/// `at - origin` in ns, negative when `at` is earlier.
pub fn signed_ns(origin: Instant, at: Instant) -> i64 {
    match at.checked_duration_since(origin) {
        Some(d) => d.as_nanos() as i64,
        None => -(origin.duration_since(at).as_nanos() as i64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fired(name: &str, started_ns: u64) -> Fired {
        Fired {
            name: name.into(),
            planned_ns: started_ns,
            started_ns,
            done_ns: started_ns,
        }
    }

    fn ran(faults: Vec<Fired>) -> Ran<()> {
        Ran {
            origin: Instant::now(),
            records: Vec::new(),
            faults,
            scheduled: 0,
            end_ns: 0,
        }
    }

    #[test]
    fn spans_run_from_fault_to_fault_and_the_last_to_the_end() {
        let ran = ran(vec![fired("a", 10), fired("b", 30)]);
        let spans: Vec<_> = ran
            .spans(50)
            .iter()
            .map(|s| (s.fault, s.start_ns, s.end_ns))
            .collect();
        assert_eq!(
            spans,
            [(None, 0, 10), (Some("a"), 10, 30), (Some("b"), 30, 50)]
        );
    }

    /// A fault that fired after the end asked for (chaos's last switch on a stalled machine) once
    /// made its span end before it started, and chaos's window length underflowed.
    #[test]
    fn a_fault_later_than_the_end_gives_an_empty_span_not_a_negative_one() {
        let ran = ran(vec![fired("a", 10), fired("late", 70)]);
        let last = ran
            .spans(50)
            .pop()
            .expect("a span per fault and one before");
        assert_eq!((last.start_ns, last.end_ns), (70, 70));
    }
}
