//! cost's summary for REPORT.md.

use crate::analysis::table::summarize;
use crate::analysis::AnalysisError;
use std::path::Path;

/// Throughput, Redis CPU and script time per strategy and variant.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    summarize(
        &dir.join("cost.csv"),
        &["strategy", "variant"],
        &[
            ("decisions/s", "decisions_per_s"),
            ("Redis CPU µs/decision", "cpu_us_per_decision"),
            ("busy %", "redis_busy_pct"),
            ("µs per call", "usec_per_call"),
            ("allowed", "allowed"),
            ("denied", "denied"),
        ],
    )
}
