//! The body of one open-loop worker: a scheduler that starts each request as its own task when
//! it is due, a pool of connections, and histograms of latency (from the intended start) and of
//! how late each start was. What happens around each check (a pod works, then sends what it admitted) is
//! the caller's [`RequestHooks`].

use super::open::{OpenSpec, OpenTally, RequestRecord, LATE_NS};
use super::rng::SplitMix64;
use super::schedule::{aligned_start, share, Start};
use super::timer::PreciseTimer;
use super::{latency, CheckTally, KeyChoice, LoadError};
use crate::limiter::{Check, Decide, Decider, Decision, Invocation, LimiterError, Link};
use hdrhistogram::Histogram;
use redis::aio::MultiplexedConnection;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The worker's decider: its strategy bound to its limit, its script invoked the default way.
pub fn decider(spec: &OpenSpec) -> Result<Decider, LoadError> {
    let reach = spec.timeouts.reach(&spec.url);
    Ok(Decider::reaching(
        spec.strategy,
        spec.limit,
        Invocation::default(),
        &reach,
    )?)
}

/// Opens the pool `decider` takes from (before the start signal, so connecting is not
/// measured); none for a decider with its own link.
pub async fn connect(
    spec: &OpenSpec,
    decider: &Decider,
) -> Result<Vec<MultiplexedConnection>, LoadError> {
    let client = crate::server::endpoint::client(spec.url.as_str())?;
    let wanted = match decider.link() {
        Link::Own => 0,
        Link::Shared | Link::PerInFlight => spec.connections.max(1),
    };
    let mut cons = Vec::with_capacity(wanted);
    for _ in 0..wanted {
        let config = spec.timeouts.config();
        cons.push(
            client
                .get_multiplexed_async_connection_with_config(&config)
                .await?,
        );
    }
    Ok(cons)
}

/// Connections a request can take; single-threaded, so plain cells.
struct Pool {
    cons: Vec<MultiplexedConnection>,
    idle: RefCell<Vec<usize>>,
    next_shared: Cell<usize>,
}

impl Pool {
    /// An idle connection (exclusive: true), or the next busy one in turn when none is idle;
    /// none from an empty pool (a decider with its own link).
    fn checkout(&self) -> Option<(usize, bool)> {
        if let Some(i) = self.idle.borrow_mut().pop() {
            return Some((i, true));
        }
        if self.cons.is_empty() {
            return None;
        }
        let i = self.next_shared.get() % self.cons.len();
        self.next_shared.set(i + 1);
        Some((i, false))
    }
}

/// What the worker's tasks record; borrowed only between awaits.
struct Recorder {
    tally: CheckTally,
    latency: Histogram<u64>,
    lateness: Histogram<u64>,
    late_starts: u64,
    max_lateness_ns: u64,
    shared_sends: u64,
    in_flight: u64,
    max_in_flight: u64,
    requests: Option<Vec<RequestRecord>>,
}

/// What a worker does around each request (a pod works before the check and sends what it
/// admitted on after it).
pub(super) trait RequestHooks {
    /// Called when the request starts, before its check.
    fn before(&self) {}

    /// Called with the schedule's origin, the request's intended start, its check's send and the
    /// decision's arrival, and whether it was allowed (none: the check failed).
    fn after(
        &self,
        origin: Instant,
        times: [Instant; 3],
        allowed: Option<bool>,
    ) -> impl Future<Output = ()>;
}

/// A plain open-loop worker: nothing around the check.
impl RequestHooks for () {
    fn after(&self, _: Instant, _: [Instant; 3], _: Option<bool>) -> impl Future<Output = ()> {
        std::future::ready(())
    }
}

struct State<A> {
    decider: Decider,
    pool: Pool,
    keys: KeyChoice,
    rng: RefCell<SplitMix64>,
    /// Requests that have taken a key, for round-robin key sets.
    handed_out: std::cell::Cell<u64>,
    origin: Instant,
    rec: RefCell<Recorder>,
    /// What happens around each check (a pod's work and its link to the protected resource).
    hooks: A,
}

