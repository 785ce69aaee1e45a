//! race's summary for REPORT.md.

use super::RaceRow;
use crate::analysis::table::{summarize, Key, Stat};
use crate::analysis::AnalysisError;
use std::path::Path;

/// Admitted and the final state per scenario, strategy, P x F and limit.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let keys: [Key<RaceRow>; 4] = [
        ("scenario", |r| r.scenario.clone()),
        ("strategy", |r| r.strategy.to_string()),
        ("config", |r| format!("{}x{}", r.processes, r.in_flight)),
        ("limit", |r| r.limit.to_string()),
    ];
    let stats: [Stat<RaceRow>; 2] = [
        ("admitted", |r| Some(r.admitted as f64)),
        ("final state", |r| r.final_state.trim().parse().ok()),
    ];
    summarize(&dir.join("race.csv"), &keys, &stats)
}
