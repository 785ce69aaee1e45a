//! Load generators. Closed loop: P worker processes, each one single-threaded event loop with ONE
//! connection shared by F in-flight requests (what produces seed 000's read, read, write, write).

mod closed;
mod workers;

pub use closed::run_checks;
pub use workers::{run_closed_loop, worker_main, ClosedLoop};

use crate::limiter::{LimitSpec, Strategy};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What one worker process does: `checks` checks of `key`, `in_flight` at a time, on one connection.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerSpec {
    /// Server to connect to.
    pub url: String,
    /// Strategy under test.
    pub strategy: Strategy,
    /// Its limit.
    pub limit: LimitSpec,
    /// The key every check of this worker targets.
    pub key: String,
    /// How many checks this worker makes in total.
    pub checks: u64,
    /// How many checks it keeps in flight on its one connection.
    pub in_flight: usize,
    /// Connection and response timeouts (set explicitly; redis-rs defaults to 500 ms responses).
    pub timeouts: ClientTimeouts,
}

/// Client timeouts, recorded in meta.json.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct ClientTimeouts {
    /// Bound on establishing the connection, in ms.
    pub connect_ms: u64,
    /// Bound on each reply, in ms.
    pub response_ms: u64,
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
}

impl CheckTally {
    /// Adds another worker's tally; elapsed is the slowest worker's.
    pub fn merge(&mut self, other: CheckTally) {
        self.admitted += other.admitted;
        self.denied += other.denied;
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
        self.elapsed_ns = self.elapsed_ns.max(other.elapsed_ns);
    }

    /// Checks made.
    pub fn total(&self) -> u64 {
        self.admitted + self.denied + self.errors
    }
}

/// What can go wrong driving load.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("could not start worker `{exe}`: {source}")]
    Spawn { exe: String, source: std::io::Error },
    #[error("worker {index} failed: {detail}")]
    Worker { index: usize, detail: String },
    #[error("worker protocol: {0}")]
    Protocol(String),
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_sums_counts_and_keeps_slowest_and_first_error() {
        let mut a = CheckTally {
            admitted: 3,
            denied: 1,
            errors: 0,
            first_error: None,
            elapsed_ns: 10,
        };
        let b = CheckTally {
            admitted: 2,
            denied: 0,
            errors: 1,
            first_error: Some("boom".into()),
            elapsed_ns: 7,
        };
        a.merge(b);
        assert_eq!(
            (a.admitted, a.denied, a.errors, a.elapsed_ns),
            (5, 1, 1, 10)
        );
        assert_eq!(a.first_error.as_deref(), Some("boom"));
        assert_eq!(a.total(), 7);
    }
}
