//! CSVs read back: as the experiments' own row types for summary tables, or as rows of named
//! string fields for the claims file, which names its columns as data.

use super::AnalysisError;
use std::collections::BTreeMap;
use std::path::Path;

/// One CSV row, column name -> value.
pub type Row = BTreeMap<String, String>;

/// Reads every row of a CSV with a header.
pub fn read_rows(path: &Path) -> Result<Vec<Row>, AnalysisError> {
    Ok(crate::record::csv_file::read(path)?)
}

/// A grouping column of a summary table: its title and its value in a row.
pub type Key<R> = (&'static str, fn(&R) -> String);
/// A statistic column of a summary table: its title and its value in a row (None: no value).
pub type Stat<R> = (&'static str, fn(&R) -> Option<f64>);

/// Reads every row of a CSV into the experiment's own row type: a column the type has and the
/// file lacks (a renamed column) is an error naming the file.
pub fn read_typed<R: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<R>, AnalysisError> {
    Ok(crate::record::csv_file::read(path)?)
}

/// The summary table of the CSV at `path`, read as rows of type `R` (see [`summary_table`]).
pub fn summarize<R: serde::de::DeserializeOwned>(
    path: &Path,
    keys: &[Key<R>],
    stats: &[Stat<R>],
) -> Result<String, AnalysisError> {
    Ok(summary_table(&read_typed::<R>(path)?, keys, stats))
}

/// A row's `processes x in_flight` label.
pub fn config_label(row: &Row) -> String {
    match (row.get("processes"), row.get("in_flight")) {
        (Some(p), Some(f)) => format!("{p}x{f}"),
        _ => String::new(),
    }
}

/// Whether a row matches every `column = value` of a selector (`config` is the derived label;
/// `a|b` matches either).
pub fn matches(row: &Row, select: &BTreeMap<String, String>) -> bool {
    select.iter().all(|(k, wants)| {
        let got = if k == "config" {
            Some(config_label(row))
        } else {
            row.get(k).cloned()
        };
        got.is_some_and(|got| wants.split('|').any(|want| want == got))
    })
}

/// A numeric column of a row.
pub fn number(row: &Row, column: &str) -> Option<f64> {
    row.get(column)?.trim().parse().ok()
}

/// `number` of the first of `a?b?...` that the row has a number in: a statistic that is one column
/// or another (a decision inside a phase, else the one after it).
pub fn first_number(row: &Row, columns: &str) -> Option<f64> {
    columns.split('?').find_map(|column| number(row, column))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pairs: &[(&str, &str)]) -> Row {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn selector_matches_columns_and_config() {
        let r = row(&[
            ("strategy", "lua-bucket"),
            ("processes", "4"),
            ("in_flight", "8"),
            ("admitted", "100"),
        ]);
        let sel = |pairs: &[(&str, &str)]| row(pairs);
        assert!(matches(
            &r,
            &sel(&[("strategy", "lua-bucket"), ("config", "4x8")])
        ));
        assert!(!matches(&r, &sel(&[("config", "1x2")])));
        assert!(matches(&r, &sel(&[])));
        assert_eq!(number(&r, "admitted"), Some(100.0));
        assert_eq!(number(&r, "strategy"), None);
    }
}

/// A markdown table: rows grouped by `keys` (first-seen order), and for each statistic the
/// group's mean with its min-max when they differ.
pub fn summary_table<R>(rows: &[R], keys: &[Key<R>], stats: &[Stat<R>]) -> String {
    let mut groups: Vec<(Vec<String>, Vec<&R>)> = Vec::new();
    for row in rows {
        let key: Vec<String> = keys.iter().map(|k| (k.1)(row)).collect();
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(row),
            None => groups.push((key, vec![row])),
        }
    }
    let titles: Vec<&str> = (keys.iter().map(|k| k.0))
        .chain(std::iter::once("n"))
        .chain(stats.iter().map(|c| c.0))
        .collect();
    let mut out = format!(
        "| {} |\n|{}\n",
        titles.join(" | "),
        "---|".repeat(titles.len())
    );
    for (key, members) in &groups {
        let mut cells = key.clone();
        cells.push(members.len().to_string());
        for stat in stats {
            let values: Vec<f64> = members.iter().filter_map(|r| (stat.1)(r)).collect();
            cells.push(match super::stats::Summary::of(&values) {
                Some(s) if s.min == s.max => short(s.mean),
                Some(s) => format!("{} ({}-{})", short(s.mean), short(s.min), short(s.max)),
                None => String::new(),
            });
        }
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

/// Numbers for tables: integers plain, large values to one decimal, small to three digits.
pub fn short(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else if x.abs() >= 100.0 {
        format!("{x:.1}")
    } else if x.abs() >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

#[cfg(test)]
mod summary_tests {
    use super::*;

    struct R {
        strategy: &'static str,
        admitted: u64,
    }

    #[test]
    fn groups_in_first_seen_order_with_ranges() {
        let rows = [("naive", 200), ("lua", 100), ("naive", 166), ("lua", 100)]
            .map(|(strategy, admitted)| R { strategy, admitted });
        let keys: [Key<R>; 2] = [
            ("strategy", |r| r.strategy.into()),
            ("config", |_| "1x2".into()),
        ];
        let stats: [Stat<R>; 1] = [("admitted", |r| Some(r.admitted as f64))];
        let t = summary_table(&rows, &keys, &stats);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "| strategy | config | n | admitted |");
        assert_eq!(lines[2], "| naive | 1x2 | 2 | 183 (166-200) |");
        assert_eq!(lines[3], "| lua | 1x2 | 2 | 100 |");
    }
}
