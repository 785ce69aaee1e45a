//! Published claims (analysis/claims.toml, embedded) judged against this run's CSVs.

use super::stats::Summary;
use super::table::{matches, number, read_rows, short, Row};
use super::AnalysisError;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

const CLAIMS: &str = include_str!("../../analysis/claims.toml");

/// One published figure and how to judge it.
#[derive(Debug, Clone, Deserialize)]
pub struct Claim {
    pub id: String,
    pub experiment: String,
    pub seed: String,
    pub text: String,
    pub file: String,
    pub statistic: String,
    #[serde(default)]
    pub select: BTreeMap<String, String>,
    pub published: f64,
    #[serde(default)]
    pub published_column: Option<String>,
    /// Multiplies what each row should be by this column of the row (e.g. `in_flight`: one
    /// process admits limit x in-flight), so the claim follows the run's parameters.
    #[serde(default)]
    pub times_column: Option<String>,
    #[serde(default)]
    pub tolerance: f64,
    /// Per row, the statistic as a percentage of this column (e.g. refused of checks).
    #[serde(default)]
    pub percent_of: Option<String>,
    /// Judge mean(select) / mean(denominator) instead of mean(select).
    #[serde(default)]
    pub denominator: Option<BTreeMap<String, String>>,
    /// For `range`: the published interval, inclusive.
    #[serde(default)]
    pub range: Option<[f64; 2]>,
    pub judge: Judge,
}

/// How a claim is judged.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Judge {
    /// Every selected row equals `published` (or its `published_column`).
    AllEqual,
    /// The mean (or ratio) is within `tolerance` (relative) of `published`.
    MeanWithin,
    /// Every selected row is at least `published` (or its `published_column`).
    AllAtLeast,
    /// Every selected row is strictly above `published` (or its `published_column`): "never
    /// empties" is a bucket with tokens left in every trial.
    AllAbove,
    /// Every selected row is at most `published` (or its `published_column`): "no run ever
    /// exceeded", which a mean cannot judge.
    AllAtMost,
    /// The mean (or ratio) lies inside `range`.
    Range,
    /// Seed 000's MONITOR order.
    TraceOrder,
}

#[derive(Deserialize)]
struct ClaimsFile {
    claim: Vec<Claim>,
}

/// Every claim in the embedded claims file.
pub fn all() -> Result<Vec<Claim>, AnalysisError> {
    let file: ClaimsFile =
        toml::from_str(CLAIMS).map_err(|e| AnalysisError::Claims(e.to_string()))?;
    Ok(file.claim)
}

/// The verdict on one claim.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// What this run measured, in words.
    pub measured: String,
    /// Some(true) holds, Some(false) differs, None no data.
    pub holds: Option<bool>,
}

/// Judges a claim against the experiment directory's CSV.
pub fn judge(claim: &Claim, experiment_dir: &Path) -> Verdict {
    let path = experiment_dir.join(&claim.file);
    let rows = match read_rows(&path) {
        Ok(rows) => rows,
        Err(e) => {
            return Verdict {
                measured: format!("no data ({e})"),
                holds: None,
            }
        }
    };
    let selected: Vec<&Row> = rows.iter().filter(|r| matches(r, &claim.select)).collect();
    match claim.judge {
        Judge::TraceOrder => trace_order(&selected),
        _ => judge_numbers(claim, &selected, &rows),
    }
}

