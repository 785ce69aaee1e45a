//! A pod (seed 001): an open-loop worker process whose every admitted request is then sent to the
//! protected resource (the [`sink`](super::sink)), with what it decided counted per second on its
//! own clock beside what it sent. One connection to Redis (or none used: an in-memory limiter) and
//! one to the sink, both multiplexed by the event loop's in-flight requests.
//!
//! A request may first hold the event loop for a stated time (the handler's own synchronous work:
//! parsing, auth), as a busy Node process does: every continuation waiting on the loop, a GET's
//! reply among them, waits behind it. A pod may also read a skewed clock when it names a window.

use super::open::{OpenLoop, OpenSpec, OpenTally};
use super::open_worker::{self, RequestHooks};
use super::sink::REPLY;
use super::LoadError;
use crate::limiter::{Decider, LimitSpec};
use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

/// What one pod does: an open-loop share of the schedule, admitted requests sent to `sink`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PodSpec {
    /// The schedule, Redis and strategy; its `start` is the origin of the seconds counted.
    pub open: OpenSpec,
    /// The sink's address (`127.0.0.1:port`).
    pub sink: String,
    /// Decide in this process's memory with this limit per window instead of on Redis.
    pub in_memory_limit: Option<u64>,
    /// How long each request holds the event loop before its check, µs (its synchronous work).
    #[serde(default)]
    pub work_us: u64,
    /// How far this pod's clock is ahead of the machine's when it names a window, ms.
    #[serde(default)]
    pub clock_offset_ms: i64,
}

/// One second of one pod (or of all, merged), numbered from the schedule's start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodSecond {
    /// Requests the schedule meant to start in this second.
    pub offered: u64,
    /// Decided "allowed" in this second (when the decision came back).
    pub allowed: u64,
    /// Decided "denied" in this second.
    pub denied: u64,
    /// Sent to the sink in this second (when written).
    pub sent: u64,
}

/// What pods did, merged.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PodTally {
    /// The open-loop tally: decisions, lateness, latency from the intended start.
    pub open: OpenTally,
    /// Per second from the schedule's start, summed over pods.
    pub seconds: Vec<PodSecond>,
    /// Requests written to the sink, and those it answered.
    pub sent: u64,
    pub acknowledged: u64,
    /// Sends that failed, and the first failure.
    pub send_errors: u64,
    pub first_send_error: Option<String>,
    /// Most requests open at once in one pod, from their intended start to the sink's answer (or
    /// to the decision, when denied).
    #[serde(default)]
    pub max_open: u64,
    /// The requests' open times summed, seconds: over the schedule's length, the mean open.
    #[serde(default)]
    pub open_s: f64,
    /// Time from a check's send to its decision, ns, as histogram buckets: for a limiter that
    /// reads then writes, the span in which another request reads a stale count.
    #[serde(default)]
    pub decide_ns: Vec<(u64, u64)>,
}

impl PodTally {
    /// Adds another pod's tally, second by second.
    pub fn merge(&mut self, other: PodTally) {
        self.open.merge(other.open);
        if self.seconds.len() < other.seconds.len() {
            self.seconds
                .resize(other.seconds.len(), PodSecond::default());
        }
        for (mine, theirs) in self.seconds.iter_mut().zip(&other.seconds) {
            mine.offered += theirs.offered;
            mine.allowed += theirs.allowed;
            mine.denied += theirs.denied;
            mine.sent += theirs.sent;
        }
        self.sent += other.sent;
        self.acknowledged += other.acknowledged;
        self.send_errors += other.send_errors;
        if self.first_send_error.is_none() {
            self.first_send_error = other.first_send_error;
        }
        self.max_open = self.max_open.max(other.max_open);
        self.open_s += other.open_s;
        self.decide_ns.extend(other.decide_ns);
    }

    /// Time from a check's send to its decision, as one histogram (ns).
    pub fn decide_histogram(&self) -> Result<hdrhistogram::Histogram<u64>, LoadError> {
        super::latency::from_buckets(&self.decide_ns)
    }
}

/// `processes` pods sharing one schedule (each its own share), all sending to one sink.
#[derive(Debug, Clone)]
pub struct PodFleet<'a> {
    /// The open loop the pods run: binary, CPUs, processes, template.
    pub open: OpenLoop<'a>,
    /// The sink's address.
    pub sink: String,
    /// Each pod's own in-memory limit, if they decide in memory.
    pub in_memory_limit: Option<u64>,
    /// How long each request holds its pod's event loop before its check.
    pub work: Duration,
    /// The pods' clocks spread evenly over this many ms, centred on the machine's.
    pub skew_ms: f64,
}

