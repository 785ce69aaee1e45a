//! Load generators. Closed loop: P worker processes, each one single-threaded event loop with ONE
//! connection shared by F in-flight requests (what produces seed 000's read, read, write, write).
//! Open loop: requests start on a seeded schedule whatever the replies do, latency counted from
//! the intended start (`open`, `schedule`). Pods: open-loop workers that send what they admit to
//! a loopback sink standing for the protected resource, which counts what arrived (`pod`, `sink`).
//! Drills: a schedule and a plan of faults at planned instants, every request recorded (`drill`).

mod closed;
pub mod drill;
pub mod latency;
mod open;
mod open_worker;
pub mod own_thread;
pub mod pipelined;
mod pod;
pub mod probe;
pub mod rng;
mod schedule;
pub mod sink;
pub mod timer;
mod workers;

pub use closed::run_checks;
pub use open::{OpenLoop, OpenLoopHealth, OpenSpec, OpenTally, RequestRecord, LATE_NS};
pub use pod::{PodFleet, PodSecond, PodSpec, PodTally};
pub use schedule::{aligned_start, share, Arrivals, Burst, Start};
pub use workers::{
    run_closed_loop, run_open_loop, run_pods, split_checks, worker_main, ClosedLoop, Fleet,
};

use crate::limiter::{Invocation, LimitSpec, LimiterError, Strategy};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What one worker process does: checks against `keys` from `connections` connections with
/// `in_flight` requests each, until `stop`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerSpec {
    /// Server to connect to.
    pub url: String,
    /// Strategy under test.
    pub strategy: Strategy,
    /// How its script is sent (absent in older specs: the default, EVALSHA then EVAL).
    #[serde(default)]
    pub invocation: Invocation,
    /// Its limit.
    pub limit: LimitSpec,
    /// Which key each check targets.
    pub keys: KeyChoice,
    /// Tokens each check asks for: a custom limiter's `{cost}`, a limiter process's `cost`.
    /// Built-in strategies decide one request per check and refuse any other (absent in older
    /// specs: 1).
    #[serde(default = "one_token")]
    pub cost: u32,
    /// When the worker is done.
    pub stop: Stop,
    /// Connections this worker opens (clients); in-flight requests of one connection share it.
    pub connections: usize,
    /// Requests in flight per connection.
    pub in_flight: usize,
    /// The `in_flight` requests of a connection go in waves: they start together, and the next
    /// wave starts once the last of them is answered (a check's own loop, when false: each
    /// request is replaced as soon as it is answered). Absent in older specs: off.
    #[serde(default)]
    pub waves: bool,
    /// Record each check's latency into a histogram.
    pub record_latency: bool,
    /// Run on the lean pipelined client (`pipelined`) where it serves the strategy and URL:
    /// raw commands, `in_flight` of them on the wire per connection. Absent in older specs: off.
    #[serde(default)]
    pub pipelined: bool,
    /// Run seed; the worker's random stream is (seed, worker_index).
    pub seed: u64,
    /// Set by the parent: this worker's index among its siblings.
    pub worker_index: u64,
    /// Connection and response timeouts (set explicitly; redis-rs defaults to 500 ms responses).
    pub timeouts: ClientTimeouts,
}

impl WorkerSpec {
    /// One connection, one request in flight, checking `keys` until `stop`; the URL, seed and
    /// timeouts are the run's (`Session::closed_loop` sets them).
    pub fn new(strategy: Strategy, limit: LimitSpec, keys: KeyChoice, stop: Stop) -> Self {
        WorkerSpec {
            url: String::new(),
            strategy,
            invocation: Invocation::default(),
            limit,
            keys,
            cost: 1,
            stop,
            connections: 1,
            in_flight: 1,
            waves: false,
            record_latency: false,
            pipelined: false,
            seed: 0,
            worker_index: 0,
            timeouts: ClientTimeouts::default(),
        }
    }

