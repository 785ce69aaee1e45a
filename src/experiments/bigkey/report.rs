//! bigkey's summary for REPORT.md.

use super::{BigkeyRow, BIGKEY};
use crate::analysis::table::{summary_table, Key, Stat};
use crate::analysis::AnalysisError;
use crate::record::csv_text;
use std::path::Path;

/// The stall every client saw per operation, size and lazyfree setting, beside the server's view.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let keys: [Key<BigkeyRow>; 4] = [
        ("operation", |r| csv_text(&r.operation)),
        ("entries", |r| r.entries.to_string()),
        ("lazyfree", |r| csv_text(&r.lazyfree)),
        ("background threads", |r| csv_text(&r.bio)),
    ];
    let stats: [Stat<BigkeyRow>; 8] = [
        ("command ms", |r| r.command_ms),
        ("SLOWLOG ms", |r| r.slowlog_ms),
        ("probe worst stall ms", |r| Some(r.probe_max_stall_ms)),
        ("LATENCY ms (own event)", |r| Some(r.server_blocked_ms)),
        ("background free ms", |r| r.background_free_ms),
        ("probe p50 ms", |r| Some(r.probe_p50_ms)),
        ("probe worst before ms", |r| Some(r.probe_baseline_max_ms)),
        ("key bytes", |r| Some(r.key_bytes as f64)),
    ];
    Ok(summary_table(&BIGKEY.read(dir)?, &keys, &stats))
}
