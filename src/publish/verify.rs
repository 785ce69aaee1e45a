//! `ratelab verify`: re-checks a published dataset (its archive or its directory) without
//! changing it. Three checks, each naming exactly what differs: every checksum of SHA256SUMS;
//! every CSV against its Table Schema in datapackage.json (and that schema against this build's
//! row types); and the charts, REPORT.md and claims.csv redrawn from the CSVs alone in a
//! temporary copy, compared with the published ones.

use super::tables::{self, Resource};
use super::{checksums, extract, Dataset, PublishError, DATAPACKAGE, SHA256SUMS};
use crate::experiments;
use crate::scoreboard;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// One check's outcome.
#[derive(Debug)]
pub struct Check {
    pub name: &'static str,
    /// What held, in one line.
    pub summary: String,
    /// What did not, one sentence each.
    pub problems: Vec<String>,
    /// What the reader should know but does not fail the check.
    pub warnings: Vec<String>,
}

impl Check {
    fn new(name: &'static str) -> Self {
        Check {
            name,
            summary: String::new(),
            problems: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

/// Every check on one dataset.
#[derive(Debug)]
pub struct Verification {
    pub source: PathBuf,
    /// The package's name and the commit that published it, from datapackage.json.
    pub package: String,
    pub published_by: String,
    pub checks: Vec<Check>,
}

impl Verification {
    /// True when every check held.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.problems.is_empty())
    }

    /// Every problem, counted.
    pub fn problems(&self) -> usize {
        self.checks.iter().map(|c| c.problems.len()).sum()
    }

    /// The report printed by `ratelab verify`.
    pub fn render(&self) -> String {
        let mut out = format!(
            "verify {} ({}, published by ratelab commit {}; checked by {})\n",
            self.source.display(),
            self.package,
            self.published_by,
            crate::record::git_commit()
        );
        for c in &self.checks {
            let mark = if c.problems.is_empty() {
                "ok  "
            } else {
                "FAIL"
            };
            let _ = writeln!(out, "  {mark} {}: {}", c.name, c.summary);
            for p in &c.problems {
                let _ = writeln!(out, "         - {p}");
            }
            for w in &c.warnings {
                let _ = writeln!(out, "         note: {w}");
            }
        }
        out
    }
}

/// Verifies the archive or directory at `path`. Err only when it cannot be read as a dataset
/// at all (a truncated archive, no datapackage.json); every other failure is a problem.
pub fn verify(path: &Path) -> Result<Verification, PublishError> {
    let tmp = tempfile::tempdir().map_err(|e| PublishError::io(&std::env::temp_dir(), e))?;
    let root = if path.is_dir() {
        path.to_path_buf()
    } else {
        let into = tmp.path().join("unpacked");
        std::fs::create_dir(&into).map_err(|e| PublishError::io(&into, e))?;
        extract(path, &into)?
    };
    let package_path = root.join(DATAPACKAGE);
    let text = std::fs::read_to_string(&package_path)
        .map_err(|_| PublishError::NotPublished(path.to_path_buf()))?;
    let package: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| PublishError::Json {
            path: package_path.clone(),
            source,
        })?;
    let name = package["name"].as_str().unwrap_or("?").to_string();
    let published_by = package["ratelab"]["published_by_commit"]
        .as_str()
        .unwrap_or("?")
        .to_string();
    let checks = vec![
        check_sums(&root),
        check_schemas(&root, &package),
        redraw(&root, &tmp.path().join("redrawn"))?,
    ];
    Ok(Verification {
        source: path.to_path_buf(),
        package: name,
        published_by,
        checks,
    })
}

/// Every file of the tree under `root`, relative and `/`-separated, sorted; hidden entries
/// (a run's `.<id>.failed/`, editor files) are no part of a dataset and are left out.
fn tree(root: &Path) -> Vec<String> {
    tree_and_hidden(root).0
}

/// The files of [`tree`], and apart the hidden entries it leaves out.
fn tree_and_hidden(root: &Path) -> (Vec<String>, Vec<String>) {
    fn walk(root: &Path, rel: &str, out: &mut Vec<String>, hidden: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(root.join(rel)) else {
            return;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let child = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            if name.starts_with('.') {
                hidden.push(child);
            } else if e.path().is_dir() {
                walk(root, &child, out, hidden);
            } else {
                out.push(child);
            }
        }
    }
    let (mut out, mut hidden) = (Vec::new(), Vec::new());
    walk(root, "", &mut out, &mut hidden);
    out.sort();
    hidden.sort();
    (out, hidden)
}

fn check_sums(root: &Path) -> Check {
    let mut c = Check::new("checksums");
    let text = match std::fs::read_to_string(root.join(SHA256SUMS)) {
        Ok(t) => t,
        Err(e) => {
            c.summary = "none checked".into();
            c.problems
                .push(format!("{SHA256SUMS} is missing or unreadable: {e}"));
            return c;
        }
    };
    let listed = match checksums::parse(&text) {
        Ok(l) => l,
        Err(why) => {
            c.summary = "none checked".into();
            c.problems.push(why);
            return c;
        }
    };
    let mut matched = 0;
    for (rel, hash) in &listed {
        match checksums::file_sha256(root, rel) {
            Err(_) => c
                .problems
                .push(format!("{rel}: missing (listed in {SHA256SUMS})")),
            Ok(h) if &h != hash => c.problems.push(format!(
                "{rel}: SHA-256 {} but {SHA256SUMS} says {}: changed after publishing",
                &h[..16],
                &hash[..16]
            )),
            Ok(_) => matched += 1,
        }
    }
    let (files, hidden) = tree_and_hidden(root);
    for rel in files {
        if rel != SHA256SUMS && !listed.iter().any(|(l, _)| *l == rel) {
            c.problems
                .push(format!("{rel}: not listed in {SHA256SUMS}"));
        }
    }
    for rel in hidden {
        c.warnings.push(format!(
            "{rel}: hidden, no part of the dataset: not checked"
        ));
    }
    c.summary = format!("{matched} of {} files match {SHA256SUMS}", listed.len());
    c
}

fn check_schemas(root: &Path, package: &serde_json::Value) -> Check {
    let mut c = Check::new("schemas");
    // A JSON resource (claims.json) has a JSON Schema, not a Table Schema: checked apart.
    let all = package["resources"].as_array().cloned().unwrap_or_default();
    let (json, tabular): (Vec<_>, Vec<_>) = all.into_iter().partition(|r| r["format"] == "json");
    for r in &json {
        c.problems.extend(check_json(root, r));
    }
    let resources: Vec<Resource> = match serde_json::from_value(tabular.into()) {
        Ok(r) => r,
        Err(e) => {
            c.summary = "none checked".into();
            c.problems
                .push(format!("{DATAPACKAGE}: resources do not read: {e}"));
            return c;
        }
    };
    let (mut files, mut rows) = (0, 0);
    for r in &resources {
        match tables::check_csv(root, r) {
            Ok(n) => {
                files += 1;
                rows += n;
            }
            Err(problems) => c.problems.extend(problems),
        }
        match super::table_for(&r.path) {
            Some(t) => c
                .problems
                .extend(tables::schema_differs_from_row_type(r, &t)),
            None => c.warnings.push(format!(
                "{}: no row type of this build describes it (resource {}); its cells are checked \
                 against datapackage.json only",
                r.path, r.name
            )),
        }
    }
    for rel in tree(root).into_iter().filter(|f| f.ends_with(".csv")) {
        if !resources.iter().any(|r| r.path == rel) {
            c.problems
                .push(format!("{rel}: a CSV that {DATAPACKAGE} does not describe"));
        }
    }
    c.summary = format!(
        "{files} of {} CSVs ({rows} rows) match their Table Schemas in {DATAPACKAGE} and this \
         build's row types",
        resources.len()
    );
    c
}

/// A JSON resource against its JSON Schema's fields: the file's size, every entry an object
/// with exactly the described fields, each of a described type. Problems, one sentence each.
fn check_json(root: &Path, resource: &serde_json::Value) -> Vec<String> {
    let rel = resource["path"].as_str().unwrap_or("?");
    let Ok(bytes) = std::fs::read(root.join(rel)) else {
        return vec![format!("{rel}: missing (a resource of {DATAPACKAGE})")];
    };
    let mut problems = Vec::new();
    if resource["bytes"]
        .as_u64()
        .is_some_and(|b| b != bytes.len() as u64)
    {
        problems.push(format!(
            "{rel}: {} bytes, {DATAPACKAGE} says {}",
            bytes.len(),
            resource["bytes"]
        ));
    }
    let Ok(serde_json::Value::Array(entries)) = serde_json::from_slice(&bytes) else {
        return vec![format!("{rel}: not a JSON array")];
    };
    let fields = &resource["jsonschema"]["items"]["properties"];
    let Some(fields) = fields.as_object() else {
        return vec![format!(
            "{rel}: its resource in {DATAPACKAGE} has no jsonschema fields"
        )];
    };
    for (i, entry) in entries.iter().enumerate() {
        problems.extend(
            json_entry_problems(entry, fields).map(|p| format!("{rel}: entry {}: {p}", i + 1)),
        );
    }
    problems.truncate(5);
    problems
}

/// What is wrong with one entry beside the described `fields`.
fn json_entry_problems<'a>(
    entry: &'a serde_json::Value,
    fields: &'a serde_json::Map<String, serde_json::Value>,
) -> impl Iterator<Item = String> + 'a {
    let object = entry.as_object().cloned().unwrap_or_default();
    let unknown = (object.keys().filter(|k| !fields.contains_key(*k)))
        .map(|k| format!("field {k} is not described"))
        .collect::<Vec<_>>();
    let wrong = fields.iter().filter_map(move |(name, spec)| {
        let types: Vec<&str> = (spec["type"].as_array().into_iter().flatten())
            .filter_map(|t| t.as_str())
            .collect();
        let kind = match entry.get(name) {
            None => return Some(format!("{name} is missing")),
            Some(serde_json::Value::Null) => "null",
            Some(serde_json::Value::String(_)) => "string",
            Some(serde_json::Value::Number(n)) if n.is_u64() || n.is_i64() => "integer",
            Some(serde_json::Value::Number(_)) => "number",
            Some(serde_json::Value::Bool(_)) => "boolean",
            Some(_) => "object",
        };
        // An integer is a number too, as JSON Schema says.
        let fits = types.contains(&kind) || (kind == "integer" && types.contains(&"number"));
        (!fits).then(|| format!("{name} is {kind}, described as {}", types.join(" or ")))
    });
    unknown.into_iter().chain(wrong)
}

