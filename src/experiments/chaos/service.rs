//! The model service of seed 003: `workers` workers; requests arrive on an open-loop schedule (a
//! request's latency counts from its intended start); each takes a free worker, or waits for one
//! in a bounded queue and is dropped when the queue is full or it waited `queue_wait`; a worker
//! asks the limiter through the store (its timeout and fail-open), then does `work` (a sleep: what
//! matters is that the worker is occupied), then takes the next request. Everything is recorded
//! raw (one record per request, a sample of the pool every few ms) and binned afterwards.

use crate::load::rng::SplitMix64;
use crate::store::{Outcome, Store};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// Random stream of key choice (the schedule has its own).
const KEY_STREAM: u64 = 0xc4a0_5eed;

/// The service's shape.
#[derive(Debug, Clone)]
pub struct ServiceSpec {
    pub workers: usize,
    pub queue_max: usize,
    pub queue_wait: Duration,
    pub work: Duration,
    /// Requests pick one of this many keys (tenants) at random.
    pub keys: u64,
    pub key_prefix: String,
    /// How often the pool is sampled.
    pub sample_every: Duration,
}

/// What became of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// A worker finished it; the limiter's answer.
    Served(Outcome),
    /// No worker in time, or the queue was full.
    Dropped,
    /// The store reported a limiter bug.
    Error,
}

/// One request, in ns after the schedule's start.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    pub intended_ns: u64,
    /// When it took a worker and when the limiter answered (both `end_ns` if it was dropped):
    /// where its latency went.
    pub worker_ns: u64,
    pub answered_ns: u64,
    pub end_ns: u64,
    pub fate: Fate,
}

/// The pool at one instant, and the client's fail-open counter then.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub t_ns: u64,
    pub busy: u64,
    pub waiting: u64,
    pub fail_open: u64,
}

/// Everything the service saw.
#[derive(Debug, Default)]
pub struct Trace {
    pub requests: Vec<Request>,
    pub samples: Vec<Sample>,
    /// Every instant the last free worker was taken.
    pub all_busy_ns: Vec<u64>,
    /// The first limiter bug, if any.
    pub first_error: Option<String>,
}

struct Shared {
    spec: ServiceSpec,
    store: Arc<Store>,
    pool: Semaphore,
    busy: AtomicUsize,
    waiting: AtomicUsize,
    t0: Instant,
    trace: Mutex<Trace>,
}

impl Shared {
    fn ns(&self) -> u64 {
        self.t0.elapsed().as_nanos() as u64
    }

    fn trace(&self) -> std::sync::MutexGuard<'_, Trace> {
        self.trace.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn sample(&self) -> Sample {
        Sample {
            t_ns: self.ns(),
            busy: self.busy.load(Ordering::Relaxed) as u64,
            waiting: self.waiting.load(Ordering::Relaxed) as u64,
            fail_open: self.store.counters().degraded_allowed,
        }
    }
}

/// Serves `schedule` (intended starts, ns after `t0`) until every request is finished or dropped.
pub async fn serve(
    store: Arc<Store>,
    spec: ServiceSpec,
    schedule: Vec<u64>,
    seed: u64,
    t0: Instant,
) -> Trace {
    let shared = Arc::new(Shared {
        pool: Semaphore::new(spec.workers),
        spec,
        store,
        busy: AtomicUsize::new(0),
        waiting: AtomicUsize::new(0),
        t0,
        trace: Mutex::new(Trace::default()),
    });
    let done = Arc::new(AtomicBool::new(false));
    let sampler = tokio::spawn(sample_until(Arc::clone(&shared), Arc::clone(&done)));
    let mut rng = SplitMix64::new(seed, KEY_STREAM);
    let mut requests = JoinSet::new();
    for intended_ns in schedule {
        tokio::time::sleep_until(t0 + Duration::from_nanos(intended_ns)).await;
        let key = format!("{}{}", shared.spec.key_prefix, rng.below(shared.spec.keys));
        requests.spawn(request(Arc::clone(&shared), intended_ns, key));
        while requests.try_join_next().is_some() {}
    }
    while requests.join_next().await.is_some() {}
    done.store(true, Ordering::Relaxed);
    // The sampler only ever sleeps and samples: it cannot fail but by a panic, already reported.
    let _ = sampler.await;
    let last = shared.sample();
    let mut trace = std::mem::take(&mut *shared.trace());
    trace.samples.push(last);
    trace
}

async fn sample_until(shared: Arc<Shared>, done: Arc<AtomicBool>) {
    let mut tick = tokio::time::interval(shared.spec.sample_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !done.load(Ordering::Relaxed) {
        tick.tick().await;
        let s = shared.sample();
        shared.trace().samples.push(s);
    }
}

async fn request(shared: Arc<Shared>, intended_ns: u64, key: String) {
    let intended = shared.t0 + Duration::from_nanos(intended_ns);
    let finish = |fate, worker_ns: Option<u64>, answered_ns: Option<u64>| {
        let end_ns = shared.ns();
        shared.trace().requests.push(Request {
            intended_ns,
            worker_ns: worker_ns.unwrap_or(end_ns),
            answered_ns: answered_ns.unwrap_or(end_ns),
            end_ns,
            fate,
        });
    };
    let permit = match shared.pool.try_acquire() {
        Ok(permit) => permit,
        Err(_) => {
            // The semaphore is fair: a waiter is served in arrival order, never overtaken.
            if shared.waiting.load(Ordering::Relaxed) >= shared.spec.queue_max {
                return finish(Fate::Dropped, None, None);
            }
            shared.waiting.fetch_add(1, Ordering::Relaxed);
            let deadline = intended + shared.spec.queue_wait;
            let got = tokio::time::timeout_at(deadline, shared.pool.acquire()).await;
            shared.waiting.fetch_sub(1, Ordering::Relaxed);
            match got {
                Ok(Ok(permit)) => permit,
                _ => return finish(Fate::Dropped, None, None),
            }
        }
    };
    let worker_ns = shared.ns();
    if shared.busy.fetch_add(1, Ordering::Relaxed) + 1 == shared.spec.workers {
        shared.trace().all_busy_ns.push(worker_ns);
    }
    let answer = shared.store.check(&key).await;
    let answered_ns = shared.ns();
    tokio::time::sleep(shared.spec.work).await;
    shared.busy.fetch_sub(1, Ordering::Relaxed);
    drop(permit);
    match answer {
        Ok(a) => finish(Fate::Served(a.outcome), Some(worker_ns), Some(answered_ns)),
        Err(e) => {
            shared.trace().first_error.get_or_insert(e.to_string());
            finish(Fate::Error, Some(worker_ns), Some(answered_ns))
        }
    }
}
