//! Custom limiters (`--limiter`) across experiments: the `limiters.csv` every experiment that ran
//! one writes (what each was, so charts and the report need no manifest), and the verdict table
//! REPORT.md shows per custom limiter, from each experiment's own statistics.

use crate::analysis::table::read_typed;
use crate::analysis::AnalysisError;
use crate::limiter::custom::Algorithm;
use crate::limiter::Strategy;
use serde::{Deserialize, Serialize};
use std::fmt::Write;
use std::path::Path;

/// The file, in each experiment's directory.
pub const LIMITERS_CSV: &str = "limiters.csv";

/// One custom limiter of the run, as its manifest described it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LimiterRow {
    /// The manifest's name: the strategy column of the experiment's other CSVs.
    pub strategy: Strategy,
    pub algorithm: Algorithm,
    /// The built-in strategy of the same algorithm, which it is measured against.
    pub reference: Strategy,
    /// The manifest's path and the script it names, as given.
    pub manifest: String,
    pub script: String,
    /// How it is invoked: `evalsha-eval` or `fcall-load`.
    pub invocation: String,
    /// Whether its manifest hands it the caller's clock.
    pub caller_clock: bool,
    /// The check before the run: calls one at a time on a fresh key with `{limit}` = probe_limit.
    pub probe_calls: u64,
    pub probe_admitted: u64,
    pub probe_limit: u64,
}

/// The custom limiters recorded in an experiment's directory (none if it ran none).
pub fn recorded(dir: &Path) -> Result<Vec<LimiterRow>, AnalysisError> {
    let path = dir.join(LIMITERS_CSV);
    match path.is_file() {
        true => read_typed(&path),
        false => Ok(Vec::new()),
    }
}

/// One cell of the verdict table: what one experiment says about one custom limiter.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub limiter: String,
    /// The column: what was asked, in a few words.
    pub aspect: &'static str,
    pub value: String,
}

/// An experiment's verdicts from its results directory.
pub type Verdicts = fn(&Path) -> Result<Vec<Verdict>, AnalysisError>;

/// No verdicts: the default of experiments that take no custom limiters.
pub fn none(_: &Path) -> Result<Vec<Verdict>, AnalysisError> {
    Ok(Vec::new())
}

/// The most an exact limiter of `algorithm` can admit over `span_ms` from a fresh key: a window
/// per window (a fixed one may straddle one more boundary), a bucket its capacity and what
/// refills meanwhile.
pub fn most_admitted(
    algorithm: Algorithm,
    limit: u64,
    window_ms: u64,
    refill_per_s: f64,
    span_ms: f64,
) -> f64 {
    let limit_f = limit as f64;
    let windows = (span_ms / window_ms.max(1) as f64).floor();
    match algorithm {
        Algorithm::TokenBucket => limit_f + refill_per_s * span_ms / 1000.0,
        Algorithm::Gcra => limit_f + limit_f * span_ms / window_ms.max(1) as f64,
        Algorithm::FixedWindow => limit_f * (windows + 2.0),
        Algorithm::SlidingLog | Algorithm::SlidingWindow => limit_f * (windows + 1.0),
    }
}

/// `x` as a ratio with a word: within one request of the bound reads `exact`.
pub fn ratio(admitted: f64, bound: f64, word_over: &str) -> String {
    let r = admitted / bound.max(1.0);
    match admitted <= bound + 1.0 {
        true => format!("{r:.2} (within the limit)"),
        false => format!("{r:.2} ({word_over})"),
    }
}

/// The verdict table, one row per custom limiter, one column per aspect in first-seen order;
/// empty when no experiment ran a custom limiter.
pub fn table(verdicts: &[Verdict]) -> String {
    if verdicts.is_empty() {
        return String::new();
    }
    let mut limiters: Vec<&str> = Vec::new();
    let mut aspects: Vec<&str> = Vec::new();
    for v in verdicts {
        if !limiters.contains(&v.limiter.as_str()) {
            limiters.push(&v.limiter);
        }
        if !aspects.contains(&v.aspect) {
            aspects.push(v.aspect);
        }
    }
    let mut out = String::from(
        "\n## Custom limiters\n\nEach `--limiter` beside the built-in strategies, from this run's CSVs \
         (the experiments' sections show the runs). Ratios are admitted over what an exact limiter \
         could admit.\n\n| limiter |",
    );
    for a in &aspects {
        let _ = write!(out, " {a} |");
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(aspects.len()));
    out.push('\n');
    for l in &limiters {
        let _ = write!(out, "| {l} |");
        for a in &aspects {
            let cell = (verdicts.iter())
                .find(|v| v.limiter == *l && v.aspect == *a)
                .map_or("not run", |v| v.value.as_str());
            let _ = write!(out, " {cell} |");
        }
        out.push('\n');
    }
    out
}

/// The mean of `value` over the rows of `strategy` that `keep` selects, if there are any.
pub fn mean_of<R>(rows: &[R], keep: impl Fn(&R) -> bool, value: impl Fn(&R) -> f64) -> Option<f64> {
    let picked: Vec<f64> = rows.iter().filter(|r| keep(r)).map(value).collect();
    (!picked.is_empty()).then(|| picked.iter().sum::<f64>() / picked.len() as f64)
}

/// The row with the largest `value` among those `keep` selects.
pub fn max_by<R>(rows: &[R], keep: impl Fn(&R) -> bool, value: impl Fn(&R) -> f64) -> Option<&R> {
    (rows.iter().filter(|r| keep(r))).max_by(|a, b| value(a).total_cmp(&value(b)))
}

/// "x1.23 of lua-bucket (4.10 vs 3.33 µs)": a custom limiter's mean against its reference's.
pub fn against_reference(
    custom: Option<f64>,
    reference: Option<f64>,
    name: Strategy,
    unit: &str,
) -> String {
    match (custom, reference) {
        (Some(c), Some(r)) if r > 0.0 => {
            format!("x{:.2} of {name} ({c:.2} vs {r:.2} {unit})", c / r)
        }
        (Some(c), _) => format!("{c:.2} {unit} ({name} not measured)"),
        _ => "no runs".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_pivots_limiters_against_aspects() {
        let v = |limiter: &str, aspect, value: &str| Verdict {
            limiter: limiter.into(),
            aspect,
            value: value.into(),
        };
        let text = table(&[
            v("a", "race", "1.00"),
            v("b", "race", "10.0"),
            v("a", "edge", "2.0"),
        ]);
        assert!(text.contains("| limiter | race | edge |"), "{text}");
        assert!(text.contains("| a | 1.00 | 2.0 |"), "{text}");
        assert!(text.contains("| b | 10.0 | not run |"), "{text}");
        assert_eq!(table(&[]), "");
    }

    #[test]
    fn exact_limiters_admit_at_most_their_algorithm_allows() {
        assert_eq!(
            most_admitted(Algorithm::SlidingLog, 50, 10_000, 0.0, 1000.0),
            50.0
        );
        assert_eq!(
            most_admitted(Algorithm::FixedWindow, 50, 10_000, 0.0, 1000.0),
            100.0
        );
        assert_eq!(
            most_admitted(Algorithm::Gcra, 50, 10_000, 0.0, 1000.0),
            55.0
        );
        assert_eq!(
            most_admitted(Algorithm::TokenBucket, 100, 1000, 100.0, 500.0),
            150.0
        );
        assert!(ratio(51.0, 50.0, "over").contains("within"));
        assert!(ratio(60.0, 50.0, "over").contains("1.20 (over)"));
    }
}
