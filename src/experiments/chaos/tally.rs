//! From one client's raw trace to its rows: time bins (chaos.csv) and drill windows (drills.csv).
//! Pure functions of the trace, so what the claims read is tested without Redis.

use super::rows::{BinRow, Drill, DrillRow};
use super::service::{Fate, Request, Sample, Trace};
use crate::analysis::stats;
use crate::load::drill::Bins;
use crate::store::Outcome;
use hdrhistogram::Histogram;

/// One drill window, ns after the schedule's start: [start_ns, end_ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub drill: Drill,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// Who the rows are about.
pub struct Spec<'a> {
    pub client: &'a str,
    pub timeout_ms: u64,
    pub workers: u64,
    pub injected_ms: u64,
    pub bin_ms: u64,
}

/// Latency percentiles and answers of a set of served requests.
struct Served {
    hist: Option<Histogram<u64>>,
    /// Where the latency went, when asked for: waiting for a worker, the check, the work.
    parts: Option<[Histogram<u64>; 3]>,
    counts: [u64; 4],
}

impl Served {
    fn new() -> Self {
        let hist = crate::load::latency::new_histogram().ok();
        Served {
            hist,
            parts: None,
            counts: [0; 4],
        }
    }

    fn with_parts() -> Self {
        let part = || crate::load::latency::new_histogram().ok();
        let parts = match (part(), part(), part()) {
            (Some(wait), Some(check), Some(work)) => Some([wait, check, work]),
            _ => None,
        };
        Served {
            parts,
            ..Served::new()
        }
    }

    fn add(&mut self, r: &Request, outcome: Outcome) {
        if let Some(h) = &mut self.hist {
            record_span(h, r.intended_ns, r.end_ns);
        }
        if let Some([wait, check, work]) = &mut self.parts {
            record_span(wait, r.intended_ns, r.worker_ns);
            record_span(check, r.worker_ns, r.answered_ns);
            record_span(work, r.answered_ns, r.end_ns);
        }
        self.counts[outcome as usize] += 1;
    }

    /// (wait p99, check p50, check p99, work p99) in ms; None without parts or requests.
    fn part_percentiles(&self) -> [Option<f64>; 4] {
        match &self.parts {
            Some([wait, check, work]) => [
                quantile_ms(wait, 0.99),
                quantile_ms(check, 0.5),
                quantile_ms(check, 0.99),
                quantile_ms(work, 0.99),
            ],
            None => [None; 4],
        }
    }

    fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// (p50, p99, max) in ms; None when nothing was served.
    fn percentiles(&self) -> [Option<f64>; 3] {
        match &self.hist {
            Some(h) => [0.5, 0.99, 1.0].map(|q| quantile_ms(h, q)),
            None => [None; 3],
        }
    }
}

/// Records `to - from` ns (at least 1; out-of-range values are clamped, not lost).
fn record_span(h: &mut Histogram<u64>, from: u64, to: u64) {
    h.saturating_record(to.saturating_sub(from).max(1));
}

/// `h`'s value at quantile `q` in ms; None when it holds nothing.
fn quantile_ms(h: &Histogram<u64>, q: f64) -> Option<f64> {
    (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1e6)
}

/// The client's fail-open counter at `t_ns`: the last sample at or before it (0 before any).
fn counter_at(samples: &[Sample], t_ns: u64) -> u64 {
    let i = samples.partition_point(|s| s.t_ns <= t_ns);
    i.checked_sub(1).map_or(0, |i| samples[i].fail_open)
}

fn drill_at(windows: &[Window], t_ns: u64) -> Drill {
    let i = windows.partition_point(|w| w.start_ns <= t_ns);
    windows[i.saturating_sub(1).min(windows.len() - 1)].drill
}

