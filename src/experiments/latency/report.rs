//! latency's summary for REPORT.md.

use super::{LatencyRow, LATENCY};
use crate::analysis::stats::Summary;
use crate::analysis::table::{short, summary_table, Key, Stat};
use crate::analysis::AnalysisError;
use crate::experiments::limiters::{self, Verdict};
use crate::limiter::Strategy;
use std::path::Path;

/// Percentiles per strategy.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let keys: [Key<LatencyRow>; 1] = [("strategy", |r| r.strategy.to_string())];
    let stats: [Stat<LatencyRow>; 5] = [
        ("p50 µs", |r| Some(r.p50_us)),
        ("p90 µs", |r| Some(r.p90_us)),
        ("p99 µs", |r| Some(r.p99_us)),
        ("p99.9 µs", |r| Some(r.p999_us)),
        ("max µs", |r| Some(r.max_us)),
    ];
    Ok(summary_table(&LATENCY.read(dir)?, &keys, &stats))
}

/// The median latency of one check of each custom limiter against its reference strategy's; a
/// limiter process's beside the do-nothing adapter's, when it ran too: what the boundary costs.
pub fn verdicts(dir: &Path) -> Result<Vec<Verdict>, AnalysisError> {
    let rows = LATENCY.read(dir)?;
    let recorded = limiters::recorded(dir)?;
    let of = |s| limiters::mean_of(&rows, |r| r.strategy == s, |r| r.p50_us);
    let boundary = recorded
        .iter()
        .find(|l| l.is_boundary())
        .and_then(|l| of(l.strategy));
    let mut out = Vec::new();
    for l in &recorded {
        let mut value =
            limiters::against_reference(of(l.strategy), of(l.reference), l.reference, "µs");
        if let Some(noop) = boundary.filter(|_| l.is_process() && !l.is_boundary()) {
            value.push_str(&format!(
                "; the process boundary alone (noop): {noop:.2} µs"
            ));
        }
        out.push(Verdict {
            limiter: l.strategy.to_string(),
            aspect: "latency p50 vs reference",
            value,
        });
    }
    Ok(out)
}

/// The machine's loopback round trip: the mean over runs of a plain GET's median, which REPORT.md
/// sets beside the machine-dependent figures.
pub fn loopback_get(dir: &Path) -> Option<String> {
    let rows = LATENCY.read(dir).ok()?;
    let get: Vec<f64> = (rows.iter())
        .filter(|r| r.strategy == Strategy::Get)
        .map(|r| r.p50_us)
        .collect();
    Summary::of(&get).map(|s| format!("loopback GET p50 {} µs", short(s.mean)))
}
