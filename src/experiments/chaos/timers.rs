//! Two timers of the store's timeout, side by side on the service's runtime through the drills:
//! tokio's (the one the store's timeout uses: a wheel of whole milliseconds) and a precise one
//! (a timerfd, the one crate::load::drill may start requests by). Each sleeps the timeout again
//! and again, timed against its own deadline.
//!
//! Why: a blackholed check takes a little more than its timeout. Whether that is tokio's
//! millisecond tick or a runtime too busy to wake on time, the two timers tell apart: the same
//! runtime, the same load, one timer rounding to the tick and one not.

use crate::load::timer::PreciseTimer;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One sleep: when it ended, ns after the drill's origin, and how late past its deadline, ms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Late {
    pub end_ns: u64,
    pub late_ms: f64,
}

/// Every sleep of both timers over a sequence.
#[derive(Debug, Default)]
pub struct Lateness {
    pub tokio: Vec<Late>,
    pub precise: Vec<Late>,
}

impl Lateness {
    /// The median lateness of each timer's sleeps that ended in `[start_ns, end_ns)`, ms:
    /// (tokio, precise); None for a timer with no sleep ending there.
    pub fn medians_in(&self, start_ns: u64, end_ns: u64) -> (Option<f64>, Option<f64>) {
        let median = |all: &[Late]| {
            let inside: Vec<f64> = (all.iter())
                .filter(|l| l.end_ns >= start_ns && l.end_ns < end_ns)
                .map(|l| l.late_ms)
                .collect();
            crate::analysis::stats::median(&inside)
        };
        (median(&self.tokio), median(&self.precise))
    }
}

/// The two timers, running until stopped.
pub struct Watch {
    seen: [Arc<Mutex<Vec<Late>>>; 2],
    tasks: [tokio::task::JoinHandle<()>; 2],
}

impl Watch {
    /// Starts both on the current runtime, sleeping `timeout` each, timed from `origin`.
    pub fn start(timeout: Duration, origin: Instant) -> std::io::Result<Watch> {
        let precise_timer = Arc::new(PreciseTimer::new()?);
        let tokio_sleep = move |due: Instant| async move {
            tokio::time::sleep_until(due.into()).await;
            Ok(())
        };
        let precise_sleep = move |due: Instant| {
            let timer = Arc::clone(&precise_timer);
            async move { timer.sleep_until(due).await }
        };
        let seen: [Arc<Mutex<Vec<Late>>>; 2] = Default::default();
        let tasks = [
            tokio::spawn(sleeps(timeout, origin, Arc::clone(&seen[0]), tokio_sleep)),
            tokio::spawn(sleeps(timeout, origin, Arc::clone(&seen[1]), precise_sleep)),
        ];
        Ok(Watch { seen, tasks })
    }

    /// Stops both at once (a sleep in progress is dropped, unmeasured) and returns what they saw.
    pub fn finish(self) -> Lateness {
        let take = |seen: &Arc<Mutex<Vec<Late>>>| {
            std::mem::take(&mut *seen.lock().unwrap_or_else(|p| p.into_inner()))
        };
        self.tasks.iter().for_each(tokio::task::JoinHandle::abort);
        Lateness {
            tokio: take(&self.seen[0]),
            precise: take(&self.seen[1]),
        }
    }
}

/// Sleeps of `timeout`, one after another for as long as the task lives, each timed against its
/// deadline into `seen`; a timer that fails ends the series (its samples so far stand).
async fn sleeps<F, Fut>(timeout: Duration, origin: Instant, seen: Arc<Mutex<Vec<Late>>>, sleep: F)
where
    F: Fn(Instant) -> Fut,
    Fut: std::future::Future<Output = std::io::Result<()>>,
{
    loop {
        let due = Instant::now() + timeout;
        if sleep(due).await.is_err() {
            return;
        }
        let end = Instant::now();
        let late = Late {
            end_ns: end.saturating_duration_since(origin).as_nanos() as u64,
            late_ms: end.saturating_duration_since(due).as_secs_f64() * 1e3,
        };
        seen.lock().unwrap_or_else(|p| p.into_inner()).push(late);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_count_only_the_sleeps_that_ended_in_the_window() {
        let late = |end_ns, late_ms| Late { end_ns, late_ms };
        let seen = Lateness {
            tokio: vec![late(5, 9.0), late(10, 1.0), late(20, 3.0), late(30, 2.0)],
            precise: vec![late(40, 0.1)],
        };
        assert_eq!(seen.medians_in(10, 40), (Some(2.0), None));
        assert_eq!(seen.medians_in(0, 100), (Some(2.5), Some(0.1)));
    }

    /// Both timers run beside each other on one current-thread runtime; a sleep never ends
    /// before its deadline, so a span holds at most span / timeout sleeps of each.
    #[test]
    fn both_timers_sleep_the_timeout_one_after_another() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (timeout, span) = (Duration::from_millis(10), Duration::from_millis(100));
        let origin = Instant::now();
        let seen = rt.block_on(async {
            let watch = Watch::start(timeout, origin).unwrap();
            tokio::time::sleep(span).await;
            watch.finish()
        });
        let most = (origin.elapsed().as_millis() / timeout.as_millis()) as usize;
        for (name, series) in [("tokio", &seen.tokio), ("precise", &seen.precise)] {
            assert!(
                !series.is_empty() && series.len() <= most,
                "{name}: {series:?}"
            );
            assert!(
                series
                    .windows(2)
                    .all(|w| w[1].end_ns >= w[0].end_ns + 10_000_000),
                "{name}: {series:?}"
            );
        }
    }
}