/// The numeric judges: each row's statistic against `published` (or its `published_column`), or
/// the mean (or a ratio of means) against a tolerance or a range.
fn judge_numbers(claim: &Claim, selected: &[&Row], all_rows: &[Row]) -> Verdict {
    let judged = row_values(claim, selected);
    let pairs: Vec<(f64, f64)> = judged.iter().flatten().copied().collect();
    let missing = judged.len() - pairs.len();
    if missing > 0 {
        // A row without the statistic is a measurement that did not happen: it fails the claim
        // instead of vanishing from it.
        return Verdict {
            measured: format!(
                "{missing} of {} rows have no {}",
                judged.len(),
                claim.statistic
            ),
            holds: Some(false),
        };
    }
    let values: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let Some(s) = Summary::of(&values) else {
        return Verdict {
            measured: "no matching rows".into(),
            holds: None,
        };
    };
    let mut measured = format!(
        "mean {}, min {}, max {} (n = {})",
        short(s.mean),
        short(s.min),
        short(s.max),
        s.n
    );
    let mut value = s.mean;
    if let Some(den_select) = &claim.denominator {
        let den: Vec<&Row> = all_rows.iter().filter(|r| matches(r, den_select)).collect();
        let den_values: Vec<f64> = row_values(claim, &den)
            .iter()
            .flatten()
            .map(|p| p.0)
            .collect();
        match Summary::of(&den_values).filter(|d| d.mean != 0.0) {
            Some(d) => {
                value = s.mean / d.mean;
                measured = format!(
                    "ratio {} ({} / {}; n = {} / {})",
                    short(value),
                    short(s.mean),
                    short(d.mean),
                    s.n,
                    d.n
                );
            }
            None => {
                return Verdict {
                    measured: "no rows for the denominator".into(),
                    holds: None,
                }
            }
        }
    }
    let holds = match claim.judge {
        Judge::AllEqual => pairs.iter().all(|(v, w)| v == w),
        Judge::AllAtLeast => pairs.iter().all(|(v, w)| v >= w),
        Judge::AllAbove => pairs.iter().all(|(v, w)| v > w),
        Judge::AllAtMost => pairs.iter().all(|(v, w)| v <= w),
        Judge::MeanWithin => {
            (value - claim.published).abs() <= claim.tolerance * claim.published.abs()
        }
        Judge::Range => claim
            .range
            .is_some_and(|[lo, hi]| lo <= value && value <= hi),
        Judge::TraceOrder => return trace_order(selected),
    };
    Verdict {
        measured,
        holds: Some(holds),
    }
}

/// (value, what it should be) per row, or None for a row without them: the statistic, as a
/// percentage when `percent_of` is set.
fn row_values(claim: &Claim, rows: &[&Row]) -> Vec<Option<(f64, f64)>> {
    let one = |r: &Row| {
        let mut value = number(r, &claim.statistic)?;
        if let Some(of) = &claim.percent_of {
            let base = number(r, of).filter(|b| *b != 0.0)?;
            value = 100.0 * value / base;
        }
        let mut want = match &claim.published_column {
            Some(col) => number(r, col)?,
            None => claim.published,
        };
        if let Some(times) = &claim.times_column {
            want *= number(r, times)?;
        }
        Some((value, want))
    };
    rows.iter().map(|r| one(r)).collect()
}

