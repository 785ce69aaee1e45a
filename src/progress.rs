//! Where a long run is, said on stderr: a line as each experiment starts (its place in the run,
//! its planned time, the run's time so far and the plan left), then, for a log rather than a
//! terminal's progress bars, a line every [`TICK`] while it runs, so a log read later (CI, a
//! nohup'd full run) shows the run alive and how far along it is.

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often a log hears from a running experiment.
pub const TICK: Duration = Duration::from_secs(30);

/// One run of one or more experiments.
pub struct RunProgress {
    started: Instant,
    /// Whether to print the periodic lines (a log: no terminal bars, not --quiet).
    ticks: bool,
    total: usize,
}

/// One experiment of the run: what its lines say.
pub struct Step<'a> {
    /// 1-based place in the run.
    pub number: usize,
    pub id: &'a str,
    pub profile: &'a str,
    /// Planned seconds (analysis/budget.toml), if planned.
    pub planned: Option<f64>,
    /// Planned seconds of this experiment and every one after it.
    pub planned_left: f64,
}

/// Says every [`TICK`] that its experiment still runs, until dropped.
pub struct Ticker {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl RunProgress {
    /// A run of `total` experiments starting now; `ticks` as on [`RunProgress`].
    pub fn new(total: usize, ticks: bool) -> Self {
        RunProgress {
            started: Instant::now(),
            ticks,
            total,
        }
    }

    /// Says `step` starts, and keeps saying it runs until the returned ticker is dropped.
    pub fn start(&self, step: &Step<'_>) -> Ticker {
        let place = format!("[{}/{}] {}", step.number, self.total, step.id);
        let planned = step.planned.map_or("not planned".to_string(), |s| {
            format!("planned {}", clock(s))
        });
        eprintln!(
            "ratelab: {place} ({} profile): {planned}; run {} so far, about {} planned left",
            step.profile,
            clock(self.started.elapsed().as_secs_f64()),
            clock(step.planned_left),
        );
        if !self.ticks {
            return Ticker {
                stop: None,
                thread: None,
            };
        }
        let (stop, stopped) = mpsc::channel::<()>();
        let (run_started, step_started, of) = (self.started, Instant::now(), step.planned);
        let thread = std::thread::spawn(move || {
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(TICK) {
                let so_far = step_started.elapsed().as_secs_f64();
                let of = of.map_or(String::new(), |s| format!(" of its planned {}", clock(s)));
                let run = clock(run_started.elapsed().as_secs_f64());
                eprintln!(
                    "ratelab: {place} still running: {}{of}; run {run} so far",
                    clock(so_far)
                );
            }
        });
        Ticker {
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            // A ticker that panicked has nothing left to say.
            let _ = thread.join();
        }
    }
}

/// Seconds as `M:SS` (or `H:MM:SS`).
pub fn clock(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    match s / 3600 {
        0 => format!("{}:{:02}", s / 60, s % 60),
        h => format!("{h}:{:02}:{:02}", s / 60 % 60, s % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_reads_minutes_and_hours() {
        assert_eq!(clock(0.4), "0:00");
        assert_eq!(clock(329.0), "5:29");
        assert_eq!(clock(2100.0), "35:00");
        assert_eq!(clock(3723.0), "1:02:03");
    }

    #[test]
    fn a_ticker_stops_when_dropped() {
        let run = RunProgress::new(1, true);
        let step = Step {
            number: 1,
            id: "race",
            profile: "quick",
            planned: Some(27.0),
            planned_left: 27.0,
        };
        let started = Instant::now();
        drop(run.start(&step));
        // The thread is joined at once, not after a tick.
        assert!(started.elapsed() < TICK);
    }
}
