//! CITATION.cff (Citation File Format 1.2.0): how to cite the dataset, with the version, the
//! date of its last run, the commit of the ratelab that published it, its licence, and the
//! write-ups its experiments reproduce as references.

use super::datapackage::SEEDS;
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
    let mut out = String::new();
    let _ = writeln!(out, "cff-version: 1.2.0");
    let _ = writeln!(
        out,
        "message: {}",
        quoted("If you use this dataset, please cite it as below.")
    );
    let _ = writeln!(out, "type: dataset");
    let _ = writeln!(out, "title: {}", quoted(&dataset.title()));
    let _ = writeln!(out, "version: {}", quoted(env!("CARGO_PKG_VERSION")));
    let _ = writeln!(out, "date-released: {}", quoted(date));
    let _ = writeln!(out, "commit: {}", quoted(&commit));
    let _ = writeln!(out, "license: {}", env!("CARGO_PKG_LICENSE"));
    let _ = writeln!(out, "authors:\n  - name: {}", quoted("The ratelab authors"));
    let reproduced = reproduced_seeds(dataset);
    let _ = writeln!(
        out,
        "abstract: {}",
        quoted(&format!(
            "Raw CSVs, meta.json, charts and a judged REPORT.md of the experiments {}, each run \
             against redis-server processes the harness started, reproducing published figures \
             of {}. Verify a copy with `ratelab verify` or `sha256sum -c SHA256SUMS`.",
            ids.join(", "),
            (reproduced.iter())
                .map(|(id, title, _)| format!("seed {id}: {title}"))
                .collect::<Vec<_>>()
                .join("; ")
        ))
    );
    let _ = writeln!(out, "keywords:");
    for k in ["redis", "rate limiting", "lua", "benchmark", "reproduction"] {
        let _ = writeln!(out, "  - {}", quoted(k));
    }
    out.push_str(&references(&reproduced));
    out
}

/// Each write-up the dataset's experiments reproduce: its seed id, title and the experiments.
fn reproduced_seeds(dataset: &Dataset) -> Vec<(&'static str, &'static str, Vec<&'static str>)> {
    let mut seeds = Vec::new();
    for &(id, title) in SEEDS {
        let experiments: Vec<&'static str> = (dataset.present.iter())
            .filter(|p| (p.experiment.info().ok()).is_some_and(|i| i.seeds.iter().any(|s| s == id)))
            .map(|p| p.experiment.id())
            .collect();
        if !experiments.is_empty() {
            seeds.push((id, title, experiments));
        }
    }
    seeds
}

/// The `references:` list: the write-ups, which name no author, as blog posts.
fn references(seeds: &[(&str, &str, Vec<&str>)]) -> String {
    let mut out = String::new();
    if seeds.is_empty() {
        return out;
    }
    let _ = writeln!(out, "references:");
    for (id, title, experiments) in seeds {
        let _ = writeln!(out, "  - type: blog");
        let _ = writeln!(out, "    title: {}", quoted(title));
        let _ = writeln!(out, "    authors:\n      - name: {}", quoted("anonymous"));
        let _ = writeln!(
            out,
            "    notes: {}",
            quoted(&format!(
                "ratelab seed {id}, reproduced here by {}",
                experiments.join(", ")
            ))
        );
    }
    out
}
