//! CSVs read back as rows of named string fields: analysis works on whatever columns a file has.

use super::AnalysisError;
use std::collections::BTreeMap;
use std::path::Path;

/// One CSV row, column name -> value.
pub type Row = BTreeMap<String, String>;

/// Reads every row of a CSV with a header.
pub fn read_rows(path: &Path) -> Result<Vec<Row>, AnalysisError> {
    let csv_err = |source| AnalysisError::Csv {
        path: path.to_path_buf(),
        source,
    };
    let mut reader = csv::Reader::from_path(path).map_err(csv_err)?;
    let headers = reader.headers().map_err(csv_err)?.clone();
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(csv_err)?;
        rows.push(
            headers
                .iter()
                .zip(record.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect(),
        );
    }
    Ok(rows)
}

/// A row's `processes x in_flight` label.
pub fn config_label(row: &Row) -> String {
    match (row.get("processes"), row.get("in_flight")) {
        (Some(p), Some(f)) => format!("{p}x{f}"),
        _ => String::new(),
    }
}

/// Whether a row matches every `column = value` of a selector (`config` is the derived label).
pub fn matches(row: &Row, select: &BTreeMap<String, String>) -> bool {
    select.iter().all(|(k, want)| {
        if k == "config" {
            &config_label(row) == want
        } else {
            row.get(k) == Some(want)
        }
    })
}

/// A numeric column of a row.
pub fn number(row: &Row, column: &str) -> Option<f64> {
    row.get(column)?.trim().parse().ok()
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
