//! A pod (seed 001): an open-loop worker process whose every admitted request is then sent to the
//! protected resource (the [`sink`](super::sink)), with what it decided counted per second on its
//! own clock beside what it sent. One connection to Redis (or none used: an in-memory limiter) and
//! one to the sink, both multiplexed by the event loop's in-flight requests.

use super::open::{OpenLoop, OpenSpec, OpenTally};
use super::open_worker::{self, AfterRequest};
use super::sink::REPLY;
use super::LoadError;
use crate::limiter::{Decider, LimitSpec};
use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Instant;
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
}

impl PodFleet<'_> {
    /// Every pod's spec.
    pub(super) fn specs(&self) -> Vec<PodSpec> {
        (self.open.specs().into_iter())
            .map(|open| PodSpec {
                open,
                sink: self.sink.clone(),
                in_memory_limit: self.in_memory_limit,
            })
            .collect()
    }
}

/// The pod's decider: its own window in memory when it limits itself, else the strategy on Redis.
pub(super) fn decider(spec: &PodSpec) -> Result<Decider, LoadError> {
    match spec.in_memory_limit {
        Some(limit) => Ok(Decider::in_memory(LimitSpec {
            capacity: limit,
            ..spec.open.limit
        })),
        None => open_worker::decider(&spec.open),
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
    let link = PodLink::new(spec.open.worker_index, write);
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
    })
}

impl AfterRequest for PodLink {
    fn after(
        &self,
        origin: Instant,
        times: [Instant; 2],
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
    writer: tokio::sync::Mutex<OwnedWriteHalf>,
    pending: Pending,
    counts: RefCell<Counts>,
    next: std::cell::Cell<u64>,
}

impl PodLink {
    fn new(pod: u64, writer: OwnedWriteHalf) -> Self {
        PodLink {
            pod,
            writer: tokio::sync::Mutex::new(writer),
            pending: Rc::default(),
            counts: RefCell::default(),
            next: std::cell::Cell::new(0),
        }
    }

    /// Counts a decided request and, when it was allowed, sends it to the sink.
    async fn count_and_send(
        &self,
        origin: Instant,
        [intended, done]: [Instant; 2],
        allowed: Option<bool>,
    ) {
        {
            let mut c = self.counts.borrow_mut();
            c.second(origin, intended).offered += 1;
            match allowed {
                Some(true) => c.second(origin, done).allowed += 1,
                Some(false) => c.second(origin, done).denied += 1,
                None => {}
            }
        }
        if allowed != Some(true) {
            return;
        }
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
