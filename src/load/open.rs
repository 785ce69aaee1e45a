//! Open loop: requests start on a schedule (Poisson arrivals, or bursts at set times), never
//! waiting for earlier replies, and latency counts from the INTENDED start. A stalled server then
//! shows up as latency rather than as requests that were never sent (no coordinated omission).
//!
//! Each worker process is one current-thread event loop that spawns every request as its own
//! task when it is due. A request takes an idle connection from a pool opened before the start,
//! as a go-redis pool would hand out; when none is idle it is written at once on a busy one
//! (multiplexed, so the send never waits for a reply) and counted in `shared_sends`. Strategies
//! that keep state on the connection (WATCH) must not run here with a pool that can run dry.

use super::schedule::{Arrivals, Start};
use super::{CheckTally, ClientTimeouts, KeyChoice, LoadError};
use crate::limiter::{LimitSpec, Strategy};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A start later than this after its intended time means the generator did not keep up.
pub const LATE_NS: u64 = 1_000_000;

/// What one open-loop worker process does.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OpenSpec {
    /// Server to connect to.
    pub url: String,
    /// Strategy under test.
    pub strategy: Strategy,
    /// Its limit.
    pub limit: LimitSpec,
    /// Which key each request targets.
    pub keys: KeyChoice,
    /// When requests start, relative to `start`.
    pub arrivals: Arrivals,
    /// When the schedule's clock starts.
    pub start: Start,
    /// Connections opened before the start (the pool).
    pub connections: usize,
    /// Keep each request's times and outcome, not only histograms.
    pub record_requests: bool,
    /// Seed of the schedule (shared by all workers) and of key choice (per worker).
    pub seed: u64,
    /// Set by the parent: this worker's index, and how many share the schedule.
    pub worker_index: u64,
    pub workers: u64,
    /// Connection and response timeouts.
    pub timeouts: ClientTimeouts,
}

/// One request as the generator saw it, in ns after the schedule's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestRecord {
    pub intended_ns: u64,
    pub sent_ns: u64,
    pub done_ns: u64,
    pub allowed: bool,
}

/// What open-loop workers did, merged.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct OpenTally {
    /// Decisions; `latency_ns` holds latency from the intended start.
    pub checks: CheckTally,
    /// Requests the schedule started.
    pub offered: u64,
    /// How late each request started, ns, as histogram buckets.
    pub lateness_ns: Vec<(u64, u64)>,
    /// Starts more than `LATE_NS` late.
    pub late_starts: u64,
    /// The latest start, ns.
    pub max_lateness_ns: u64,
    /// Requests sent on a connection that was still waiting for an earlier reply.
    pub shared_sends: u64,
    /// Most requests outstanding at once in one worker.
    pub max_in_flight: u64,
    /// Connections in the pools.
    pub connections: u64,
    /// The schedule's start in Unix ns on this machine's clock (the earliest worker's).
    pub origin_unix_ns: u64,
    /// CPU seconds (user + sys) the worker processes used: near the run's length means the
    /// generator was saturated, far below it with late starts means it was starved of CPU.
    #[serde(default)]
    pub cpu_s: f64,
    /// Per request, when `record_requests` (errors excluded: they fail the run anyway).
    pub requests: Vec<RequestRecord>,
}

impl OpenTally {
    /// Adds another worker's tally.
    pub fn merge(&mut self, other: OpenTally) {
        let first = self.offered == 0 && self.connections == 0;
        self.checks.merge(other.checks);
        self.offered += other.offered;
        self.lateness_ns.extend(other.lateness_ns);
        self.late_starts += other.late_starts;
        self.max_lateness_ns = self.max_lateness_ns.max(other.max_lateness_ns);
        self.shared_sends += other.shared_sends;
        self.max_in_flight = self.max_in_flight.max(other.max_in_flight);
        self.connections += other.connections;
        self.cpu_s += other.cpu_s;
        self.origin_unix_ns = match first {
            true => other.origin_unix_ns,
            false => self.origin_unix_ns.min(other.origin_unix_ns),
        };
        self.requests.extend(other.requests);
        self.requests.sort_by_key(|r| r.intended_ns);
    }

    /// How late the starts were, as one histogram (ns).
    pub fn lateness_histogram(&self) -> Result<hdrhistogram::Histogram<u64>, LoadError> {
        super::latency::from_buckets(&self.lateness_ns)
    }

    /// Whether every request started within `LATE_NS` of its intended time.
    pub fn kept_up(&self) -> bool {
        self.late_starts == 0
    }
}

/// An open-loop run: `processes` workers sharing one schedule.
#[derive(Debug, Clone)]
pub struct OpenLoop<'a> {
    /// The ratelab binary to re-execute.
    pub exe: &'a Path,
    /// CPUs the workers are pinned to (empty: not pinned).
    pub cpus: &'a [usize],
    /// Worker processes; one current-thread worker keeps 10,000/s, so 1 is the norm.
    pub processes: usize,
    /// Spec of every worker (index and count are set per worker).
    pub template: OpenSpec,
}

