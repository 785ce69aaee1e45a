//! cost's summary for REPORT.md.

use super::CostRow;
use super::COST;
use crate::analysis::table::summary_table;
use crate::analysis::table::{Key, Stat};
use crate::analysis::AnalysisError;
use crate::experiments::limiters::{self, Verdict};
use std::path::Path;

/// Throughput, Redis CPU and script time per strategy and variant.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let keys: [Key<CostRow>; 2] = [
        ("strategy", |r| r.strategy.to_string()),
        ("variant", |r| r.variant.clone()),
    ];
    let stats: [Stat<CostRow>; 7] = [
        ("decisions/s", |r| Some(r.decisions_per_s)),
        ("Redis CPU µs/decision", |r| Some(r.cpu_us_per_decision)),
        ("busy %", |r| Some(r.redis_busy_pct)),
        ("µs per call", |r| Some(r.usec_per_call)),
        ("allowed", |r| Some(r.allowed as f64)),
        ("denied", |r| Some(r.denied as f64)),
        ("log entries/key", |r| r.log_entries_per_key),
    ];
    Ok(summary_table(&COST.read(dir)?, &keys, &stats))
}

/// Redis CPU per decision of each custom limiter against its reference strategy's, both over the
/// same uniform keys and limit.
pub fn verdicts(dir: &Path) -> Result<Vec<Verdict>, AnalysisError> {
    let rows: Vec<CostRow> = COST.read(dir)?;
    let mut out = Vec::new();
    for l in limiters::recorded(dir)? {
        let uniform = |r: &CostRow| r.variant.is_empty() || r.variant == "reference";
        let of = |s| {
            limiters::mean_of(
                &rows,
                |r| r.strategy == s && uniform(r),
                |r| r.cpu_us_per_decision,
            )
        };
        out.push(Verdict {
            limiter: l.strategy.to_string(),
            aspect: "Redis CPU / decision vs reference",
            value: limiters::against_reference(of(l.strategy), of(l.reference), l.reference, "µs"),
        });
    }
    Ok(out)
}
