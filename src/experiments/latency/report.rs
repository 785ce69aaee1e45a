//! latency's summary for REPORT.md.

use crate::analysis::table::summarize;
use crate::analysis::AnalysisError;
use std::path::Path;

/// Percentiles per strategy.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    summarize(
        &dir.join("latency.csv"),
        &["strategy"],
        &[
            ("p50 µs", "p50_us"),
            ("p90 µs", "p90_us"),
            ("p99 µs", "p99_us"),
            ("p99.9 µs", "p999_us"),
            ("max µs", "max_us"),
        ],
    )
}
