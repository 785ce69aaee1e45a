//! A latency probe: one connection of its own on a thread of its own, sending PING every period
//! and logging when each started (monotonic clock) and how long it took. A server busy with one
//! long command cannot answer, so the probe's worst round trip during that command is the stall
//! every other client saw. Windows of the log become hdrhistograms.

use super::{latency, ClientTimeouts, LoadError};
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A probe running on its own thread; `stop` returns what it saw.
pub struct Probe {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<ProbeLog>,
}

/// One PING: when it was sent and how long the reply took, in ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ping {
    pub sent: Instant,
    pub took_ns: u64,
    /// Of that, the probe's own thread was runnable but waiting for a CPU (schedstat's run
    /// delay): a reply that arrived on time but was read late is the harness's delay, not the
    /// server's. None where the kernel keeps no schedstat.
    pub waited_ns: Option<u64>,
}

/// Everything a probe saw.
#[derive(Debug, Clone, Default)]
pub struct ProbeLog {
    pub pings: Vec<Ping>,
    /// PINGs that failed (timeout, connection lost); a failed PING is not a latency.
    pub errors: u64,
    pub first_error: Option<String>,
}

impl Probe {
    /// Connects (here, so a refused connection is an error now) and starts pinging every `period`.
    pub fn start(url: &str, period: Duration, timeouts: ClientTimeouts) -> Result<Self, LoadError> {
        let client = crate::server::endpoint::client(url)?;
        let con = client.get_connection_with_timeout(Duration::from_millis(timeouts.connect_ms))?;
        con.set_read_timeout(Some(Duration::from_millis(timeouts.response_ms)))?;
        con.set_write_timeout(Some(Duration::from_millis(timeouts.response_ms)))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("ratelab-probe".into())
            .spawn(move || ping_loop(con, period, &flag))?;
        Ok(Probe { stop, thread })
    }

    /// Stops the probe after its PING in flight and returns its log.
    pub fn stop(self) -> Result<ProbeLog, LoadError> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .join()
            .map_err(|_| LoadError::Protocol("the probe thread panicked".into()))
    }
}

fn ping_loop(mut con: redis::Connection, period: Duration, stop: &AtomicBool) -> ProbeLog {
    let mut log = ProbeLog::default();
    let schedstat = crate::server::sched::ThreadRunDelay::open();
    while !stop.load(Ordering::Relaxed) {
        let waited_before = schedstat.now_ns();
        let sent = Instant::now();
        match redis::cmd("PING").query::<String>(&mut con) {
            Ok(_) => log.pings.push(Ping {
                sent,
                took_ns: sent.elapsed().as_nanos() as u64,
                waited_ns: (waited_before.zip(schedstat.now_ns()))
                    .map(|(before, after)| after.saturating_sub(before)),
            }),
            Err(e) => {
                log.errors += 1;
                log.first_error.get_or_insert_with(|| e.to_string());
            }
        }
        // Next PING one period after this one was sent; at once if this one took longer.
        if let Some(rest) = (sent + period).checked_duration_since(Instant::now()) {
            std::thread::sleep(rest);
        }
    }
    log
}

impl ProbeLog {
    /// PINGs whose round trip overlapped `[from, to]`: the ones a stall in that span delayed.
    pub fn overlapping(&self, from: Instant, to: Instant) -> impl Iterator<Item = &Ping> {
        self.pings
            .iter()
            .filter(move |p| p.sent <= to && p.sent + Duration::from_nanos(p.took_ns) >= from)
    }

    /// The slowest PING overlapping `[from, to]`, if any did.
    pub fn slowest_overlapping(&self, from: Instant, to: Instant) -> Option<&Ping> {
        self.overlapping(from, to).max_by_key(|p| p.took_ns)
    }

    /// The slowest PING overlapping `[from, to]`, in ns (0 if none did).
    pub fn max_overlapping_ns(&self, from: Instant, to: Instant) -> u64 {
        self.slowest_overlapping(from, to).map_or(0, |p| p.took_ns)
    }

    /// All PINGs sent in `[from, to]` as a histogram of ns.
    pub fn histogram(&self, from: Instant, to: Instant) -> Result<Histogram<u64>, LoadError> {
        let mut h = latency::new_histogram()?;
        for p in self.pings.iter().filter(|p| p.sent >= from && p.sent <= to) {
            h.saturating_record(p.took_ns.max(1));
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_sees_the_pings_its_span_delayed() {
        let t0 = Instant::now();
        let ms = |n: u64| Duration::from_millis(n);
        let ping = |at: u64, took: u64| Ping {
            sent: t0 + ms(at),
            took_ns: ms(took).as_nanos() as u64,
            waited_ns: None,
        };
        let log = ProbeLog {
            // 0: quick; 1: sent before the stall, answered after it (the stall); 2: after.
            pings: vec![ping(0, 1), ping(10, 300), ping(311, 1)],
            ..ProbeLog::default()
        };
        assert_eq!(
            log.max_overlapping_ns(t0 + ms(50), t0 + ms(300)),
            ms(300).as_nanos() as u64
        );
        assert_eq!(log.overlapping(t0 + ms(305), t0 + ms(400)).count(), 2);
        assert_eq!(log.max_overlapping_ns(t0 + ms(500), t0 + ms(600)), 0);
        let h = log.histogram(t0, t0 + ms(400)).unwrap();
        assert_eq!(h.len(), 3);
    }
}