/// One row per `bin_ms` from the schedule's start until the last request ended.
pub fn bins(spec: &Spec, trace: &Trace, windows: &[Window]) -> Vec<BinRow> {
    if windows.is_empty() {
        return Vec::new();
    }
    let ends = (trace.requests.iter().map(|r| r.end_ns)).chain(windows.iter().map(|w| w.end_ns));
    let end = ends.max().unwrap_or(0) as i64;
    let bins = Bins::spanning(0, end, spec.bin_ms.max(1) * 1_000_000);
    let at = |t: u64| bins.index_clamped(t as i64);
    let n = bins.count;
    let (mut offered, mut dropped) = (vec![0u64; n], vec![0u64; n]);
    let mut served: Vec<Served> = (0..n).map(|_| Served::new()).collect();
    for r in &trace.requests {
        offered[at(r.intended_ns)] += 1;
        match r.fate {
            Fate::Served(outcome) => served[at(r.end_ns)].add(r, outcome),
            Fate::Dropped => dropped[at(r.end_ns)] += 1,
            Fate::Error => {}
        }
    }
    let mut busy: Vec<(u64, u64, u64, u64)> = vec![(0, 0, 0, 0); n];
    for s in &trace.samples {
        let b = &mut busy[at(s.t_ns)];
        *b = (b.0.max(s.busy), b.1 + s.busy, b.2 + 1, b.3.max(s.waiting));
    }
    (0..n)
        .map(|i| {
            let t = bins.start_of(i) as u64;
            let [p50_ms, p99_ms, max_ms] = served[i].percentiles();
            let c = served[i].counts;
            let (busy_max, busy_sum, samples, queue_max) = busy[i];
            BinRow {
                client: spec.client.to_string(),
                timeout_ms: spec.timeout_ms,
                drill: drill_at(windows, t),
                t_s: t as f64 / 1e9,
                bin_ms: spec.bin_ms,
                offered: offered[i],
                served: served[i].total(),
                dropped: dropped[i],
                p50_ms,
                p99_ms,
                max_ms,
                allowed: c[Outcome::Allowed as usize],
                denied: c[Outcome::Denied as usize],
                degraded: c[Outcome::DegradedAllowed as usize]
                    + c[Outcome::DegradedDenied as usize],
                fail_open_counter: counter_at(&trace.samples, t + bins.width_ns)
                    .saturating_sub(counter_at(&trace.samples, t)),
                busy_max,
                busy_mean: busy_sum as f64 / samples.max(1) as f64,
                queue_max,
            }
        })
        .collect()
}

/// One row per drill window; the baseline window (the first) is every window's reference.
pub fn drills(spec: &Spec, trace: &Trace, windows: &[Window]) -> Vec<DrillRow> {
    let mut rows: Vec<DrillRow> = windows.iter().map(|w| drill(spec, trace, w)).collect();
    let baseline = (rows.iter())
        .find(|r| r.drill == Drill::Baseline)
        .and_then(|r| r.p99_ms);
    for r in &mut rows {
        r.baseline_p99_ms = baseline;
        r.p99_rise_ms = r.p99_ms.zip(baseline).map(|(p, b)| p - b);
    }
    rows
}

fn drill(spec: &Spec, trace: &Trace, w: &Window) -> DrillRow {
    let inside = |t: u64| t >= w.start_ns && t < w.end_ns;
    let mut served = Served::with_parts();
    let (mut offered, mut dropped, mut errors, mut completed) = (0, 0, 0, 0);
    let (mut due, mut rejected_due, mut due_checks_ms) = (0, 0, Vec::new());
    // A check that began a timeout before the window's end was answered under its conditions;
    // one that began later (or waited for a worker past the end) may meet the next window's.
    let due_inside = |r: &Request| r.worker_ns + spec.timeout_ms * 1_000_000 <= w.end_ns;
    // The baseline is the healthy reference: a request still in flight when the first fault
    // began is the fault's, not the baseline's.
    let counts = |r: &Request| match w.drill {
        Drill::Baseline => inside(r.intended_ns) && r.end_ns < w.end_ns,
        _ => inside(r.intended_ns),
    };
    for r in &trace.requests {
        completed += u64::from(matches!(r.fate, Fate::Served(_)) && inside(r.end_ns));
        if !counts(r) {
            continue;
        }
        offered += 1;
        match r.fate {
            Fate::Served(outcome) => served.add(r, outcome),
            Fate::Dropped => dropped += 1,
            Fate::Error => errors += 1,
        }
        if let (Fate::Served(outcome), true) = (r.fate, due_inside(r)) {
            due += 1;
            rejected_due += u64::from(matches!(outcome, Outcome::Denied | Outcome::DegradedDenied));
            due_checks_ms.push(r.answered_ns.saturating_sub(r.worker_ns) as f64 / 1e6);
        }
    }
    let samples: Vec<&Sample> = trace.samples.iter().filter(|s| inside(s.t_ns)).collect();
    let busy_max = samples.iter().map(|s| s.busy).max().unwrap_or(0);
    let busy_mean =
        samples.iter().map(|s| s.busy as f64).sum::<f64>() / samples.len().max(1) as f64;
    // All busy when the window opened (carried over), or the first time the last worker was taken.
    let before = trace.samples.partition_point(|s| s.t_ns <= w.start_ns);
    let busy_at_start = before
        .checked_sub(1)
        .is_some_and(|i| trace.samples[i].busy >= spec.workers);
    let all_busy_after_ms = match busy_at_start {
        true => Some(0.0),
        false => {
            (trace.all_busy_ns.iter().find(|&&t| inside(t))).map(|t| (t - w.start_ns) as f64 / 1e6)
        }
    };
    let length_ms = (w.end_ns - w.start_ns) as f64 / 1e6;
    let periods = (length_ms / spec.timeout_ms.max(1) as f64).ceil();
    let share = |n: f64| n / offered.max(1) as f64;
    let [p50_ms, p99_ms, max_ms] = served.percentiles();
    let [wait_p99_ms, check_p50_ms, check_p99_ms, work_p99_ms] = served.part_percentiles();
    let c = served.counts;
    DrillRow {
        client: spec.client.to_string(),
        timeout_ms: spec.timeout_ms,
        drill: w.drill,
        start_ms: w.start_ns as f64 / 1e6,
        end_ms: w.end_ns as f64 / 1e6,
        workers: spec.workers,
        injected_ms: if w.drill == Drill::Latency {
            spec.injected_ms
        } else {
            0
        },
        offered,
        served: served.total(),
        dropped,
        completed_in_window: completed,
        served_fraction: share(completed as f64),
        pool_bound: share(spec.workers as f64 * (1.0 + periods)),
        dropped_fraction: share(dropped as f64),
        p50_ms,
        p99_ms,
        max_ms,
        baseline_p99_ms: None,
        p99_rise_ms: None,
        wait_p99_ms,
        check_p50_ms,
        tokio_timer_late_p50_ms: None,
        precise_timer_late_p50_ms: None,
        check_p99_ms,
        work_p99_ms,
        all_busy_after_ms,
        busy_max,
        busy_mean,
        allowed: c[Outcome::Allowed as usize],
        denied: c[Outcome::Denied as usize],
        degraded_allowed: c[Outcome::DegradedAllowed as usize],
        degraded_denied: c[Outcome::DegradedDenied as usize],
        degraded_fraction: stats::share(
            c[Outcome::DegradedAllowed as usize] + c[Outcome::DegradedDenied as usize],
            served.total(),
        ),
        fail_open_counter: counter_at(&trace.samples, w.end_ns)
            .saturating_sub(counter_at(&trace.samples, w.start_ns)),
        errors,
        checked_due_in_window: Some(due),
        rejected_due_in_window: Some(rejected_due),
        check_due_p50_ms: stats::quantile(&due_checks_ms, 0.5),
    }
}