    /// The race's shape: `checks` checks of one key, `in_flight` at a time on one connection;
    /// the URL, seed and timeouts are the run's (`Session::closed_loop` sets them).
    pub fn one_key(
        strategy: Strategy,
        limit: LimitSpec,
        key: &str,
        checks: u64,
        in_flight: usize,
    ) -> Self {
        WorkerSpec {
            in_flight,
            ..Self::new(
                strategy,
                limit,
                KeyChoice::One(key.to_string()),
                Stop::AfterChecks(checks),
            )
        }
    }
}

fn one_token() -> u32 {
    1
}

/// Which key a check targets.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub enum KeyChoice {
    /// Every check on one key (contention; the abusive client).
    One(String),
    /// Uniformly among `prefix` + 12-digit index in `0..count` (normal traffic over many clients).
    Uniform { prefix: String, count: u64 },
    /// The same keys in turn (0, 1, .., count - 1, 0, ..): with `count x L` checks on one worker
    /// every key gets exactly L, so a fill leaves every client at its limit.
    RoundRobin { prefix: String, count: u64 },
}

impl KeyChoice {
    /// The name of key `index` of a key set: zero-padded to 12 digits like redis-benchmark's
    /// __rand_int__, so both hit the same keys.
    pub fn indexed(prefix: &str, index: u64) -> String {
        let mut key = String::with_capacity(prefix.len() + 12);
        Self::write_indexed(&mut key, prefix, index);
        key
    }

    /// [`indexed`](Self::indexed) appended to `out`, without formatting machinery (a worker's
    /// hot path names a key per check).
    pub fn write_indexed(out: &mut String, prefix: &str, index: u64) {
        out.push_str(prefix);
        let mut digits = [b'0'; 12];
        let mut rest = index;
        for d in digits.iter_mut().rev() {
            *d = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        if rest > 0 {
            // Beyond 12 digits the format widens, as `{:012}` does.
            out.push_str(&index.to_string());
            return;
        }
        // ASCII digits only, so valid UTF-8 (the profile showed a char-by-char push here).
        out.push_str(std::str::from_utf8(&digits).expect("ASCII digits"));
    }
}

/// When a worker stops.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum Stop {
    /// After this many checks in total (split across workers by the parent).
    AfterChecks(u64),
    /// After this many ms of wall time (each worker).
    AfterMs(u64),
}

/// Client timeouts, recorded in meta.json.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct ClientTimeouts {
    /// Bound on establishing the connection, in ms.
    pub connect_ms: u64,
    /// Bound on each reply, in ms.
    pub response_ms: u64,
}

impl ClientTimeouts {
    /// What a limiter process is told of the server at `url` and of these timeouts.
    pub fn reach(&self, url: &str) -> crate::limiter::process::Reach {
        crate::limiter::process::Reach::to(url, self.response_ms)
    }
}

impl Default for ClientTimeouts {
    fn default() -> Self {
        ClientTimeouts {
            connect_ms: 5_000,
            response_ms: 5_000,
        }
    }
}

impl ClientTimeouts {
    /// The redis-rs config carrying these timeouts.
    pub fn config(&self) -> redis::AsyncConnectionConfig {
        redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(Duration::from_millis(self.connect_ms)))
            .set_response_timeout(Some(Duration::from_millis(self.response_ms)))
    }
}

/// What a worker (or all of them, merged) decided.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct CheckTally {
    /// Checks answered "allowed".
    pub admitted: u64,
    /// Checks answered "denied".
    pub denied: u64,
    /// Checks that failed (no decision).
    pub errors: u64,
    /// The first error's message, to explain a non-zero `errors`.
    pub first_error: Option<String>,
    /// Wall time from the first check's start to the last one's end, in ns (max over workers).
    pub elapsed_ns: u64,
    /// WATCH transactions retried after an abort.
    #[serde(default)]
    pub retries: u64,
    /// Checks refused because the WATCH retry budget ran out.
    #[serde(default)]
    pub aborted: u64,
    /// Round trips to Redis across all decisions.
    #[serde(default)]
    pub redis_calls: u64,
    /// Decisions made though Redis had lost the script (NOSCRIPT), by the invocation's fallback.
    #[serde(default)]
    pub noscript: u64,
    /// Per-check latency in ns as (highest equivalent value, count) buckets, when recorded.
    #[serde(default)]
    pub latency_ns: Vec<(u64, u64)>,
    /// Why a limiter process could not decide (it exited, wrote what is not an answer, fell
    /// silent): unlike its library's own errors, never a measurement, so the run must stop.
    #[serde(default)]
    pub broken: Option<String>,
}