impl OpenLoop<'_> {
    /// Each worker's spec: the same schedule, its own share of it.
    pub(super) fn specs(&self) -> Vec<OpenSpec> {
        let n = self.processes.max(1);
        (0..n)
            .map(|i| OpenSpec {
                worker_index: i as u64,
                workers: n as u64,
                ..self.template.clone()
            })
            .collect()
    }
}

/// Whether the open-loop generator kept to its schedule over a whole experiment; meta.json.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct OpenLoopHealth {
    /// Open-loop runs made.
    pub runs: u64,
    /// Requests they started.
    pub requests: u64,
    /// Starts later than `late_threshold_ms`.
    pub late_starts: u64,
    pub late_threshold_ms: f64,
    /// The latest start of all, and the run it happened in.
    pub max_lateness_ms: f64,
    pub worst_run: String,
    /// Requests sent on a busy connection because the pool had none idle.
    pub shared_sends: u64,
    /// False when any start was later than the threshold.
    pub kept_up: bool,
}

impl OpenLoopHealth {
    /// Adds one run.
    pub fn add(&mut self, label: &str, t: &OpenTally) {
        if self.runs == 0 {
            self.kept_up = true;
            self.late_threshold_ms = LATE_NS as f64 / 1e6;
        }
        self.runs += 1;
        self.requests += t.offered;
        self.late_starts += t.late_starts;
        self.shared_sends += t.shared_sends;
        self.kept_up &= t.kept_up();
        let late_ms = t.max_lateness_ns as f64 / 1e6;
        if late_ms > self.max_lateness_ms || self.worst_run.is_empty() {
            self.max_lateness_ms = self.max_lateness_ms.max(late_ms);
            self.worst_run = label.to_string();
        }
    }

    /// The sentence meta.json's notes carry: a warning when the generator fell behind.
    pub fn note(&self) -> String {
        let what = format!(
            "{} of {} starts more than {} ms late, latest {:.3} ms ({})",
            self.late_starts,
            self.requests,
            self.late_threshold_ms,
            self.max_lateness_ms,
            self.worst_run
        );
        match self.kept_up {
            true => format!("Open-loop generator kept to its schedule: {what}."),
            false => format!(
                "WARNING: the open-loop generator fell behind its schedule: {what}; late requests \
                arrived bunched, not as scheduled."
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(offered: u64, late: u64, max_ns: u64, origin: u64) -> OpenTally {
        OpenTally {
            offered,
            late_starts: late,
            max_lateness_ns: max_ns,
            origin_unix_ns: origin,
            connections: 4,
            requests: vec![RequestRecord {
                intended_ns: origin,
                sent_ns: origin,
                done_ns: origin,
                allowed: true,
            }],
            ..OpenTally::default()
        }
    }

    #[test]
    fn merge_keeps_the_earliest_origin_and_sorts_requests() {
        let mut a = OpenTally::default();
        a.merge(tally(10, 0, 5, 200));
        a.merge(tally(5, 1, 2_000_000, 100));
        assert_eq!((a.offered, a.late_starts, a.connections), (15, 1, 8));
        assert_eq!((a.max_lateness_ns, a.origin_unix_ns), (2_000_000, 100));
        assert_eq!(a.requests[0].intended_ns, 100);
        assert!(!a.kept_up());
    }

    #[test]
    fn lateness_buckets_merge_into_one_histogram() {
        let mut a = tally(2, 0, 10, 0);
        a.lateness_ns = vec![(1_000, 2)];
        let mut b = tally(1, 1, 3_000_000, 0);
        b.lateness_ns = vec![(3_000_000, 1)];
        a.merge(b);
        let h = a.lateness_histogram().unwrap();
        assert_eq!(h.len(), 3);
        assert!(h.value_at_quantile(0.5) < 2_000 && h.max() >= 3_000_000);
    }

    #[test]
    fn health_flags_a_late_run_and_names_it() {
        let mut h = OpenLoopHealth::default();
        h.add("a", &tally(100, 0, 300_000, 0));
        assert!(h.kept_up && h.note().starts_with("Open-loop generator kept"));
        h.add("b", &tally(100, 3, 4_000_000, 0));
        h.add("c", &tally(100, 0, 200_000, 0));
        assert!(!h.kept_up);
        assert_eq!((h.runs, h.requests, h.late_starts), (3, 300, 3));
        assert_eq!((h.max_lateness_ms, h.worst_run.as_str()), (4.0, "b"));
        assert!(h.note().starts_with("WARNING"), "{}", h.note());
    }
}
