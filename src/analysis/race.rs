//! The race summary: admitted per scenario, strategy and configuration (mean, min-max).

use super::stats::Summary;
use super::table::{config_label, number, read_rows};
use super::AnalysisError;
use std::fmt::Write as _;
use std::path::Path;

/// (scenario, strategy, configuration), the admitted of its trials, and its limit.
type Group = ((String, String, String), Vec<f64>, String);

/// A markdown table of admitted per (scenario, strategy, configuration), in first-seen order.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let rows = read_rows(&dir.join("race.csv"))?;
    let mut groups: Vec<Group> = Vec::new();
    for row in &rows {
        let key = (
            row.get("scenario").cloned().unwrap_or_default(),
            row.get("strategy").cloned().unwrap_or_default(),
            config_label(row),
        );
        let Some(admitted) = number(row, "admitted") else {
            continue;
        };
        let limit = row.get("limit").cloned().unwrap_or_default();
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(admitted),
            None => groups.push((key, vec![admitted], limit)),
        }
    }
    let mut out = String::from("| scenario | strategy | P x F | limit | trials | admitted mean | min | max |\n|---|---|---|---|---|---|---|---|\n");
    for ((scenario, strategy, config), values, limit) in &groups {
        if let Some(s) = Summary::of(values) {
            let _ = writeln!(
                out,
                "| {scenario} | {strategy} | {config} | {limit} | {} | {:.1} | {} | {} |",
                s.n, s.mean, s.min, s.max
            );
        }
    }
    Ok(out)
}
