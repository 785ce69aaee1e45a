//! bigkey's summary for REPORT.md.

use crate::analysis::table::summarize;
use crate::analysis::AnalysisError;
use std::path::Path;

/// The stall every client saw per operation, size and lazyfree setting, beside the server's view.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    summarize(
        &dir.join("bigkey.csv"),
        &["operation", "entries", "lazyfree"],
        &[
            ("command ms", "command_ms"),
            ("SLOWLOG ms", "slowlog_ms"),
            ("probe worst stall ms", "probe_max_stall_ms"),
            ("LATENCY ms (own event)", "server_blocked_ms"),
            ("background free ms", "background_free_ms"),
            ("probe p50 ms", "probe_p50_ms"),
            ("probe worst before ms", "probe_baseline_max_ms"),
            ("key bytes", "key_bytes"),
        ],
    )
}