impl CheckTally {
    /// Adds another worker's tally; elapsed is the slowest worker's.
    pub fn merge(&mut self, other: CheckTally) {
        self.admitted += other.admitted;
        self.denied += other.denied;
        self.errors += other.errors;
        self.retries += other.retries;
        self.aborted += other.aborted;
        self.redis_calls += other.redis_calls;
        self.noscript += other.noscript;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
        if self.broken.is_none() {
            self.broken = other.broken;
        }
        self.elapsed_ns = self.elapsed_ns.max(other.elapsed_ns);
        self.latency_ns.extend(other.latency_ns);
    }

    /// The recorded latencies as one histogram (ns).
    pub fn latency_histogram(&self) -> Result<Histogram<u64>, LoadError> {
        latency::from_buckets(&self.latency_ns)
    }

    /// Counts a check that made no decision.
    pub fn failed(&mut self, e: &LimiterError) {
        self.errors += 1;
        self.first_error.get_or_insert_with(|| e.to_string());
        if let LimiterError::Process { .. } = e {
            self.broken.get_or_insert_with(|| e.to_string());
        }
    }

    /// Checks made.
    pub fn total(&self) -> u64 {
        self.admitted + self.denied + self.errors
    }
}

/// What can go wrong driving load.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("could not start worker `{exe}`")]
    Spawn { exe: String, source: std::io::Error },
    #[error("worker {index} failed: {detail}")]
    Worker { index: usize, detail: String },
    #[error("worker protocol: {0}")]
    Protocol(String),
    #[error(transparent)]
    Redis(#[from] redis::RedisError),
    #[error(transparent)]
    Limiter(#[from] LimiterError),
    #[error("histogram: {0}")]
    Histogram(String),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexed_keys_are_zero_padded_like_redis_benchmark_rand_int() {
        for i in [0, 7, 42, 999_999_999_999, 1_000_000_000_000, u64::MAX] {
            assert_eq!(KeyChoice::indexed("p:", i), format!("p:{i:012}"));
        }
    }

    #[test]
    fn merge_sums_counts_and_keeps_slowest_and_first_error() {
        let mut a = CheckTally {
            admitted: 3,
            denied: 1,
            retries: 4,
            redis_calls: 8,
            elapsed_ns: 10,
            latency_ns: vec![(100, 2)],
            ..CheckTally::default()
        };
        let b = CheckTally {
            admitted: 2,
            denied: 0,
            errors: 1,
            first_error: Some("boom".into()),
            retries: 1,
            aborted: 1,
            redis_calls: 3,
            noscript: 2,
            elapsed_ns: 7,
            latency_ns: vec![(100, 1), (300, 1)],
            broken: Some("it exited".into()),
        };
        a.merge(b);
        assert_eq!(a.broken.as_deref(), Some("it exited"));
        assert_eq!(
            (a.admitted, a.denied, a.errors, a.elapsed_ns),
            (5, 1, 1, 10)
        );
        assert_eq!(a.first_error.as_deref(), Some("boom"));
        assert_eq!(
            (a.retries, a.aborted, a.redis_calls, a.noscript),
            (5, 1, 11, 2)
        );
        assert_eq!(a.total(), 7);
        let h = a.latency_histogram().unwrap();
        assert_eq!(h.len(), 4);
        assert_eq!(h.max(), 300);
    }
}
