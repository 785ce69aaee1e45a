//! The model service of seed 003: `workers` workers; requests arrive on an open-loop schedule (a
//! request's latency counts from its intended start); each takes a free worker, or waits for one
//! in a bounded queue and is dropped when the queue is full or it waited `queue_wait`; a worker
//! asks the limiter through the store (its timeout and fail-open), then does `work` (a sleep: what
//! matters is that the worker is occupied), then takes the next request. The drill engine
//! (crate::load::drill) starts and records the requests; the service samples its pool every few
//! ms beside them, and everything is binned afterwards.

use crate::load::drill::{Call, Record};
use crate::load::rng::SplitMix64;
use crate::store::{Outcome, Store};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;
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

/// One request, in ns after the schedule's start (the drill's record, read for the tally).
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

/// What the service's worker did with a request: when it took a worker and when the limiter
/// answered (None: dropped first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Served {
    pub worker_ns: Option<u64>,
    pub answered_ns: Option<u64>,
    pub fate: Fate,
}

impl Request {
    /// The drill's record of a request as the tally reads it.
    pub fn of(r: &Record<Served>) -> Request {
        Request {
            intended_ns: r.intended_ns,
            worker_ns: r.out.worker_ns.unwrap_or(r.end_ns),
            answered_ns: r.out.answered_ns.unwrap_or(r.end_ns),
            end_ns: r.end_ns,
            fate: r.out.fate,
        }
    }
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

/// One service: its pool, its store, its trace.
pub struct Service {
    spec: ServiceSpec,
    store: Arc<Store>,
    pool: Semaphore,
    busy: AtomicUsize,
    waiting: AtomicUsize,
    t0: Instant,
    keys: Mutex<SplitMix64>,
    done: AtomicBool,
    trace: Mutex<Trace>,
}

impl Service {
    /// A service whose clock starts at `t0` (the drill's origin); keys drawn from `seed`.
    pub fn new(store: Arc<Store>, spec: ServiceSpec, seed: u64, t0: Instant) -> Arc<Service> {
        Arc::new(Service {
            pool: Semaphore::new(spec.workers),
            spec,
            store,
            busy: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            t0,
            keys: Mutex::new(SplitMix64::new(seed, KEY_STREAM)),
            done: AtomicBool::new(false),
            trace: Mutex::new(Trace::default()),
        })
    }

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

    /// Samples the pool every `sample_every` until [`finish`](Self::finish).
    pub async fn sample_until_finished(self: Arc<Self>) {
        let mut tick = tokio::time::interval(self.spec.sample_every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        while !self.done.load(Ordering::Relaxed) {
            tick.tick().await;
            let s = self.sample();
            self.trace().samples.push(s);
        }
    }

    /// Stops the sampler; the trace so far, its requests from the drill's `records` (this
    /// service's own), with one last sample.
    pub fn finish(&self, records: &[&Record<Served>]) -> Trace {
        self.done.store(true, Ordering::Relaxed);
        let last = self.sample();
        let mut trace = std::mem::take(&mut *self.trace());
        trace.samples.push(last);
        trace.requests = records.iter().map(|r| Request::of(r)).collect();
        trace
    }

    /// One request of the drill (the key is drawn when it arrives, in schedule order).
    pub fn request(self: &Arc<Self>, call: Call) -> impl std::future::Future<Output = Served> {
        let key = format!("{}{}", self.spec.key_prefix, self.next_key());
        let service = Arc::clone(self);
        async move { service.serve(call.intended_ns, key).await }
    }

    fn next_key(&self) -> u64 {
        let mut rng = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        rng.below(self.spec.keys)
    }

    async fn serve(&self, intended_ns: u64, key: String) -> Served {
        let dropped = Served {
            worker_ns: None,
            answered_ns: None,
            fate: Fate::Dropped,
        };
        let permit = match self.pool.try_acquire() {
            Ok(permit) => permit,
            Err(_) => {
                // The semaphore is fair: a waiter is served in arrival order, never overtaken.
                if self.waiting.load(Ordering::Relaxed) >= self.spec.queue_max {
                    return dropped;
                }
                self.waiting.fetch_add(1, Ordering::Relaxed);
                let deadline = self.t0 + Duration::from_nanos(intended_ns) + self.spec.queue_wait;
                let got = tokio::time::timeout_at(deadline, self.pool.acquire()).await;
                self.waiting.fetch_sub(1, Ordering::Relaxed);
                match got {
                    Ok(Ok(permit)) => permit,
                    _ => return dropped,
                }
            }
        };
        let worker_ns = self.ns();
        if self.busy.fetch_add(1, Ordering::Relaxed) + 1 == self.spec.workers {
            self.trace().all_busy_ns.push(worker_ns);
        }
        let answer = self.store.check(&key).await;
        let answered_ns = self.ns();
        tokio::time::sleep(self.spec.work).await;
        self.busy.fetch_sub(1, Ordering::Relaxed);
        drop(permit);
        let fate = match answer {
            Ok(a) => Fate::Served(a.outcome),
            Err(e) => {
                self.trace().first_error.get_or_insert(e.to_string());
                Fate::Error
            }
        };
        Served {
            worker_ns: Some(worker_ns),
            answered_ns: Some(answered_ns),
            fate,
        }
    }
}