/// A drill row with this window and zeros elsewhere, for tests of what reads drills.csv.
#[cfg(test)]
pub(super) fn tests_row(
    client: &str,
    timeout_ms: u64,
    drill: Drill,
    start_ms: f64,
    end_ms: f64,
) -> DrillRow {
    let spec = Spec {
        client,
        timeout_ms,
        workers: 40,
        injected_ms: 300,
        bin_ms: 1000,
    };
    let w = Window {
        drill,
        start_ns: (start_ms * 1e6) as u64,
        end_ns: (end_ms * 1e6) as u64,
    };
    self::drill(&spec, &Trace::default(), &w)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// Served `took_ms` after its intended start: a worker at once, the check all but 1 ms of it.
    fn served(intended_ms: u64, took_ms: u64, outcome: Outcome) -> Request {
        Request {
            intended_ns: intended_ms * MS,
            worker_ns: intended_ms * MS,
            answered_ns: (intended_ms + took_ms - 1) * MS,
            end_ns: (intended_ms + took_ms) * MS,
            fate: Fate::Served(outcome),
        }
    }

    fn sample(t_ms: u64, busy: u64, fail_open: u64) -> Sample {
        Sample {
            t_ns: t_ms * MS,
            busy,
            waiting: 0,
            fail_open,
        }
    }

    fn spec() -> Spec<'static> {
        Spec {
            client: "correct",
            timeout_ms: 100,
            workers: 2,
            injected_ms: 300,
            bin_ms: 1000,
        }
    }

    fn windows() -> Vec<Window> {
        vec![
            Window {
                drill: Drill::Baseline,
                start_ns: 0,
                end_ns: 1000 * MS,
            },
            Window {
                drill: Drill::Blackhole,
                start_ns: 1000 * MS,
                end_ns: 2000 * MS,
            },
        ]
    }

    /// Baseline: two fast requests. Blackhole: both workers taken 50 ms in, one request dropped,
    /// one answered by policy after 100 ms, one finishing after the window.
    fn trace() -> Trace {
        Trace {
            requests: vec![
                served(10, 2, Outcome::Allowed),
                served(500, 4, Outcome::Denied),
                served(1040, 100, Outcome::DegradedAllowed),
                Request {
                    intended_ns: 1100 * MS,
                    worker_ns: 1350 * MS,
                    answered_ns: 1350 * MS,
                    end_ns: 1350 * MS,
                    fate: Fate::Dropped,
                },
                served(1950, 100, Outcome::DegradedAllowed),
            ],
            samples: vec![
                sample(0, 0, 0),
                sample(1000, 0, 0),
                sample(1500, 2, 1),
                sample(2100, 0, 2),
            ],
            all_busy_ns: vec![1050 * MS],
            first_error: None,
        }
    }

    #[test]
    fn a_check_that_began_past_its_windows_last_timeout_is_not_the_windows_rejection() {
        let mut late = served(1800, 10, Outcome::Denied);
        late.worker_ns = 2010 * MS; // waited for a worker past the window's end
        let requests = vec![
            served(1100, 100, Outcome::DegradedDenied),
            served(1950, 10, Outcome::Denied), // began within the last timeout
            late,
        ];
        let trace = Trace {
            requests,
            ..Trace::default()
        };
        let hole = &drills(&spec(), &trace, &windows())[1];
        assert_eq!(hole.served, 3);
        assert_eq!(
            (hole.checked_due_in_window, hole.rejected_due_in_window),
            (Some(1), Some(1))
        );
        // The median check of the window is the due one's alone (99 ms), not the late ones'.
        let due_p50 = hole.check_due_p50_ms.unwrap();
        assert!((due_p50 - 99.0).abs() < 1e-9, "{due_p50}");
    }

    #[test]
    fn drill_windows_count_what_was_offered_in_them_and_finished_in_them() {
        let rows = drills(&spec(), &trace(), &windows());
        let (base, hole) = (&rows[0], &rows[1]);
        assert_eq!(
            (base.offered, base.served, base.completed_in_window),
            (2, 2, 2)
        );
        assert_eq!((base.allowed, base.denied), (1, 1));
        // hdrhistogram keeps 3 significant digits: 4 ms within 0.1%.
        assert!(
            (base.p99_ms.unwrap() / 4.0 - 1.0).abs() < 1e-3,
            "{:?}",
            base.p99_ms
        );
        assert_eq!((hole.offered, hole.served, hole.dropped), (3, 2, 1));
        assert_eq!(
            hole.completed_in_window, 1,
            "the last one finished after the window"
        );
        assert_eq!(hole.all_busy_after_ms, Some(50.0));
        assert_eq!(
            hole.fail_open_counter, 1,
            "the counter at the window's end, not after"
        );
        assert_eq!(hole.degraded_fraction, 1.0);
        // p99 of {100, 100} ms: hdrhistogram's 3 digits keep 100 ms within 0.1%.
        let rise = hole.p99_rise_ms.unwrap();
        assert!((rise - 96.0).abs() < 0.2, "{rise}");
        // 2 workers x (1 + 1000 / 100 periods) of 3 offered.
        assert_eq!(hole.pool_bound, 22.0 / 3.0);
        // The one checked 50 ms before the end (a 100 ms timeout) may have met the heal.
        assert_eq!(
            (hole.checked_due_in_window, hole.rejected_due_in_window),
            (Some(1), Some(0))
        );
        assert_eq!(hole.injected_ms, 0, "injected only in the latency drill");
        // The parts of the served ones only (the dropped request's wait is not among them).
        let near = |v: Option<f64>, want: f64| v.is_some_and(|v| (v - want).abs() < 0.1);
        assert!(
            near(hole.check_p99_ms, 99.0) && near(hole.work_p99_ms, 1.0),
            "{hole:?}"
        );
        assert!(
            near(hole.wait_p99_ms, 0.0) && near(base.check_p50_ms, 1.0),
            "{base:?}"
        );
    }

    #[test]
    fn bins_place_served_and_dropped_requests_where_they_ended() {
        let rows = bins(&spec(), &trace(), &windows());
        assert_eq!(rows.len(), 3, "until the last request ended at 2.05 s");
        assert_eq!(
            rows.iter().map(|r| r.offered).collect::<Vec<_>>(),
            [2, 3, 0]
        );
        assert_eq!(rows.iter().map(|r| r.served).collect::<Vec<_>>(), [2, 1, 1]);
        assert_eq!(rows[1].dropped, 1);
        assert_eq!(rows[1].drill, Drill::Blackhole);
        assert_eq!(
            rows[2].drill,
            Drill::Blackhole,
            "past the last window: the last drill"
        );
        assert_eq!(
            rows.iter().map(|r| r.fail_open_counter).collect::<Vec<_>>(),
            [0, 1, 1]
        );
        assert_eq!((rows[1].busy_max, rows[1].degraded), (2, 1));
        assert_eq!(rows[2].p50_ms.map(f64::round), Some(100.0));
        assert_eq!(rows[2].p99_ms.is_some(), rows[2].served > 0);
    }

    #[test]
    fn workers_busy_when_a_window_opens_count_as_exhausted_at_once() {
        let mut t = trace();
        t.samples[1] = sample(1000, 2, 0);
        t.all_busy_ns.clear();
        let rows = drills(&spec(), &t, &windows());
        assert_eq!(rows[1].all_busy_after_ms, Some(0.0));
        assert_eq!(rows[0].all_busy_after_ms, None);
    }
}
