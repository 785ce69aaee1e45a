//! tsmember's summary for REPORT.md.

use super::TsmemberRow;
use crate::analysis::table::{summarize, Key, Stat};
use crate::analysis::AnalysisError;
use crate::record::csv_text;
use std::path::Path;

/// Admitted against the limit per member, clock, rate and requests per arrival.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let keys: [Key<TsmemberRow>; 5] = [
        ("member", |r| csv_text(&r.member)),
        ("clock", |r| csv_text(&r.clock)),
        ("rate", |r| r.rate.clone()),
        ("per arrival", |r| r.batch.to_string()),
        ("limit", |r| r.limit.to_string()),
    ];
    let stats: [Stat<TsmemberRow>; 5] = [
        ("offered", |r| Some(r.offered as f64)),
        ("admitted", |r| Some(r.admitted as f64)),
        ("admitted / limit", |r| Some(r.admitted_per_limit)),
        ("log entries", |r| Some(r.log_entries as f64)),
        ("latest start µs", |r| Some(r.max_late_us)),
    ];
    summarize(&dir.join("tsmember.csv"), &keys, &stats)
}
