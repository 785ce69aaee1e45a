//! The protected resource: a loopback TCP server standing for the partner API of seed 001. Each
//! request is one line (`REQ tenant pod n`), answered with `OK` after the partner's latency the
//! run sets (a slow API holds a pod's admitted requests open). The sink counts what it received
//! per second on its own clock (CLOCK_REALTIME when the bytes were read), from an origin the run
//! sets, so what reached the partner is measured where it arrived, not where it was decided.
//!
//! It runs on a thread with a runtime of its own, so it answers while the harness waits on the
//! pods synchronously; dropping the [`Sink`] stops the runtime and every connection with it.

use super::own_thread::OwnThread;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// What the sink answers to each request line.
pub const REPLY: &[u8] = b"OK\n";

/// What the sink received since the last [`Sink::begin`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SinkCount {
    /// Requests received in each second after the origin (index 0: the first second).
    pub per_second: Vec<u64>,
    /// Requests received before the origin (none, unless a pod started early).
    pub early: u64,
    /// All requests received.
    pub total: u64,
}

impl SinkCount {
    fn add(&mut self, origin_ns: u64, now_ns: u64, n: u64) {
        self.total += n;
        let Some(since) = now_ns.checked_sub(origin_ns) else {
            self.early += n;
            return;
        };
        let second = (since / 1_000_000_000) as usize;
        if self.per_second.len() <= second {
            self.per_second.resize(second + 1, 0);
        }
        self.per_second[second] += n;
    }
}

#[derive(Debug, Default)]
struct Counts {
    origin_ns: u64,
    /// How long the partner takes to answer each request.
    latency: Duration,
    count: SinkCount,
}

/// A running sink; dropping it stops it.
pub struct Sink {
    addr: SocketAddr,
    counts: Arc<Mutex<Counts>>,
    _thread: OwnThread,
}

impl Sink {
    /// Starts a sink on a free loopback port.
    pub fn start() -> std::io::Result<Sink> {
        let counts = Arc::new(Mutex::new(Counts::default()));
        let shared = Arc::clone(&counts);
        let (thread, addr) = OwnThread::spawn("the sink", move |ready, stopped| async move {
            let listener = match TcpListener::bind("127.0.0.1:0").await {
                Ok(l) => l,
                Err(e) => return drop(ready.send(Err(e))),
            };
            let _ = ready.send(listener.local_addr());
            tokio::select! {
                _ = stopped => {}
                _ = accept_loop(listener, shared) => {}
            }
        })?;
        Ok(Sink {
            addr,
            counts,
            _thread: thread,
        })
    }

    /// Where pods connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Starts counting afresh, seconds numbered from `origin_unix_ms`; every request read from
    /// now on is answered `latency` after it arrived.
    pub fn begin(&self, origin_unix_ms: u64, latency: Duration) {
        let mut c = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        *c = Counts {
            origin_ns: origin_unix_ms.saturating_mul(1_000_000),
            latency,
            count: SinkCount::default(),
        };
    }

    /// What it received since `begin`.
    pub fn count(&self) -> SinkCount {
        let c = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        c.count.clone()
    }
}

async fn accept_loop(listener: TcpListener, counts: Arc<Mutex<Counts>>) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        connections.spawn(serve(stream, Arc::clone(&counts)));
    }
}

/// Counts every request line of one connection when its bytes arrive and answers each after the
/// run's latency. The latency is one for every request, so answers leave in the order they came.
async fn serve(stream: TcpStream, counts: Arc<Mutex<Counts>>) {
    // Answer at once: Nagle would hold a small reply for the peer's delayed ACK.
    if stream.set_nodelay(true).is_err() {
        return;
    }
    let (mut read, write) = stream.into_split();
    let (due, answers) = mpsc::unbounded_channel();
    let writer = tokio::spawn(answer(write, answers));
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match read.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let (now_ns, arrived) = (unix_ns(), Instant::now());
        let lines = buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
        if lines == 0 {
            continue;
        }
        let latency = {
            let mut c = counts.lock().unwrap_or_else(|p| p.into_inner());
            let origin = c.origin_ns;
            c.count.add(origin, now_ns, lines);
            c.latency
        };
        if due.send((arrived + latency, lines)).is_err() {
            break;
        }
    }
    writer.abort();
}

/// Writes each batch's answers when they are due; ends when the connection does.
async fn answer(mut write: OwnedWriteHalf, mut due: mpsc::UnboundedReceiver<(Instant, u64)>) {
    let mut replies = Vec::new();
    while let Some((at, lines)) = due.recv().await {
        tokio::time::sleep_until(at).await;
        replies.clear();
        for _ in 0..lines {
            replies.extend_from_slice(REPLY);
        }
        if write.write_all(&replies).await.is_err() {
            return;
        }
    }
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_land_in_the_second_they_arrived() {
        let mut c = SinkCount::default();
        c.add(1_000, 500, 2);
        c.add(1_000, 1_000, 1);
        c.add(1_000, 2_000_001_000, 3);
        assert_eq!(c.per_second, vec![1, 0, 3]);
        assert_eq!((c.early, c.total), (2, 6));
    }
}
