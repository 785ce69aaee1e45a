//! latency's summary for REPORT.md.

use super::LatencyRow;
use crate::analysis::table::{summarize, Key, Stat};
use crate::analysis::AnalysisError;
use std::path::Path;

/// Percentiles per strategy.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let keys: [Key<LatencyRow>; 1] = [("strategy", |r| r.strategy.to_string())];
    let stats: [Stat<LatencyRow>; 5] = [
        ("p50 µs", |r| Some(r.p50_us)),
        ("p90 µs", |r| Some(r.p90_us)),
        ("p99 µs", |r| Some(r.p99_us)),
        ("p99.9 µs", |r| Some(r.p999_us)),
        ("max µs", |r| Some(r.max_us)),
    ];
    summarize(&dir.join("latency.csv"), &keys, &stats)
}