/// Runs this worker's share of the schedule by `decider` on `cons`; needs a `LocalSet`.
pub async fn run(
    spec: &OpenSpec,
    decider: Decider,
    cons: Vec<MultiplexedConnection>,
) -> Result<OpenTally, LoadError> {
    Ok(run_with(spec, cons, decider, ()).await?.0)
}

/// Runs the schedule with `decider`, `hooks` called around each check (a pod works before it,
/// forwards what it admits and counts per second after); hands `hooks` back with the tally.
pub(super) async fn run_with<A: RequestHooks + 'static>(
    spec: &OpenSpec,
    cons: Vec<MultiplexedConnection>,
    decider: Decider,
    hooks: A,
) -> Result<(OpenTally, A), LoadError> {
    let schedule = spec.arrivals.schedule(spec.seed);
    let starts = share(&schedule, spec.worker_index as usize, spec.workers as usize);
    let connections = cons.len() as u64;
    let (origin, origin_unix_ns) = origin(spec.start);
    let state = Rc::new(State {
        decider,
        pool: Pool {
            idle: RefCell::new((0..cons.len()).collect()),
            cons,
            next_shared: Cell::new(0),
        },
        keys: spec.keys.clone(),
        rng: RefCell::new(SplitMix64::new(spec.seed, 1 + spec.worker_index)),
        handed_out: std::cell::Cell::new(0),
        origin,
        rec: RefCell::new(Recorder::new(spec.record_requests)?),
        hooks,
    });
    let timer = PreciseTimer::new()?;
    let mut tasks = Vec::with_capacity(starts.len());
    for at_ns in &starts {
        let intended = origin + Duration::from_nanos(*at_ns);
        timer.sleep_until(intended).await?;
        tasks.push(tokio::task::spawn_local(request(state.clone(), intended)));
    }
    for task in tasks {
        if let Err(e) = task.await {
            let t = &mut state.rec.borrow_mut().tally;
            t.errors += 1;
            t.first_error
                .get_or_insert_with(|| format!("task failed: {e}"));
        }
    }
    // Every task has finished and dropped its handle on the state.
    let state = Rc::try_unwrap(state)
        .map_err(|_| LoadError::Protocol("open-loop requests outlived the run".into()))?;
    let (rec, hooks) = (state.rec.into_inner(), state.hooks);
    let mut tally = rec.tally;
    tally.elapsed_ns = origin.elapsed().as_nanos() as u64;
    tally.latency_ns = latency::buckets(&rec.latency);
    let tally = OpenTally {
        checks: tally,
        offered: starts.len() as u64,
        lateness_ns: latency::buckets(&rec.lateness),
        late_starts: rec.late_starts,
        max_lateness_ns: rec.max_lateness_ns,
        shared_sends: rec.shared_sends,
        max_in_flight: rec.max_in_flight,
        connections,
        origin_unix_ns,
        cpu_s: own_cpu_s(),
        requests: rec.requests.unwrap_or_default(),
    };
    Ok((tally, hooks))
}

