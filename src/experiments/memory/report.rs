//! memory's summary for REPORT.md: the fills, then the cliff's derived figures.

use crate::analysis::table::{read_rows, summarize};
use crate::analysis::AnalysisError;
use std::path::Path;

/// Bytes per client per strategy, setting and limit, then the derived figures.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let path = dir.join("memory.csv");
    let mut out = summarize(
        &path,
        &["strategy", "listpack_entries", "limit"],
        &[
            ("clients", "clients"),
            ("bytes/client", "bytes_per_client"),
            ("bytes/entry", "bytes_per_entry"),
            ("sample key bytes", "sample_key_bytes"),
            ("listpack", "listpack"),
            ("member bytes", "member_len"),
            ("Redis CPU µs/decision", "cpu_us_per_decision"),
        ],
    )?;
    out.push_str(&super::derived::memory(&read_rows(&path)?));
    Ok(out)
}
