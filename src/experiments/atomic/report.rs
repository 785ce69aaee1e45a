//! atomic's summary for REPORT.md.

use crate::analysis::table::summarize;
use crate::analysis::AnalysisError;
use std::path::Path;

/// Admission, WATCH retries, round trips and Redis CPU per strategy, capacity and P x F.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    summarize(
        &dir.join("atomic.csv"),
        &["strategy", "capacity", "config"],
        &[
            ("admitted", "admitted"),
            ("refused", "refused"),
            ("WATCH retries", "watch_retries"),
            ("aborts", "watch_aborts"),
            ("round trips", "redis_calls"),
            ("Redis CPU µs/decision", "cpu_us_per_decision"),
        ],
    )
}