/// CPU seconds (user + sys) this process has used so far; the worker does nothing else.
fn own_cpu_s() -> f64 {
    // SAFETY: rusage is plain data, filled by getrusage.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// The schedule's start as an Instant and as Unix ns on this machine's clock.
fn origin(start: Start) -> (Instant, u64) {
    let (now, now_unix) = (Instant::now(), unix_ns());
    match start {
        Start::AtGo => (now, now_unix),
        Start::Aligned {
            period_ms,
            phase_ms,
            offset_ns,
            lead_ms,
        } => {
            let at = aligned_start(now_unix, period_ms, phase_ms, offset_ns, lead_ms);
            (now + Duration::from_nanos(at.saturating_sub(now_unix)), at)
        }
        Start::AtUnixMs(ms) => {
            let at = ms.saturating_mul(1_000_000);
            // A go that arrived after the instant still starts the schedule at it: late starts.
            let origin = match at.checked_sub(now_unix) {
                Some(ahead) => now + Duration::from_nanos(ahead),
                None => now
                    .checked_sub(Duration::from_nanos(now_unix - at))
                    .unwrap_or(now),
            };
            (origin, at)
        }
    }
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

async fn request<A: RequestHooks>(state: Rc<State<A>>, intended: Instant) {
    state.hooks.before();
    let key = match &state.keys {
        KeyChoice::One(key) => key.clone(),
        KeyChoice::Uniform { prefix, count } => {
            let index = state.rng.borrow_mut().below(*count);
            KeyChoice::indexed(prefix, index)
        }
        KeyChoice::RoundRobin { prefix, count } => {
            let n = state.handed_out.get();
            state.handed_out.set(n + 1);
            KeyChoice::indexed(prefix, n % (*count).max(1))
        }
    };
    let lease = state.pool.checkout();
    let mut con = lease.map(|(index, _)| state.pool.cons[index].clone());
    let exclusive = lease.is_none_or(|(_, exclusive)| exclusive);
    let sent = Instant::now();
    state.rec.borrow_mut().started(intended, sent, exclusive);
    let check = Check::one(&key);
    let outcome = state.decider.decide(con.as_mut(), check).await.outcome;
    let done = Instant::now();
    let allowed = outcome.as_ref().ok().map(|d| d.allowed);
    if let Some((index, true)) = lease {
        state.pool.idle.borrow_mut().push(index);
    }
    let since = |t: Instant| t.saturating_duration_since(state.origin).as_nanos() as u64;
    let times = [since(intended), since(sent), since(done)];
    let took = done.saturating_duration_since(intended).as_nanos() as u64;
    state.rec.borrow_mut().finished(times, took, outcome);
    state
        .hooks
        .after(state.origin, [intended, sent, done], allowed)
        .await;
}

impl Recorder {
    fn new(keep_requests: bool) -> Result<Self, LoadError> {
        Ok(Recorder {
            tally: CheckTally::default(),
            latency: latency::new_histogram()?,
            lateness: latency::new_histogram()?,
            late_starts: 0,
            max_lateness_ns: 0,
            shared_sends: 0,
            in_flight: 0,
            max_in_flight: 0,
            requests: keep_requests.then(Vec::new),
        })
    }

    fn started(&mut self, intended: Instant, sent: Instant, exclusive: bool) {
        let late = sent.saturating_duration_since(intended).as_nanos() as u64;
        // Out-of-range values (beyond 60 s) are clamped rather than lost.
        self.lateness.saturating_record(late.max(1));
        self.max_lateness_ns = self.max_lateness_ns.max(late);
        self.late_starts += u64::from(late > LATE_NS);
        self.shared_sends += u64::from(!exclusive);
        self.in_flight += 1;
        self.max_in_flight = self.max_in_flight.max(self.in_flight);
    }

    fn finished(
        &mut self,
        [intended_ns, sent_ns, done_ns]: [u64; 3],
        took: u64,
        outcome: Result<Decision, LimiterError>,
    ) {
        self.in_flight -= 1;
        self.latency.saturating_record(took.max(1));
        let t = &mut self.tally;
        match outcome {
            Ok(d) => {
                t.redis_calls += u64::from(d.redis_calls);
                t.retries += u64::from(d.retries);
                t.aborted += u64::from(d.aborted);
                match d.allowed {
                    true => t.admitted += 1,
                    false => t.denied += 1,
                }
                if let Some(list) = self.requests.as_mut() {
                    list.push(RequestRecord {
                        intended_ns,
                        sent_ns,
                        done_ns,
                        allowed: d.allowed,
                    });
                }
            }
            Err(e) => t.failed(&e),
        }
    }
}
