//! The harness's own stalls. A thread asks to wake every [`TICK`] and records how late it woke.
//! A wake-up later than [`STALL`] means nothing of the harness ran for that long: the VM was
//! descheduled, the process was stopped, or the harness CPU was taken. Every time measured
//! across such a stall is stretched by it, so meta.json says how many there were and how long,
//! and the report flags the run (seed 000's sleeping laptop is the extreme case; a busy shared
//! host makes smaller ones).

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the watcher asks to wake.
const TICK: Duration = Duration::from_millis(10);
/// A wake-up later than this is a stall: well above a busy CPU's scheduling delay (a few ms),
/// and a share of a token's refill in the experiments that time their checks (failover: 50 ms).
pub const STALL: Duration = Duration::from_millis(50);

/// What the watcher saw over one run (meta.json `harness_stalls`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HarnessStalls {
    /// How often the watcher asked to wake, ms.
    pub tick_ms: f64,
    /// Wake-ups recorded.
    pub ticks: u64,
    /// How late the wake-ups were, ms: the 99th percentile and the latest.
    pub p99_late_ms: f64,
    pub max_late_ms: f64,
    /// A wake-up later than this counted as a stall, ms.
    pub stall_threshold_ms: f64,
    /// Wake-ups later than the threshold, and their lateness added up, ms.
    pub stalls: u64,
    pub stalled_ms: f64,
}

impl HarnessStalls {
    /// Whether any wake-up was later than the threshold.
    pub fn stalled(&self) -> bool {
        self.stalls > 0
    }

    /// One sentence for a reader: how often and how long the harness was held off.
    pub fn warning(&self) -> String {
        format!(
            "the harness was held off its CPU {} times for more than {} ms (longest {:.0} ms, {:.0} ms in all): \
            a time measured across a stall is stretched by it",
            self.stalls, self.stall_threshold_ms, self.max_late_ms, self.stalled_ms
        )
    }
}

/// The running watcher; [`StallWatch::finish`] stops it and says what it saw.
pub struct StallWatch {
    stop: Sender<()>,
    thread: JoinHandle<Lateness>,
}

/// Lateness of each wake-up (µs); the stalls counted exactly (the histogram rounds).
struct Lateness {
    histogram: Option<Histogram<u64>>,
    stalls: u64,
    stalled_us: u64,
}

impl Lateness {
    fn new() -> Self {
        Lateness {
            // 1 µs to 1 hour at 3 significant digits; a longer stall saturates at the top.
            histogram: Histogram::new_with_bounds(1, 3_600_000_000, 3).ok(),
            stalls: 0,
            stalled_us: 0,
        }
    }

    fn record(&mut self, late_us: u64) {
        if late_us > STALL.as_micros() as u64 {
            self.stalls += 1;
            self.stalled_us += late_us;
        }
        if let Some(h) = self.histogram.as_mut() {
            h.saturating_record(late_us.max(1));
        }
    }

    fn summary(&self) -> Option<HarnessStalls> {
        let h = self.histogram.as_ref()?;
        let ms = |us: u64| us as f64 / 1000.0;
        Some(HarnessStalls {
            tick_ms: TICK.as_secs_f64() * 1000.0,
            ticks: h.len(),
            p99_late_ms: ms(h.value_at_quantile(0.99)),
            max_late_ms: ms(h.max()),
            stall_threshold_ms: STALL.as_secs_f64() * 1000.0,
            stalls: self.stalls,
            stalled_ms: ms(self.stalled_us),
        })
    }
}

impl StallWatch {
    /// Starts the watcher on a thread of its own (it inherits the harness's CPU pinning).
    /// None when no thread could be started: the run goes on without it.
    pub fn start() -> Option<Self> {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("stall-watch".into())
            .spawn(move || watch(&stopped))
            .ok()?;
        Some(StallWatch { stop, thread })
    }

    /// Stops the watcher; None if its thread failed.
    pub fn finish(self) -> Option<HarnessStalls> {
        drop(self.stop);
        let lateness = self.thread.join().ok()?;
        lateness.summary()
    }
}

/// Wakes every [`TICK`] until `stopped` says stop (or its sender is gone), recording lateness.
fn watch(stopped: &mpsc::Receiver<()>) -> Lateness {
    let mut lateness = Lateness::new();
    loop {
        let asked = Instant::now();
        match stopped.recv_timeout(TICK) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return lateness,
        }
        lateness.record(asked.elapsed().saturating_sub(TICK).as_micros() as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lateness(late_us: &[u64]) -> Lateness {
        let mut lateness = Lateness::new();
        for &us in late_us {
            lateness.record(us);
        }
        lateness
    }

    #[test]
    fn only_wake_ups_later_than_the_threshold_are_stalls() {
        let seen = lateness(&[100, 2_000, 49_000, 50_000, 51_000, 300_000])
            .summary()
            .unwrap();
        assert_eq!(seen.ticks, 6);
        assert_eq!(seen.stalls, 2, "{seen:?}");
        assert!((seen.stalled_ms - 351.0).abs() < 1e-9, "{seen:?}");
        assert!((seen.max_late_ms - 300.0).abs() < 0.5, "{seen:?}");
        assert!(seen.stalled());
        assert!(seen
            .warning()
            .contains("2 times for more than 50 ms (longest 300 ms, 351 ms in all)"));
    }

    #[test]
    fn a_quiet_run_has_no_stall() {
        let seen = lateness(&[50, 80, 1_200]).summary().unwrap();
        assert_eq!((seen.stalls, seen.stalled()), (0, false));
    }

    #[test]
    fn the_watcher_stops_when_asked_and_counts_its_wake_ups() {
        let watch = StallWatch::start().unwrap();
        std::thread::sleep(TICK * 5);
        let seen = watch.finish().unwrap();
        // At least one full tick fits in five; how many more depends on the machine.
        assert!((1..=5).contains(&seen.ticks), "{seen:?}");
        assert_eq!(seen.tick_ms, 10.0);
    }
}