impl PodFleet<'_> {
    /// Every pod's spec.
    pub(super) fn specs(&self) -> Vec<PodSpec> {
        let specs = self.open.specs();
        let n = specs.len();
        (specs.into_iter().enumerate())
            .map(|(i, open)| PodSpec {
                open,
                sink: self.sink.clone(),
                in_memory_limit: self.in_memory_limit,
                work_us: self.work.as_micros() as u64,
                clock_offset_ms: clock_offset_ms(self.skew_ms, i, n),
            })
            .collect()
    }
}

/// Pod `i` of `n`'s clock offset when their clocks spread over `skew_ms`: from -skew/2 (the
/// first) to +skew/2 (the last).
fn clock_offset_ms(skew_ms: f64, i: usize, n: usize) -> i64 {
    match n {
        0 | 1 => 0,
        _ => (skew_ms * (i as f64 / (n - 1) as f64 - 0.5)).round() as i64,
    }
}

/// The pod's decider: its own window in memory when it limits itself, else the strategy on Redis.
/// A pod whose clock runs ahead names its windows as if they started that much earlier.
pub(super) fn decider(spec: &PodSpec) -> Result<Decider, LoadError> {
    let origin = spec.open.limit.window_origin_ms as i64 - spec.clock_offset_ms;
    let limit = LimitSpec {
        window_origin_ms: origin.max(0) as u64,
        ..spec.open.limit
    };
    match spec.in_memory_limit {
        Some(capacity) => Ok(Decider::in_memory(LimitSpec { capacity, ..limit })),
        None => open_worker::decider(&OpenSpec {
            limit,
            ..spec.open.clone()
        }),
    }
}

/// Opens the Redis pool `decider` takes from and the sink connection (before the start signal).
pub(super) async fn connect(
    spec: &PodSpec,
    decider: &Decider,
) -> Result<(Vec<MultiplexedConnection>, TcpStream), LoadError> {
    let cons = open_worker::connect(&spec.open, decider).await?;
    let sink = TcpStream::connect(spec.sink.as_str()).await?;
    // A request is one small write: sent at once, as an HTTP client would.
    sink.set_nodelay(true)?;
    Ok((cons, sink))
}

/// Runs one pod; needs a `LocalSet`.
pub(super) async fn run(
    spec: &PodSpec,
    decider: Decider,
    cons: Vec<MultiplexedConnection>,
    sink: TcpStream,
) -> Result<PodTally, LoadError> {
    let (read, write) = sink.into_split();
    let work = Duration::from_micros(spec.work_us);
    let link = PodLink::new(spec.open.worker_index, work, write)?;
    let reader = tokio::task::spawn_local(read_replies(read, Rc::clone(&link.pending)));
    let (open, link) = open_worker::run_with(&spec.open, cons, decider, link).await?;
    reader.abort();
    let counts = link.counts.into_inner();
    Ok(PodTally {
        open,
        seconds: counts.seconds,
        sent: counts.sent,
        acknowledged: counts.acknowledged,
        send_errors: counts.send_errors,
        first_send_error: counts.first_send_error,
        max_open: link.max_open.get(),
        open_s: counts.open_ns as f64 / 1e9,
        decide_ns: super::latency::buckets(&link.decide.into_inner()),
    })
}

impl RequestHooks for PodLink {
    fn before(&self) {
        self.open.set(self.open.get() + 1);
        self.max_open.set(self.max_open.get().max(self.open.get()));
        // Blocks the loop, not just this request: synchronous work, as a handler's own CPU is.
        if !self.work.is_zero() {
            std::thread::sleep(self.work);
        }
    }

    fn after(
        &self,
        origin: Instant,
        times: [Instant; 3],
        allowed: Option<bool>,
    ) -> impl std::future::Future<Output = ()> {
        self.count_and_send(origin, times, allowed)
    }
}

/// Replies waiting for the sink, in the order their requests were written.
type Pending = Rc<RefCell<VecDeque<oneshot::Sender<()>>>>;

#[derive(Default)]
struct Counts {
    seconds: Vec<PodSecond>,
    sent: u64,
    acknowledged: u64,
    send_errors: u64,
    first_send_error: Option<String>,
    /// Requests' open times summed, ns.
    open_ns: u64,
}

impl Counts {
    fn second(&mut self, origin: Instant, at: Instant) -> &mut PodSecond {
        let i = at.saturating_duration_since(origin).as_secs() as usize;
        if self.seconds.len() <= i {
            self.seconds.resize(i + 1, PodSecond::default());
        }
        &mut self.seconds[i]
    }
}

