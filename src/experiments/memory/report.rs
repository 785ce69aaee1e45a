//! memory's summary for REPORT.md: the fills, then the cliff's derived figures.

use super::MemoryRow;
use crate::analysis::table::{read_typed, summary_table, Key, Stat};
use crate::analysis::AnalysisError;
use std::path::Path;

/// Bytes per client per strategy, setting and limit, then the derived figures.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let path = dir.join("memory.csv");
    let keys: [Key<MemoryRow>; 3] = [
        ("strategy", |r| r.strategy.to_string()),
        ("listpack_entries", |r| r.listpack_entries.to_string()),
        ("limit", |r| r.limit.to_string()),
    ];
    let stats: [Stat<MemoryRow>; 7] = [
        ("clients", |r| Some(r.clients as f64)),
        ("bytes/client", |r| Some(r.bytes_per_client)),
        ("bytes/entry", |r| Some(r.bytes_per_entry)),
        ("sample key bytes", |r| Some(r.sample_key_bytes as f64)),
        ("listpack", |r| Some(f64::from(r.listpack))),
        ("member bytes", |r| Some(r.member_len)),
        ("Redis CPU µs/decision", |r| Some(r.cpu_us_per_decision)),
    ];
    let rows = read_typed::<MemoryRow>(&path)?;
    let mut out = summary_table(&rows, &keys, &stats);
    out.push_str(&super::derived::memory(&rows));
    Ok(out)
}
