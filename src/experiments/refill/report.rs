//! refill's summary for REPORT.md: per configuration, what the hammering client was allowed beside
//! what the bucket's rate allows.

use super::{RefillRow, TRIALS};
use crate::analysis::table::{summary_table, Key, Stat};
use crate::analysis::AnalysisError;
use std::path::Path;

/// One row per configuration (drill, script, clock, skew, expiry), trials summarised.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let keys: [Key<RefillRow>; 5] = [
        ("drill", |r| r.drill.clone()),
        ("script", |r| r.script.clone()),
        ("clock", |r| r.clock.clone()),
        ("skew ms", |r| r.skew_ms.to_string()),
        ("expiry ms", |r| r.ttl_ms.to_string()),
    ];
    let stats: [Stat<RefillRow>; 5] = [
        ("calls", |r| Some(r.calls as f64)),
        ("admitted", |r| Some(r.admitted as f64)),
        ("rate allows", |r| Some(r.limit_admits as f64)),
        ("admitted / allowed", |r| {
            Some(r.admitted as f64 / r.limit_admits as f64)
        }),
        ("found full", |r| Some(r.found_full as f64)),
    ];
    Ok(summary_table(&TRIALS.read(dir)?, &keys, &stats))
}
