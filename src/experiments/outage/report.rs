//! outage's summary for REPORT.md: per run and phase, then the breaker sweep when it was run.

use super::{PhaseRow, SweepRow, PHASES, SWEEP};
use crate::analysis::table::{summary_table, Key, Stat};
use crate::analysis::AnalysisError;
use crate::record::csv_text;
use std::path::Path;

/// Per run and phase (phases.csv), then the breaker sweep when it was run.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let keys: [Key<PhaseRow>; 4] = [
        ("policy", |r| csv_text(&r.policy)),
        ("breaker", |r| r.breaker.clone()),
        ("reconnect", |r| csv_text(&r.reconnect)),
        ("phase", |r| r.phase.to_string()),
    ];
    let stats: [Stat<PhaseRow>; 13] = [
        ("median ms", |r| Some(r.median_ms)),
        ("p99 ms", |r| Some(r.p99_ms)),
        ("max ms", |r| Some(r.max_ms)),
        ("allowed", |r| Some(r.allowed as f64)),
        ("degraded allowed", |r| Some(r.degraded_allowed as f64)),
        ("degraded denied", |r| Some(r.degraded_denied as f64)),
        ("paid the budget", |r| Some(r.paid_budget as f64)),
        ("breaker open", |r| Some(r.short_circuited as f64)),
        ("checks to 1st normal", |r| {
            r.first_normal_seq.map(|n| n as f64)
        }),
        ("ms to 1st normal", |r| r.first_normal_ms),
        ("reconnects", |r| Some(r.reconnects as f64)),
        ("script reloads", |r| Some(r.script_reloads as f64)),
        ("suspended", |r| Some(r.suspended_checks as f64)),
    ];
    let mut out = summary_table(&PHASES.read(dir)?, &keys, &stats);
    if SWEEP.path(dir).is_file() {
        out.push_str("\nBreaker sweep (mean over trials; min-max in brackets):\n\n");
        let keys: [Key<SweepRow>; 3] = [
            ("breaker", |r| r.breaker.clone()),
            ("k", |r| r.k.to_string()),
            ("cooldown_ms", |r| r.cooldown_ms.to_string()),
        ];
        let stats: [Stat<SweepRow>; 6] = [
            ("paid the budget", |r| Some(r.paid_budget as f64)),
            ("probes", |r| Some(r.probes as f64)),
            ("users' wait while hung ms", |r| Some(r.hung_cost_ms)),
            ("blind checks", |r| Some(r.blind_checks as f64)),
            ("blind ms", |r| r.blind_ms),
            ("suspended", |r| Some(r.suspended_checks as f64)),
        ];
        out.push_str(&summary_table(&SWEEP.read(dir)?, &keys, &stats));
    }
    Ok(out)
}
