//! window-edge's summary for REPORT.md.

use crate::analysis::table::summarize;
use crate::analysis::AnalysisError;
use std::path::Path;

/// Admitted on either side of the edge and the most in any second, per strategy.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    summarize(
        &dir.join("window-edge.csv"),
        &["strategy", "limit"],
        &[
            ("before edge", "admitted_before_edge"),
            ("after edge", "admitted_after_edge"),
            ("most in 1 s", "max_admitted_in_1s"),
            ("/ limit", "max_per_limit"),
            ("smooth bound", "smooth_bound"),
        ],
    )
}