/// Copies `root` to `copy`, draws every chart and the report there from the CSVs, and compares.
fn redraw(root: &Path, copy: &Path) -> Result<Check, PublishError> {
    let mut c = Check::new("redraw");
    for rel in tree(root) {
        let to = copy.join(&rel);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| PublishError::io(parent, e))?;
        }
        std::fs::copy(root.join(&rel), &to).map_err(|e| PublishError::io(&to, e))?;
    }
    let dataset = match Dataset::scan(copy) {
        Ok(d) => d,
        Err(e) => {
            c.summary = "nothing redrawn".into();
            c.problems.push(crate::errors::one_line(&e));
            return Ok(c);
        }
    };
    let (mut svgs, mut pngs) = (0, 0);
    for p in &dataset.present {
        let id = p.experiment.id();
        let paths = match p.experiment.charts(&copy.join(id)) {
            Ok(paths) => paths,
            Err(e) => {
                c.problems.push(format!(
                    "{id}: the charts do not draw from the CSVs: {}",
                    crate::errors::one_line(&e)
                ));
                continue;
            }
        };
        for drawn in paths {
            let name = drawn.file_name().map(|n| n.to_string_lossy().into_owned());
            let rel = format!("{id}/{}", name.unwrap_or_default());
            let published = std::fs::read(root.join(&rel)).ok();
            let redrawn = std::fs::read(&drawn).map_err(|e| PublishError::io(&drawn, e))?;
            let svg = rel.ends_with(".svg");
            match published {
                None => c
                    .problems
                    .push(format!("{rel}: drawn from the CSVs but not published")),
                Some(bytes) if bytes == redrawn => {
                    if svg {
                        svgs += 1
                    } else {
                        pngs += 1
                    }
                }
                Some(_) if svg => c.problems.push(format!(
                    "{rel}: the chart redrawn from the CSVs differs from the published one"
                )),
                Some(_) => c.warnings.push(format!(
                    "{rel}: rasterised differently here (fonts); its SVG is what is compared"
                )),
            }
        }
    }
    let report_problems = compare_report(root, copy)?;
    let claims = report_problems.1;
    c.problems.extend(report_problems.0);
    c.summary = format!(
        "{svgs} SVG charts redraw byte for byte ({pngs} PNGs too); REPORT.md, REPORT.html, \
         claims.csv and claims.json rewritten from the CSVs: {claims} claims, {}",
        if c.problems.is_empty() {
            "same verdicts"
        } else {
            "see below"
        }
    );
    Ok(c)
}

