//! claims.json: every claim's verdict with its numbers as numbers (the statistic's n, mean, min,
//! max and 95% interval, what the claim accepts, the unit), for a reader who re-judges or plots
//! the verdicts without parsing claims.csv's sentences. Its fields are described once, in
//! [`FIELDS`], which datapackage.json publishes as the file's JSON Schema.

use super::claim::Figures;
use super::Judged;
use serde::Serialize;

/// The file `ratelab report` writes beside claims.csv.
pub const FILE: &str = "claims.json";

/// One claim's entry.
#[derive(Debug, Serialize)]
struct Entry<'a> {
    id: &'a str,
    experiment: &'a str,
    seed: &'a str,
    statistic: Option<&'a str>,
    unit: Option<&'a str>,
    n: Option<usize>,
    mean: Option<f64>,
    min: Option<f64>,
    max: Option<f64>,
    ci_low: Option<f64>,
    ci_high: Option<f64>,
    published_low: Option<f64>,
    published_high: Option<f64>,
    published_column: Option<&'a str>,
    verdict: &'static str,
    reason_kind: Option<&'static str>,
}

/// Each field's name, JSON type(s) and meaning: the schema datapackage.json gives claims.json.
pub const FIELDS: [(&str, &str, &str); 16] = [
    ("id", "string", "The claim's id in analysis/claims.toml, or limiter.<name>.<experiment>.<what> for \
      a claim generated for a custom limiter from what its algorithm and manifest imply."),
    ("experiment", "string", "The experiment whose CSVs judge it."),
    ("seed", "string", "The write-up the published figure comes from; `limiter` for a custom limiter's claim."),
    ("statistic", "string|null", "What the values are: the column judged, and how it was \
      combined (ratio or difference to a reference, share of a per-row figure, percent of a column)."),
    ("unit", "string|null", "The values' unit, from the column's name; null for ratios, shares and counts."),
    ("n", "integer|null", "How many values were judged (runs, rows or pairs)."),
    ("mean", "number|null", "The values' mean."),
    ("min", "number|null", "The smallest value."),
    ("max", "number|null", "The largest value."),
    ("ci_low", "number|null", "The mean's 95% confidence interval (Student's t), low end; null for one value."),
    ("ci_high", "number|null", "The mean's 95% confidence interval, high end."),
    ("published_low", "number|null", "The lowest value the claim accepts (the published figure \
      with its tolerance; for a claim about every row with its own figure, the lowest of them); \
      null when unbounded below."),
    ("published_high", "number|null", "The highest value the claim accepts (or the highest of the \
      rows' own figures); null when unbounded above."),
    ("published_column", "string|null", "The column that gives each row its own published figure, if any."),
    ("verdict", "string", "holds, DIFFERS, inconclusive, machine-dependent, no data, or not run."),
    ("reason_kind", "string|null", "How the reason of a claim outside what it accepts knows what it \
      says: tested, refuted, unconfirmed, observed or hypothesis; null when it owes none."),
];

/// The JSON text of claims.json for `judged`, one entry per claim in the report's order.
pub(super) fn render(judged: &[Judged]) -> String {
    let entries: Vec<Entry> = judged.iter().map(entry).collect();
    let mut text = serde_json::to_string_pretty(&entries).unwrap_or_else(|_| "[]".into());
    text.push('\n');
    text
}

fn entry<'a>(j: &'a Judged) -> Entry<'a> {
    let f: Option<&Figures> = j.figures.as_deref();
    let num = |pick: fn(&Figures) -> Option<f64>| f.and_then(pick).map(without_noise);
    Entry {
        id: &j.claim.id,
        experiment: &j.claim.experiment,
        seed: &j.claim.seed,
        statistic: f.map(|f| f.statistic.as_str()),
        unit: f.and_then(|f| f.unit.as_deref()),
        n: f.map(|f| f.n),
        mean: num(|f| Some(f.mean)),
        min: num(|f| Some(f.min)),
        max: num(|f| Some(f.max)),
        ci_low: num(|f| f.ci.map(|c| c.0)),
        ci_high: num(|f| f.ci.map(|c| c.1)),
        published_low: num(|f| f.accepted.0),
        published_high: num(|f| f.accepted.1),
        published_column: j.claim.published_column.as_deref(),
        verdict: j.call.map_or("not run", super::claims::Call::label),
        reason_kind: j.kind.map(super::reasons::Kind::name),
    }
}

/// `x` rounded to the digits ratelab's CSVs keep: arithmetic noise is not precision.
fn without_noise(x: f64) -> f64 {
    let digits = crate::record::SIGNIFICANT - 1;
    format!("{x:.digits$e}").parse().unwrap_or(x)
}