/// A pod's side of the sink: one connection, requests written in turn, replies matched in order.
pub(super) struct PodLink {
    pod: u64,
    work: Duration,
    writer: tokio::sync::Mutex<OwnedWriteHalf>,
    pending: Pending,
    counts: RefCell<Counts>,
    next: Cell<u64>,
    /// Requests open now, and the most at once.
    open: Cell<u64>,
    max_open: Cell<u64>,
    decide: RefCell<hdrhistogram::Histogram<u64>>,
}

impl PodLink {
    fn new(pod: u64, work: Duration, writer: OwnedWriteHalf) -> Result<Self, LoadError> {
        Ok(PodLink {
            pod,
            work,
            writer: tokio::sync::Mutex::new(writer),
            pending: Rc::default(),
            counts: RefCell::default(),
            next: Cell::new(0),
            open: Cell::new(0),
            max_open: Cell::new(0),
            decide: RefCell::new(super::latency::new_histogram()?),
        })
    }

    /// Counts a decided request and, when it was allowed, sends it to the sink; the request is
    /// open until then.
    async fn count_and_send(
        &self,
        origin: Instant,
        [intended, sent, done]: [Instant; 3],
        allowed: Option<bool>,
    ) {
        let decide = done.saturating_duration_since(sent).as_nanos() as u64;
        self.decide.borrow_mut().saturating_record(decide.max(1));
        {
            let mut c = self.counts.borrow_mut();
            c.second(origin, intended).offered += 1;
            match allowed {
                Some(true) => c.second(origin, done).allowed += 1,
                Some(false) => c.second(origin, done).denied += 1,
                None => {}
            }
        }
        if allowed == Some(true) {
            let outcome = self.send(origin).await;
            let mut c = self.counts.borrow_mut();
            match outcome {
                Ok(()) => c.acknowledged += 1,
                Err(e) => {
                    c.send_errors += 1;
                    c.first_send_error.get_or_insert_with(|| e.to_string());
                }
            }
        }
        self.open.set(self.open.get().saturating_sub(1));
        let open = intended.elapsed().as_nanos() as u64;
        self.counts.borrow_mut().open_ns += open;
    }

    async fn send(&self, origin: Instant) -> std::io::Result<()> {
        let n = self.next.get();
        self.next.set(n + 1);
        let line = format!("REQ t_load {} {n}\n", self.pod);
        let reply = {
            // The lock orders the writes, and the queue is pushed under it: replies match in turn.
            let mut writer = self.writer.lock().await;
            let (tx, rx) = oneshot::channel();
            self.pending.borrow_mut().push_back(tx);
            {
                let mut c = self.counts.borrow_mut();
                c.sent += 1;
                c.second(origin, Instant::now()).sent += 1;
            }
            writer.write_all(line.as_bytes()).await?;
            rx
        };
        reply.await.map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the sink closed before it answered",
            )
        })
    }
}

/// Hands each reply line to the oldest request waiting; ends with the connection.
async fn read_replies(mut read: OwnedReadHalf, pending: Pending) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match read.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let replies = buf[..n]
            .iter()
            .filter(|&&b| b == REPLY[REPLY.len() - 1])
            .count();
        for _ in 0..replies {
            if let Some(tx) = pending.borrow_mut().pop_front() {
                let _ = tx.send(());
            }
        }
    }
    // Whoever still waits learns the sink is gone (their senders drop here).
    pending.borrow_mut().clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_spread_evenly_around_the_machines() {
        let offsets: Vec<i64> = (0..5).map(|i| clock_offset_ms(8.0, i, 5)).collect();
        assert_eq!(offsets, vec![-4, -2, 0, 2, 4]);
        assert_eq!(clock_offset_ms(8.0, 0, 1), 0);
        assert_eq!(clock_offset_ms(0.0, 3, 4), 0);
    }

    #[test]
    fn merge_adds_second_by_second_and_keeps_the_first_error() {
        let second = |n| PodSecond {
            offered: n,
            allowed: n,
            denied: 0,
            sent: n,
        };
        let mut a = PodTally {
            seconds: vec![second(1)],
            sent: 1,
            acknowledged: 1,
            ..PodTally::default()
        };
        let b = PodTally {
            seconds: vec![second(2), second(3)],
            sent: 5,
            acknowledged: 4,
            send_errors: 1,
            first_send_error: Some("gone".into()),
            ..PodTally::default()
        };
        a.merge(b);
        assert_eq!(a.seconds, vec![second(3), second(3)]);
        assert_eq!((a.sent, a.acknowledged, a.send_errors), (6, 5, 1));
        assert_eq!(a.first_send_error.as_deref(), Some("gone"));
    }
}
