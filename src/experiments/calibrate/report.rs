//! calibrate's summary for REPORT.md.

use crate::analysis::table::summarize;
use crate::analysis::AnalysisError;
use std::path::Path;

/// Both tools side by side per command.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    summarize(
        &dir.join("calibrate.csv"),
        &["command", "tool"],
        &[
            ("ops/s", "ops_per_s"),
            ("client CPU s", "client_cpu_s"),
            ("duration s", "duration_s"),
            ("Redis CPU µs/op", "redis_cpu_us_per_op"),
            ("Redis busy %", "redis_busy_pct"),
        ],
    )
}