/// Seed 000's order: on the traced key, HMGET, HMGET, HSET, HSET from one client.
fn trace_order(rows: &[&Row]) -> Verdict {
    let on_key: Vec<&&Row> = rows
        .iter()
        .filter(|r| r.get("on_trace_key").map(String::as_str) == Some("true"))
        .collect();
    if on_key.len() < 4 {
        return Verdict {
            measured: format!("{} commands on the trace key", on_key.len()),
            holds: None,
        };
    }
    let first: Vec<&str> = on_key[..4]
        .iter()
        .map(|r| r.get("command").map(String::as_str).unwrap_or(""))
        .collect();
    // Later commands may come from the harness reading the final state; the order is about these four.
    let clients: std::collections::BTreeSet<&str> = on_key[..4]
        .iter()
        .map(|r| r.get("client").map(String::as_str).unwrap_or(""))
        .collect();
    let holds = first == ["HMGET", "HMGET", "HSET", "HSET"] && clients.len() == 1;
    Verdict {
        measured: format!(
            "first four: {}; {} client(s)",
            first.join(", "),
            clients.len()
        ),
        holds: Some(holds),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_claims_parse_and_ids_are_unique() {
        let claims = all().unwrap();
        let ids: std::collections::BTreeSet<_> = claims.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids.len(), claims.len());
    }

    #[test]
    fn judges_a_csv() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("race.csv"),
            "scenario,strategy,processes,in_flight,admitted,limit\n\
             matrix,naive-bucket,1,2,200,100\nmatrix,naive-bucket,1,2,166,100\n",
        )
        .unwrap();
        let claims = all().unwrap();
        let two = claims
            .iter()
            .find(|c| c.id == "race.one-process-two-in-flight")
            .unwrap();
        let v = judge(two, dir.path());
        assert_eq!(v.holds, Some(false));
        assert!(v.measured.contains("min 166"), "{}", v.measured);
        let lua = claims.iter().find(|c| c.id == "race.lua-exact").unwrap();
        assert_eq!(judge(lua, dir.path()).holds, None);
    }

    #[test]
    fn all_at_most_bounds_each_row_by_its_column() {
        let dir = tempfile::tempdir().unwrap();
        let csv =
            "strategy,max_admitted_in_1s,smooth_bound\nlua-bucket,109,109.4\nincr-window,200,110\n";
        std::fs::write(dir.path().join("window-edge.csv"), csv).unwrap();
        let claims = all().unwrap();
        let bounded = claims
            .iter()
            .find(|c| c.id == "window-edge.bucket-bounded")
            .unwrap();
        assert_eq!(bounded.judge, Judge::AllAtMost);
        assert_eq!(judge(bounded, dir.path()).holds, Some(true));
        let mut fixed = bounded.clone();
        fixed.select = [("strategy".to_string(), "incr-window".to_string())].into();
        assert_eq!(judge(&fixed, dir.path()).holds, Some(false));
    }

    #[test]
    fn all_at_most_fails_on_one_row_above_even_when_the_mean_is_below() {
        let dir = tempfile::tempdir().unwrap();
        let csv = "operation,lazyfree,probe_max_stall_ms\nexpire,yes,0.2\nexpire,yes,0.3\nexpire,no,226\n";
        std::fs::write(dir.path().join("bigkey.csv"), csv).unwrap();
        let mut claim = Claim {
            id: "t".into(),
            experiment: "bigkey".into(),
            seed: "002".into(),
            text: "t".into(),
            file: "bigkey.csv".into(),
            statistic: "probe_max_stall_ms".into(),
            select: [("lazyfree".to_string(), "yes".to_string())].into(),
            published: 1.0,
            published_column: None,
            times_column: None,
            tolerance: 0.0,
            percent_of: None,
            denominator: None,
            range: None,
            judge: Judge::AllAtMost,
        };
        assert_eq!(judge(&claim, dir.path()).holds, Some(true));
        std::fs::write(
            dir.path().join("bigkey.csv"),
            format!("{csv}expire,yes,1.5\n"),
        )
        .unwrap();
        let v = judge(&claim, dir.path());
        assert_eq!(v.holds, Some(false), "{}", v.measured);
        assert!(v.measured.contains("max 1.50"), "{}", v.measured);
        claim.select.clear();
        assert_eq!(judge(&claim, dir.path()).holds, Some(false));
    }

    #[test]
    fn trace_order_needs_one_client() {
        let mk = |cmd: &str, client: &str| -> Row {
            [
                ("command", cmd),
                ("client", client),
                ("on_trace_key", "true"),
            ]
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
        };
        let good = [
            mk("HMGET", "a"),
            mk("HMGET", "a"),
            mk("HSET", "a"),
            mk("HSET", "a"),
        ];
        assert_eq!(
            trace_order(&good.iter().collect::<Vec<_>>()).holds,
            Some(true)
        );
        let two = [
            mk("HMGET", "a"),
            mk("HMGET", "b"),
            mk("HSET", "a"),
            mk("HSET", "b"),
        ];
        assert_eq!(
            trace_order(&two.iter().collect::<Vec<_>>()).holds,
            Some(false)
        );
        let alternating = [
            mk("HMGET", "a"),
            mk("HSET", "a"),
            mk("HMGET", "a"),
            mk("HSET", "a"),
        ];
        assert_eq!(
            trace_order(&alternating.iter().collect::<Vec<_>>()).holds,
            Some(false)
        );
    }
}
