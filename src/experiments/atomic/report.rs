//! atomic's summary for REPORT.md.

use super::AtomicRow;
use crate::analysis::table::{summarize, Key, Stat};
use crate::analysis::AnalysisError;
use std::path::Path;

/// Admission, WATCH retries, round trips (self-reported), the commands Redis counted and Redis CPU
/// per strategy, capacity and P x F.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let keys: [Key<AtomicRow>; 3] = [
        ("strategy", |r| r.strategy.to_string()),
        ("capacity", |r| r.capacity.to_string()),
        ("config", |r| format!("{}x{}", r.processes, r.in_flight)),
    ];
    let stats: [Stat<AtomicRow>; 7] = [
        ("admitted", |r| Some(r.admitted as f64)),
        ("refused", |r| Some(r.refused as f64)),
        ("WATCH retries", |r| Some(r.watch_retries as f64)),
        ("aborts", |r| Some(r.watch_aborts as f64)),
        ("round trips", |r| Some(r.redis_calls as f64)),
        ("Redis commands/decision", |r| {
            Some(r.server_commands? as f64 / r.checks as f64)
        }),
        ("Redis CPU µs/decision", |r| Some(r.cpu_us_per_decision)),
    ];
    summarize(&dir.join("atomic.csv"), &keys, &stats)
}
