//! window-edge's summary for REPORT.md.

use super::WindowEdgeRow;
use super::WINDOW_EDGE;
use crate::analysis::claims::{Judge, LimiterClaim, Select};
use crate::analysis::table::summary_table;
use crate::analysis::table::{Key, Stat};
use crate::analysis::AnalysisError;
use crate::experiments::limiters::{self, ClaimsAt, RowClaim, Verdict};
use crate::limiter::custom::Algorithm;
use std::path::Path;

/// Admitted on either side of the edge and the most in any second, per strategy.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let keys: [Key<WindowEdgeRow>; 2] = [
        ("strategy", |r| r.strategy.to_string()),
        ("limit", |r| r.limit.to_string()),
    ];
    let stats: [Stat<WindowEdgeRow>; 5] = [
        ("before edge", |r| Some(r.admitted_before_edge as f64)),
        ("after edge", |r| Some(r.admitted_after_edge as f64)),
        ("most in 1 s", |r| Some(r.max_admitted_in_1s as f64)),
        ("/ limit", |r| Some(r.max_per_limit)),
        ("smooth bound", |r| Some(r.smooth_bound)),
    ];
    Ok(summary_table(&WINDOW_EDGE.read(dir)?, &keys, &stats))
}

/// The most each custom limiter admitted inside any 1-second span across the edge, over the
/// limit, in words that fit its algorithm: a bucket or GCRA is bounded by refill or not; a window
/// either shows a burst at the edge or none. The cell names the edge measured: the clock's
/// (epoch-aligned windows) or one window after a key's first request (`anchor = "first-hit"`).
pub fn verdicts(dir: &Path) -> Result<Vec<Verdict>, AnalysisError> {
    let rows: Vec<WindowEdgeRow> = WINDOW_EDGE.read(dir)?;
    let mut out = Vec::new();
    for l in limiters::recorded(dir)? {
        let mine = |r: &WindowEdgeRow| r.strategy == l.strategy;
        let Some(worst) = limiters::max_by(&rows, mine, |r| r.max_per_limit) else {
            continue;
        };
        let within = worst.max_admitted_in_1s as f64 <= worst.smooth_bound;
        let refills = matches!(l.algorithm, Algorithm::TokenBucket | Algorithm::Gcra);
        let word = match (within, refills) {
            (true, true) => "bounded by refill",
            (false, true) => "burst beyond refill",
            (true, false) => "no burst at this edge",
            (false, false) => "burst at the edge",
        };
        let edge = match l.anchor.as_str() {
            "first-hit" => ", edge: first hit + window",
            "" => "",
            _ => ", edge: epoch-aligned",
        };
        out.push(Verdict {
            limiter: l.strategy.to_string(),
            aspect: "window edge: most in 1 s / limit",
            value: format!(
                "{:.2} ({word}, refill bound {:.2}{edge})",
                worst.max_per_limit,
                worst.smooth_bound / worst.limit as f64
            ),
        });
    }
    Ok(out)
}

/// At its own edge, each custom limiter admits in any 1 s no more than an exact limiter of its
/// algorithm: a bucket or GCRA its burst and what refills meanwhile (`smooth_bound`), a log its
/// limit, a fixed window a limit per window it touches (two). A sliding-window counter estimates
/// and has no exact bound: it is not judged.
pub fn limiter_claims(at: &ClaimsAt) -> Result<Vec<LimiterClaim>, AnalysisError> {
    let of = at.of(WINDOW_EDGE.name(), "strategy")?;
    let name = at.limiter.strategy.to_string();
    let limits: std::collections::BTreeSet<u64> = (of.rows.iter())
        .filter(|r| r.get("strategy") == Some(&name))
        .filter_map(|r| r.get("limit")?.parse().ok())
        .collect();
    let mut out = Vec::new();
    for &limit in &limits {
        let limit_f = limit as f64;
        let (published, column, bound) = match at.limiter.algorithm {
            Algorithm::TokenBucket | Algorithm::Gcra => (
                0.0,
                Some("smooth_bound"),
                "its burst and what refills meanwhile",
            ),
            Algorithm::SlidingLog => (limit_f, None, "its limit"),
            Algorithm::FixedWindow => (2.0 * limit_f, None, "its limit in each of two windows"),
            Algorithm::SlidingWindow => continue,
        };
        let what = match limits.len() {
            1 => "edge-bounded".to_string(),
            _ => format!("edge-bounded-limit-{limit}"),
        };
        let claim = RowClaim {
            what: &what,
            aspect: "window edge: bounded",
            text: format!(
                "at its own window edge, no more than an exact {} admits in any 1 s: {bound}",
                at.limiter.algorithm.name()
            ),
            select: Select::from([("limit".to_string(), limit.to_string())]),
            statistic: "max_admitted_in_1s",
            judge: Judge::AllAtMost,
            published,
            published_column: column,
            why: "its most admitted in one second (max_admitted_in_1s) passed what its algorithm allows: \
                  a check that should have waited for a refill or the next window was admitted",
        };
        out.extend(of.of_every_row(claim));
    }
    Ok(out)
}
