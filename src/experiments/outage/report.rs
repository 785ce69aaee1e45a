//! outage's summary for REPORT.md: per run and phase, then the breaker sweep when it was run.

use crate::analysis::table::summarize;
use crate::analysis::AnalysisError;
use std::path::Path;

/// Per run and phase (phases.csv), then the breaker sweep when it was run.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let mut out = summarize(
        &dir.join("phases.csv"),
        &["policy", "breaker", "phase"],
        &[
            ("median ms", "median_ms"),
            ("p99 ms", "p99_ms"),
            ("max ms", "max_ms"),
            ("allowed", "allowed"),
            ("degraded allowed", "degraded_allowed"),
            ("degraded denied", "degraded_denied"),
            ("paid the budget", "paid_budget"),
            ("breaker open", "short_circuited"),
            ("checks to 1st normal", "first_normal_seq"),
            ("ms to 1st normal", "first_normal_ms"),
            ("reconnects", "reconnects"),
            ("script reloads", "script_reloads"),
            ("suspended", "suspended_checks"),
        ],
    )?;
    let sweep = dir.join("breaker_sweep.csv");
    if sweep.is_file() {
        out.push_str("\nBreaker sweep (mean over trials; min-max in brackets):\n\n");
        out.push_str(&summarize(
            &sweep,
            &["breaker", "k", "cooldown_ms"],
            &[
                ("paid the budget", "paid_budget"),
                ("probes", "probes"),
                ("users' wait while hung ms", "hung_cost_ms"),
                ("blind checks", "blind_checks"),
                ("blind ms", "blind_ms"),
                ("suspended", "suspended_checks"),
            ],
        )?);
    }
    Ok(out)
}
