//! The body of one worker: tasks on a current-thread runtime, `in_flight` of them per connection
//! sharing it, each taking the next check until the worker's stop rule says done.

use super::latency;
use super::rng::SplitMix64;
use super::{CheckTally, KeyChoice, LoadError, Stop, WorkerSpec};
use crate::limiter::{Check, Decide, Decider, Link};
use hdrhistogram::Histogram;
use redis::aio::MultiplexedConnection;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// The worker's decider: its strategy bound to its limit (before the start signal, so starting
/// it, a limiter process's adapter included, is not measured).
pub fn decider(spec: &WorkerSpec) -> Result<Decider, LoadError> {
    let reach = spec.timeouts.reach(&spec.url);
    Ok(Decider::reaching(
        spec.strategy,
        spec.limit,
        spec.invocation,
        &reach,
    )?)
}

/// Opens the connections `decider` takes from the worker (before the start signal, so
/// connecting is not measured).
pub async fn connect(
    spec: &WorkerSpec,
    decider: &Decider,
) -> Result<Vec<MultiplexedConnection>, LoadError> {
    let client = crate::server::endpoint::client(spec.url.as_str())?;
    let mut cons = Vec::with_capacity(spec.connections);
    for _ in 0..connections_needed(spec, decider.link()) {
        cons.push(
            client
                .get_multiplexed_async_connection_with_config(&spec.timeouts.config())
                .await?,
        );
    }
    Ok(cons)
}

/// One connection per client; strategies whose state lives on the connection (WATCH) get one per
/// in-flight request instead, and a decider with its own link none.
fn connections_needed(spec: &WorkerSpec, link: Link) -> usize {
    let clients = spec.connections.max(1);
    match link {
        Link::Shared => clients,
        Link::PerInFlight => clients * spec.in_flight.max(1),
        Link::Own => 0,
    }
}

/// What the tasks of one worker share. Single-threaded: plain cells, no locks on the hot path.
pub(super) struct Shared {
    pub(super) decider: Decider,
    pub(super) stop: StopState,
    keys: KeyChoice,
    /// Tokens each check asks for.
    cost: u32,
    rng: RefCell<SplitMix64>,
    /// Checks handed out so far, for round-robin keys.
    handed_out: Cell<u64>,
    pub(super) tally: RefCell<CheckTally>,
    pub(super) histogram: Option<RefCell<Histogram<u64>>>,
}

pub(super) enum StopState {
    Remaining(Cell<u64>),
    Deadline(Instant),
}

impl StopState {
    fn take_one(&self) -> bool {
        match self {
            StopState::Remaining(left) => take_one(left),
            StopState::Deadline(at) => Instant::now() < *at,
        }
    }

    /// Takes up to `wanted` checks at once (one clock read for all of them): how many it got.
    pub(super) fn take_up_to(&self, wanted: usize) -> usize {
        match self {
            StopState::Remaining(left) => {
                let n = left.get().min(wanted as u64);
                left.set(left.get() - n);
                n as usize
            }
            StopState::Deadline(at) if wanted > 0 && Instant::now() < *at => wanted,
            StopState::Deadline(_) => 0,
        }
    }
}

impl Shared {
    pub(super) fn new(spec: &WorkerSpec, decider: Decider) -> Result<Self, LoadError> {
        let stop = match spec.stop {
            Stop::AfterChecks(n) => StopState::Remaining(Cell::new(n)),
            Stop::AfterMs(ms) => StopState::Deadline(Instant::now() + Duration::from_millis(ms)),
        };
        let histogram = match spec.record_latency {
            true => Some(RefCell::new(latency::new_histogram()?)),
            false => None,
        };
        Ok(Shared {
            decider,
            stop,
            keys: spec.keys.clone(),
            cost: spec.cost,
            rng: RefCell::new(SplitMix64::new(spec.seed, spec.worker_index)),
            handed_out: Cell::new(0),
            tally: RefCell::new(CheckTally::default()),
            histogram,
        })
    }

    fn next_key(&self) -> String {
        let mut key = String::new();
        self.write_key(&mut key);
        key
    }

    /// The next check's key, written over `key` (no allocation once it has grown).
    pub(super) fn write_key(&self, key: &mut String) {
        key.clear();
        match &self.keys {
            KeyChoice::One(one) => key.push_str(one),
            KeyChoice::Uniform { prefix, count } => {
                let index = self.rng.borrow_mut().below(*count);
                KeyChoice::write_indexed(key, prefix, index);
            }
            KeyChoice::RoundRobin { prefix, count } => {
                let n = self.handed_out.get();
                self.handed_out.set(n + 1);
                KeyChoice::write_indexed(key, prefix, n % (*count).max(1));
            }
        }
    }

    /// The tally so far, with the elapsed time since `started` and the latencies.
    pub(super) fn finish(&self, started: Instant) -> CheckTally {
        let mut out = self.tally.take();
        out.elapsed_ns = started.elapsed().as_nanos() as u64;
        if let Some(h) = &self.histogram {
            out.latency_ns = latency::buckets(&h.borrow());
        }
        out
    }
}

