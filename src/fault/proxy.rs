//! A loopback TCP fault proxy (seed 003's drills without root, iptables or tc): clients connect to
//! it, it connects each of them to Redis and forwards bytes both ways, and a fault switched at run
//! time changes what it forwards. Every switch is recorded with its instant.
//!
//! - blackhole: the connection stays open and nothing is forwarded in the chosen direction. The
//!   bytes are held, not lost, as TCP retransmission would deliver them once the path is back, so
//!   a client's pipeline never loses its place; on heal the backlog flows.
//! - refuse: the listener is closed, so a new connection is refused by the kernel; open ones go on.
//! - delay: each chunk from Redis reaches the client `fixed + U[0, jitter]` after it was read, in
//!   order (a delay line, like netem: replies overlap, they do not queue behind each other).
//! - reset: every connection gets an RST (SO_LINGER 0, then close), new ones too.
//! - healed: bytes forwarded unchanged.
//!
//! Two pump tasks per connection (client -> server, server -> client) watch the mode through a
//! `watch` channel. Dropping the [`Proxy`] aborts the accept task, whose `JoinSet` aborts every pump:
//! nothing of the proxy outlives its handle.

use crate::load::rng::SplitMix64;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

/// Chunks read but not yet written, per direction; reading pauses when this many are held.
const MAX_QUEUED: usize = 4096;
const CHUNK: usize = 16 * 1024;
/// How often a listener that could not be bound again after `Refuse` is retried.
const REBIND_RETRY: Duration = Duration::from_millis(10);

/// Which way bytes travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// Client to Redis: commands (the seed's "drop outbound to the store port").
    ToServer,
    /// Redis to client: replies.
    ToClient,
    /// Both: a full partition.
    Both,
}

impl Direction {
    fn covers(self, leg: Direction) -> bool {
        self == Direction::Both || self == leg
    }
}

/// What the proxy does to traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Forward everything unchanged.
    Healed,
    /// Forward nothing in `Direction`; connections stay open.
    Blackhole(Direction),
    /// Refuse new connections; open ones are forwarded.
    Refuse,
    /// Delay every chunk of replies by `fixed` plus a uniform jitter in `[0, jitter]`.
    Delay { fixed: Duration, jitter: Duration },
    /// Reset (RST) every connection, open and new.
    Reset,
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Healed => f.write_str("healed"),
            Fault::Blackhole(d) => write!(f, "blackhole {}", crate::record::csv_text(d)),
            Fault::Refuse => f.write_str("refuse"),
            Fault::Delay { fixed, jitter } => {
                write!(f, "delay {} ms", fixed.as_millis())?;
                match jitter.is_zero() {
                    true => Ok(()),
                    false => write!(f, " + U[0, {}] ms", jitter.as_millis()),
                }
            }
            Fault::Reset => f.write_str("reset"),
        }
    }
}

/// One switch of the fault, on the monotonic clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switch {
    pub at: Instant,
    pub fault: Fault,
}

/// Counts shared with the tasks.
#[derive(Debug, Default)]
struct Stats {
    accepted: AtomicU64,
    live_pumps: AtomicUsize,
}

/// A running proxy; dropping it stops everything it started.
pub struct Proxy {
    addr: SocketAddr,
    mode: watch::Sender<Fault>,
    switches: Mutex<Vec<Switch>>,
    stats: Arc<Stats>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // The accept task owns the JoinSet of pumps: aborting it drops the set, which aborts them.
        self.accept.abort();
    }
}

impl Proxy {
    /// A healed proxy on a free loopback port in front of `upstream`; call inside a tokio runtime.
    /// `seed` drives the jitter of delays.
    pub async fn start(upstream: SocketAddr, seed: u64) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (mode, watcher) = watch::channel(Fault::Healed);
        let stats = Arc::new(Stats::default());
        let accept = tokio::spawn(accept_loop(
            listener,
            upstream,
            watcher,
            Arc::clone(&stats),
            seed,
        ));
        let switches = Mutex::new(vec![Switch {
            at: Instant::now(),
            fault: Fault::Healed,
        }]);
        Ok(Proxy {
            addr,
            mode,
            switches,
            stats,
            accept,
        })
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A redis:// URL for clients (no database, no credentials).
    pub fn url(&self) -> String {
        format!("redis://{}/", self.addr)
    }

