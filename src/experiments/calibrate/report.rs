//! calibrate's summary for REPORT.md.

use super::CalibrateRow;
use crate::analysis::table::{summarize, Key, Stat};
use crate::analysis::AnalysisError;
use std::path::Path;

/// Both tools side by side per command.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let keys: [Key<CalibrateRow>; 3] = [
        ("command", |r| r.command.clone()),
        ("depth", |r| r.depth.to_string()),
        ("tool", |r| r.tool.clone()),
    ];
    let stats: [Stat<CalibrateRow>; 5] = [
        ("ops/s", |r| Some(r.ops_per_s)),
        ("client CPU µs/op", |r| Some(r.client_cpu_us_per_op)),
        ("duration s", |r| Some(r.duration_s)),
        ("Redis CPU µs/op", |r| Some(r.redis_cpu_us_per_op)),
        ("Redis busy %", |r| Some(r.redis_busy_pct)),
    ];
    summarize(&dir.join("calibrate.csv"), &keys, &stats)
}
