//! memory's summary for REPORT.md: the fills, then the cliff's derived figures.

use super::{MemoryRow, MEMORY};
use crate::analysis::table::{summary_table, Key, Stat};
use crate::analysis::AnalysisError;
use std::path::Path;

/// Bytes per client per strategy, setting and limit, then the derived figures.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
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
    let (sweep, rows): (Vec<MemoryRow>, Vec<MemoryRow>) =
        MEMORY.read(dir)?.into_iter().partition(MemoryRow::is_sweep);
    let mut out = summary_table(&rows, &keys, &stats);
    out.push_str(&super::derived::memory(&rows));
    out.push_str(&sweeps(&sweep));
    Ok(out)
}

/// The member- and key-length sweeps: the same fills with longer or shorter names.
fn sweeps(rows: &[MemoryRow]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let keys: [Key<MemoryRow>; 4] = [
        ("strategy", |r| r.strategy.to_string()),
        ("members made (B)", |r| r.member_bytes.to_string()),
        ("keys made (B)", |r| r.key_len.to_string()),
        ("limit", |r| r.limit.to_string()),
    ];
    let stats: [Stat<MemoryRow>; 7] = [
        ("clients", |r| Some(r.clients as f64)),
        ("bytes/client", |r| Some(r.bytes_per_client)),
        ("bytes/entry", |r| Some(r.bytes_per_entry)),
        ("member bytes", |r| Some(r.member_len)),
        ("key name bytes", |r| Some(r.key_name_bytes as f64)),
        ("listpack", |r| Some(f64::from(r.listpack))),
        ("MB per 10k clients", |r| Some(r.mb_per_10k_clients)),
    ];
    format!(
        "\nThe sizes above with other member and key lengths (the seed gives neither; at the server's \
         default setting; 0 = as ratelab makes them):\n\n{}",
        summary_table(rows, &keys, &stats)
    )
}