    /// Switches to `fault`; returns when it was switched (pumps react at their next poll).
    pub fn set(&self, fault: Fault) -> Instant {
        let at = Instant::now();
        self.mode.send_replace(fault);
        let mut log = self.switches.lock().unwrap_or_else(|p| p.into_inner());
        log.push(Switch { at, fault });
        at
    }

    /// Back to forwarding everything.
    pub fn heal(&self) -> Instant {
        self.set(Fault::Healed)
    }

    /// Every switch so far, the initial `Healed` first.
    pub fn switches(&self) -> Vec<Switch> {
        self.switches
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.stats.accepted.load(Ordering::Relaxed)
    }

    /// Pump tasks alive now (two per open connection).
    pub fn live_pumps(&self) -> usize {
        self.stats.live_pumps.load(Ordering::Relaxed)
    }
}

/// The address of a `redis://` URL's server, and a URL template with `{}` where a proxy's address
/// goes (credentials and database kept); None when the URL names no reachable host.
pub fn proxied_url(url: &str) -> Option<(SocketAddr, String)> {
    let rest = url.strip_prefix("redis://")?;
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (auth, host_port) = match authority.rsplit_once('@') {
        Some((auth, hp)) => (format!("{auth}@"), hp),
        None => (String::new(), authority),
    };
    let host_port = match host_port.contains(':') {
        true => host_port.to_string(),
        false => format!("{host_port}:6379"),
    };
    let addr = std::net::ToSocketAddrs::to_socket_addrs(&host_port)
        .ok()?
        .next()?;
    Some((addr, format!("redis://{auth}{{}}/{path}")))
}

async fn accept_loop(
    listener: TcpListener,
    upstream: SocketAddr,
    mut mode: watch::Receiver<Fault>,
    stats: Arc<Stats>,
    seed: u64,
) {
    let addr = listener.local_addr().ok();
    let mut listener = Some(listener);
    let mut pumps = JoinSet::new();
    let mut id = 0u64;
    loop {
        while pumps.try_join_next().is_some() {}
        let fault = *mode.borrow_and_update();
        if fault == Fault::Refuse {
            listener = None;
        } else if listener.is_none() {
            let Some(addr) = addr else { return };
            match TcpListener::bind(addr).await {
                Ok(l) => listener = Some(l),
                Err(_) => {
                    tokio::time::sleep(REBIND_RETRY).await;
                    continue;
                }
            }
        }
        let Some(l) = &listener else {
            if mode.changed().await.is_err() {
                return;
            }
            continue;
        };
        tokio::select! {
            changed = mode.changed() => if changed.is_err() { return },
            accepted = l.accept() => {
                let Ok((client, _)) = accepted else { continue };
                stats.accepted.fetch_add(1, Ordering::Relaxed);
                if fault == Fault::Reset {
                    reset(&client, None);
                    continue;
                }
                let Ok(server) = TcpStream::connect(upstream).await else {
                    reset(&client, None);
                    continue;
                };
                id += 1;
                // Forward each chunk at once: Nagle's wait for an ACK would add up to the peer's
                // delayed-ACK time (~40 ms) to a small reply, a fault the proxy was not asked for.
                let nodelay = client.set_nodelay(true).and_then(|()| server.set_nodelay(true));
                if nodelay.is_err() {
                    reset(&client, Some(&server));
                    continue;
                }
                let (client, server) = (Arc::new(client), Arc::new(server));
                let (closed, _) = watch::channel(false);
                let closed = Arc::new(closed);
                for (leg, src, dst) in [
                    (Direction::ToServer, &client, &server),
                    (Direction::ToClient, &server, &client),
                ] {
                    let pump = Pump {
                        leg,
                        src: Arc::clone(src),
                        dst: Arc::clone(dst),
                        mode: mode.clone(),
                        closed: Arc::clone(&closed),
                        rng: SplitMix64::new(seed, id),
                    };
                    let alive = Alive::new(Arc::clone(&stats));
                    pumps.spawn(async move {
                        let _alive = alive;
                        pump.run().await;
                    });
                }
            }
        }
    }
}

/// Counts a pump as alive until its future is dropped (finished or aborted).
struct Alive(Arc<Stats>);

