//! replication's summary for REPORT.md: how many buckets match and by what margin, then what
//! each side executed.

use super::{BucketRow, StreamRow, BUCKETS, STREAM};
use crate::analysis::table::{summary_table, Key, Stat};
use crate::analysis::AnalysisError;
use std::path::Path;

/// The bucket comparison grouped by strategy and `match`, then one row per command of the stream.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let keys: [Key<BucketRow>; 2] = [
        ("strategy", |r| r.strategy.to_string()),
        ("match", |r| r.matched.to_string()),
    ];
    let stats: [Stat<BucketRow>; 6] = [
        ("fields equal", |r| Some(f64::from(r.fields_equal))),
        ("primary PTTL ms", |r| Some(r.primary_pttl_ms as f64)),
        ("PTTL diff ms", |r| Some(r.pttl_diff_ms as f64)),
        ("read gap ms", |r| Some(r.read_gap_ms)),
        ("catch-up ms", |r| Some(r.catch_up_ms)),
        ("tokens", |r| r.primary_tokens.as_deref()?.parse().ok()),
    ];
    let command: [Key<StreamRow>; 1] = [("command", |r| r.command.clone())];
    let calls: [Stat<StreamRow>; 3] = [
        ("calls on primary", |r| Some(r.calls_on_primary as f64)),
        ("calls on replica", |r| Some(r.calls_on_replica as f64)),
        ("MONITOR on replica", |r| Some(r.monitor_on_replica as f64)),
    ];
    let mut out = summary_table(&BUCKETS.read(dir)?, &keys, &stats);
    out.push_str("\nWhat each side executed (INFO commandstats over the run):\n\n");
    out.push_str(&summary_table(&STREAM.read(dir)?, &command, &calls));
    Ok(out)
}
