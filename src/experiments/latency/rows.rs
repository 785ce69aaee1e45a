//! latency's CSV schema.

use crate::limiter::Strategy;
use crate::record::CsvFile;
use serde::{Deserialize, Serialize};

/// `latency.csv`: percentiles per strategy and run.
pub const LATENCY: CsvFile<LatencyRow> = CsvFile::new("latency.csv");
/// `latency_hist.csv`: every recorded histogram bucket.
pub const HIST: CsvFile<HistRow> = CsvFile::new("latency_hist.csv");

/// Percentiles of one run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LatencyRow {
    pub strategy: Strategy,
    pub run: u32,
    pub requests: u64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    pub mean_us: f64,
}

/// One recorded histogram bucket.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HistRow {
    pub strategy: Strategy,
    pub run: u32,
    /// The bucket's highest equivalent value, µs.
    pub value_us: f64,
    pub count: u64,
}
