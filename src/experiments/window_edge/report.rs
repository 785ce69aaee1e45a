//! window-edge's summary for REPORT.md.

use super::WindowEdgeRow;
use crate::analysis::table::{summarize, Key, Stat};
use crate::analysis::AnalysisError;
use std::path::Path;

/// Admitted on either side of the edge and the most in any second, per strategy.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let keys: [Key<WindowEdgeRow>; 2] = [
        ("strategy", |r| r.strategy.to_string()),
        ("limit", |r| r.limit.to_string()),
    ];
    let stats: [Stat<WindowEdgeRow>; 5] = [
        ("before edge", |r| Some(r.admitted_before_edge as f64)),
        ("after edge", |r| Some(r.admitted_after_edge as f64)),
        ("most in 1 s", |r| Some(r.max_admitted_in_1s as f64)),
        ("/ limit", |r| Some(r.max_per_limit)),
        ("smooth bound", |r| Some(r.smooth_bound)),
    ];
    summarize(&dir.join("window-edge.csv"), &keys, &stats)
}