/// Runs the worker's checks by `decider` on `cons` (from `connect`) from the moment it is
/// called; needs a `LocalSet`.
pub async fn run_checks(
    spec: &WorkerSpec,
    decider: Decider,
    cons: Vec<MultiplexedConnection>,
) -> Result<CheckTally, LoadError> {
    let link = decider.link();
    let shared = Rc::new(Shared::new(spec, decider)?);
    // Each client's tasks share its connection; WATCH's have one each; an own link takes none.
    let (lanes, per_lane): (Vec<Option<MultiplexedConnection>>, usize) = match link {
        Link::Shared => (cons.into_iter().map(Some).collect(), spec.in_flight.max(1)),
        Link::PerInFlight => (cons.into_iter().map(Some).collect(), 1),
        Link::Own => (vec![None; spec.connections.max(1)], spec.in_flight.max(1)),
    };
    let started = Instant::now();
    let mut tasks = Vec::new();
    for con in lanes {
        if spec.waves {
            tasks.push(tokio::task::spawn_local(waves(
                shared.clone(),
                con,
                per_lane,
            )));
            continue;
        }
        for _ in 0..per_lane {
            tasks.push(tokio::task::spawn_local(client_task(
                shared.clone(),
                con.clone(),
            )));
        }
    }
    for task in tasks {
        if let Err(e) = task.await {
            shared.failed(format!("task failed: {e}"));
        }
    }
    Ok(shared.finish(started))
}

/// One connection's checks in waves of `size`: each wave's checks start in one turn of the
/// runtime, and the next wave waits for all of them.
async fn waves(shared: Rc<Shared>, con: Option<MultiplexedConnection>, size: usize) {
    loop {
        let n = shared.stop.take_up_to(size);
        if n == 0 {
            return;
        }
        let wave: Vec<_> = (0..n)
            .map(|_| {
                let (shared, mut con) = (shared.clone(), con.clone());
                tokio::task::spawn_local(async move { check(&shared, con.as_mut()).await })
            })
            .collect();
        for task in wave {
            if let Err(e) = task.await {
                shared.failed(format!("task failed: {e}"));
            }
        }
    }
}

async fn client_task(shared: Rc<Shared>, mut con: Option<MultiplexedConnection>) {
    while shared.stop.take_one() {
        check(&shared, con.as_mut()).await;
    }
}

/// One check, tallied.
async fn check(shared: &Shared, con: Option<&mut MultiplexedConnection>) {
    let key = shared.next_key();
    let start = Instant::now();
    let check = Check {
        key: &key,
        cost: shared.cost,
    };
    let outcome = (shared.decider).decide(con, check).await.outcome;
    let took = start.elapsed().as_nanos() as u64;
    if let Some(h) = &shared.histogram {
        // Out-of-range values (beyond 60 s) are clamped rather than lost.
        h.borrow_mut().saturating_record(took.max(1));
    }
    let mut t = shared.tally.borrow_mut();
    match outcome {
        Ok(d) => {
            t.retries += u64::from(d.retries);
            t.aborted += u64::from(d.aborted);
            t.redis_calls += u64::from(d.redis_calls);
            t.noscript += u64::from(d.noscript);
            if d.allowed {
                t.admitted += 1;
            } else {
                t.denied += 1;
            }
        }
        Err(e) => t.failed(&e),
    }
}

impl Shared {
    /// Counts an error that is not a check's answer (a task that failed).
    fn failed(&self, why: String) {
        let mut t = self.tally.borrow_mut();
        t.errors += 1;
        t.first_error.get_or_insert(why);
    }
}

fn take_one(remaining: &Cell<u64>) -> bool {
    let left = remaining.get();
    if left == 0 {
        return false;
    }
    remaining.set(left - 1);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::{LimitSpec, Limiter, Strategy};

    #[test]
    fn round_robin_gives_every_key_the_same_share_in_turn() {
        let shared = Shared {
            decider: Decider::Redis(Limiter::new(Strategy::Get, LimitSpec::default())),
            stop: StopState::Remaining(Cell::new(0)),
            keys: KeyChoice::RoundRobin {
                prefix: "k:".into(),
                count: 3,
            },
            cost: 1,
            rng: RefCell::new(SplitMix64::new(1, 0)),
            handed_out: Cell::new(0),
            tally: RefCell::new(CheckTally::default()),
            histogram: None,
        };
        let keys: Vec<String> = (0..7).map(|_| shared.next_key()).collect();
        let k = |i: u64| KeyChoice::indexed("k:", i);
        assert_eq!(keys, [k(0), k(1), k(2), k(0), k(1), k(2), k(0)]);
        assert_eq!(k(7), "k:000000000007");
    }

    #[test]
    fn a_decider_with_its_own_link_runs_every_client_and_in_flight_task_without_connections() {
        let limit = LimitSpec {
            capacity: 4,
            window_ms: 3_600_000,
            ..LimitSpec::default()
        };
        let keys = KeyChoice::One("k".into());
        let spec = WorkerSpec {
            connections: 2,
            in_flight: 3,
            ..WorkerSpec::new(Strategy::Get, limit, keys, Stop::AfterChecks(10))
        };
        let decider = Decider::in_memory(limit);
        assert_eq!(connections_needed(&spec, decider.link()), 0);
        let rt = tokio::runtime::Builder::new_current_thread().build();
        let local = tokio::task::LocalSet::new();
        let tally = local
            .block_on(
                &rt.expect("a runtime"),
                run_checks(&spec, decider, Vec::new()),
            )
            .expect("runs");
        assert_eq!((tally.admitted, tally.denied, tally.errors), (4, 6, 0));
        assert_eq!(tally.redis_calls, 0);
    }

    #[test]
    fn quota_is_taken_exactly() {
        let left = Cell::new(3);
        let taken = std::iter::from_fn(|| take_one(&left).then_some(())).count();
        assert_eq!(taken, 3);
        assert!(!take_one(&left));
    }
}
