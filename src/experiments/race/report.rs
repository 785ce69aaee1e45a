//! race's summary for REPORT.md.

use crate::analysis::table::summarize;
use crate::analysis::AnalysisError;
use std::path::Path;

/// Admitted and the final state per scenario, strategy, P x F and limit.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    summarize(
        &dir.join("race.csv"),
        &["scenario", "strategy", "config", "limit"],
        &[("admitted", "admitted"), ("final state", "final_state")],
    )
}
