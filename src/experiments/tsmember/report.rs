//! tsmember's summary for REPORT.md.

use crate::analysis::table::summarize;
use crate::analysis::AnalysisError;
use std::path::Path;

/// Admitted against the limit per member, clock and rate.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    summarize(
        &dir.join("tsmember.csv"),
        &["member", "clock", "rate", "limit"],
        &[
            ("offered", "offered"),
            ("admitted", "admitted"),
            ("admitted / limit", "admitted_per_limit"),
            ("log entries", "log_entries"),
            ("latest start µs", "max_late_us"),
        ],
    )
}
