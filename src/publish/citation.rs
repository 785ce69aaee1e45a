//! CITATION.cff (Citation File Format 1.2.0): how to cite the dataset, with the version, the
//! date of its last run and the commit of the ratelab that published it.

use super::datapackage::seed_title;
use super::Dataset;
use std::fmt::Write;

/// A YAML double-quoted scalar (JSON's string syntax is valid YAML).
fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

/// The CITATION.cff text; `created` is the latest run's end (RFC 3339).
pub fn render(dataset: &Dataset, created: &str) -> String {
    let ids: Vec<&str> = dataset.present.iter().map(|p| p.experiment.id()).collect();
    let date = created.get(..10).unwrap_or(created);
    let commit = crate::record::git_commit();
    let mut seeds: Vec<String> = (dataset.present.iter())
        .filter_map(|p| p.experiment.info().ok())
        .flat_map(|i| i.seeds)
        .collect();
    seeds.sort();
    seeds.dedup();
    let mut out = String::new();
    let _ = writeln!(out, "cff-version: 1.2.0");
    let _ = writeln!(
        out,
        "message: {}",
        quoted("If you use this dataset, please cite it as below.")
    );
    let _ = writeln!(out, "type: dataset");
    let _ = writeln!(
        out,
        "title: {}",
        quoted(&format!(
            "ratelab {}: Redis rate limiters measured against a real redis-server",
            dataset.name().trim_start_matches("ratelab-")
        ))
    );
    let _ = writeln!(out, "version: {}", quoted(env!("CARGO_PKG_VERSION")));
    let _ = writeln!(out, "date-released: {}", quoted(date));
    let _ = writeln!(out, "commit: {}", quoted(&commit));
    let _ = writeln!(out, "license: {}", env!("CARGO_PKG_LICENSE"));
    let _ = writeln!(out, "authors:\n  - name: {}", quoted("The ratelab authors"));
    let _ = writeln!(
        out,
        "abstract: {}",
        quoted(&format!(
            "Raw CSVs, meta.json, charts and a judged REPORT.md of the experiments {}, each run \
             against redis-server processes the harness started, reproducing published figures \
             of {}. Verify a copy with `ratelab verify` or `sha256sum -c SHA256SUMS`.",
            ids.join(", "),
            seeds
                .iter()
                .map(|s| seed_title(s))
                .collect::<Vec<_>>()
                .join("; ")
        ))
    );
    let _ = writeln!(out, "keywords:");
    for k in ["redis", "rate limiting", "lua", "benchmark", "reproduction"] {
        let _ = writeln!(out, "  - {}", quoted(k));
    }
    out
}