/// What differs between the published `theirs` and the redrawn `ours` of `file`: its first
/// differing lines and whether the lengths differ; `None` when they are the same.
fn text_difference(file: &str, theirs: &str, ours: &str) -> Option<String> {
    if ours == theirs {
        return None;
    }
    let differing: Vec<String> = (theirs.lines().zip(ours.lines()).enumerate())
        .filter(|(_, (a, b))| a != b)
        .take(3)
        .map(|(n, (a, b))| {
            format!(
                "line {}: published {:?}, redrawn {:?}",
                n + 1,
                clip(a),
                clip(b)
            )
        })
        .collect();
    let (published, redrawn) = (theirs.lines().count(), ours.lines().count());
    Some(format!(
        "{file} redrawn from the CSVs differs{}{}",
        if differing.is_empty() {
            String::new()
        } else {
            format!(": {}", differing.join("; "))
        },
        if published != redrawn {
            format!(" ({published} lines published, {redrawn} redrawn)")
        } else {
            String::new()
        }
    ))
}

/// A line cut to what a message can show (a JSON file may be one long line).
fn clip(line: &str) -> String {
    match line.char_indices().nth(160) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

/// Rewrites REPORT.md, REPORT.html, claims.csv and claims.json in `copy` and compares them with `root`'s; returns the
/// problems and the number of claims compared.
fn compare_report(root: &Path, copy: &Path) -> Result<(Vec<String>, usize), PublishError> {
    let mut problems = Vec::new();
    if let Err(e) = experiments::write_report(copy, &[]) {
        problems.push(format!(
            "REPORT.md does not redraw from the CSVs: {}",
            crate::errors::one_line(&e)
        ));
        return Ok((problems, 0));
    }
    let verdicts = |dir: &Path| -> BTreeMap<String, (String, String)> {
        let Ok(mut reader) = csv::Reader::from_path(dir.join("claims.csv")) else {
            return BTreeMap::new();
        };
        (reader.records().flatten())
            .filter(|r| r.len() >= 6)
            .map(|r| (r[0].to_string(), (r[5].to_string(), r[4].to_string())))
            .collect()
    };
    let (published, redrawn) = (verdicts(root), verdicts(copy));
    for (id, (verdict, measured)) in &redrawn {
        match published.get(id) {
            None => problems.push(format!("claim {id}: judged now ({verdict}), not in the published claims.csv")),
            Some((v, _)) if v != verdict => problems.push(format!(
                "claim {id}: published verdict `{v}`, redrawn from the CSVs `{verdict}` ({measured})"
            )),
            Some(_) => {}
        }
    }
    for id in published.keys().filter(|id| !redrawn.contains_key(*id)) {
        problems.push(format!(
            "claim {id}: in the published claims.csv, not judged by this build"
        ));
    }
    let mut files = vec![
        "REPORT.md",
        "REPORT.html",
        crate::analysis::claims_json::FILE,
    ];
    // A scoreboard's run: its board is redrawn from the same CSVs.
    if root.join(scoreboard::SCOREBOARD_MD).is_file() {
        match scoreboard::write(copy) {
            Ok(_) => files.extend(scoreboard::FILES),
            Err(e) => problems.push(format!(
                "{} does not redraw from the CSVs: {}",
                scoreboard::SCOREBOARD_MD,
                crate::errors::one_line(&e)
            )),
        }
    }
    for file in files {
        let read = |dir: &Path| std::fs::read_to_string(dir.join(file)).unwrap_or_default();
        problems.extend(text_difference(file, &read(root), &read(copy)));
    }
    Ok((problems, redrawn.len()))
}