impl Alive {
    fn new(stats: Arc<Stats>) -> Self {
        stats.live_pumps.fetch_add(1, Ordering::Relaxed);
        Alive(stats)
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.live_pumps.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Sets SO_LINGER 0 so closing sends RST instead of FIN.
fn reset(a: &TcpStream, b: Option<&TcpStream>) {
    // A socket that is already gone needs no reset.
    let _ = a.set_zero_linger();
    if let Some(b) = b {
        let _ = b.set_zero_linger();
    }
}

/// One direction of one connection.
struct Pump {
    leg: Direction,
    src: Arc<TcpStream>,
    dst: Arc<TcpStream>,
    mode: watch::Receiver<Fault>,
    /// Set by whichever pump of the connection ends first, so the other ends too.
    closed: Arc<watch::Sender<bool>>,
    rng: SplitMix64,
}

impl Pump {
    async fn run(mut self) {
        let mut closed = self.closed.subscribe();
        let mut queue: VecDeque<(tokio::time::Instant, Vec<u8>)> = VecDeque::new();
        let mut last_due = tokio::time::Instant::now();
        loop {
            let fault = *self.mode.borrow_and_update();
            if fault == Fault::Reset {
                reset(&self.src, Some(&self.dst));
                break;
            }
            let held = matches!(fault, Fault::Blackhole(d) if d.covers(self.leg));
            // What is due goes out now: a timer would round up to tokio's next 1 ms tick and
            // add that to every hop of a healed proxy.
            if !held
                && queue
                    .front()
                    .is_some_and(|c| c.0 <= tokio::time::Instant::now())
            {
                let Some((_, chunk)) = queue.pop_front() else {
                    continue;
                };
                if write_all(&self.dst, &chunk).await.is_err() {
                    break;
                }
                continue;
            }
            let due = queue.front().map(|c| c.0);
            tokio::select! {
                biased;
                changed = self.mode.changed() => if changed.is_err() { break },
                _ = ended(&mut closed) => break,
                _ = sleep_until(due), if !held && due.is_some() => {
                    let Some((_, chunk)) = queue.pop_front() else { continue };
                    if write_all(&self.dst, &chunk).await.is_err() {
                        break;
                    }
                }
                ready = self.src.readable(), if !held && queue.len() < MAX_QUEUED => {
                    if ready.is_err() {
                        break;
                    }
                    let mut buf = vec![0u8; CHUNK];
                    match self.src.try_read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => {
                            buf.truncate(n);
                            let now = tokio::time::Instant::now();
                            // TCP keeps order: a chunk never overtakes the one before it.
                            last_due = (now + self.delay(fault)).max(last_due);
                            queue.push_back((last_due, buf));
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(_) => break,
                    }
                }
            }
        }
        self.closed.send_replace(true);
    }

    /// The delay a chunk read now gets: replies only.
    fn delay(&mut self, fault: Fault) -> Duration {
        match fault {
            Fault::Delay { fixed, jitter } if self.leg == Direction::ToClient => {
                let extra = match jitter.as_nanos() as u64 {
                    0 => 0,
                    j => self.rng.below(j + 1),
                };
                fixed + Duration::from_nanos(extra)
            }
            _ => Duration::ZERO,
        }
    }
}

/// Returns when the connection's other pump has ended.
async fn ended(closed: &mut watch::Receiver<bool>) {
    // The guard it returns is not Send: drop it here, at once.
    let _ = closed.wait_for(|c| *c).await.is_ok();
}

async fn sleep_until(due: Option<tokio::time::Instant>) {
    if let Some(due) = due {
        tokio::time::sleep_until(due).await;
    }
}

async fn write_all(dst: &TcpStream, mut buf: &[u8]) -> std::io::Result<()> {
    while !buf.is_empty() {
        dst.writable().await?;
        match dst.try_write(buf) {
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_print_as_recorded() {
        let delay = Fault::Delay {
            fixed: Duration::from_millis(300),
            jitter: Duration::from_millis(50),
        };
        let names = [
            Fault::Healed,
            Fault::Blackhole(Direction::ToServer),
            Fault::Refuse,
            delay,
            Fault::Reset,
        ]
        .map(|f| f.to_string());
        assert_eq!(
            names,
            [
                "healed",
                "blackhole to-server",
                "refuse",
                "delay 300 ms + U[0, 50] ms",
                "reset"
            ]
        );
        assert!(Direction::Both.covers(Direction::ToClient));
        assert!(!Direction::ToServer.covers(Direction::ToClient));
    }
}
