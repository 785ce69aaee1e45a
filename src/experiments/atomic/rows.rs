//! atomic's CSV schema.

use crate::limiter::Strategy;
use serde::{Deserialize, Serialize};

/// One trial.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AtomicRow {
    pub strategy: Strategy,
    pub processes: usize,
    pub in_flight: usize,
    pub trial: u32,
    pub capacity: u64,
    pub checks: u64,
    pub admitted: u64,
    pub refused: u64,
    pub errors: u64,
    pub watch_retries: u64,
    pub watch_aborts: u64,
    /// Round trips to Redis, all decisions of the trial.
    pub redis_calls: u64,
    pub redis_cpu_us: f64,
    pub cpu_us_per_decision: f64,
    pub elapsed_ms: f64,
}
