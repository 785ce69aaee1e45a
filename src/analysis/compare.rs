//! Runs side by side: what differs in their setups, then every claim's verdict in each run and
//! where the verdict changes, so a reviewer sees which claims move with the machine or build.

use super::budget::{stalls_cell, steal_cell};
use super::claim::Verdict;
use super::claims::{self, Call};
use super::{front, published};
use super::{read_meta, AnalysisError};
use crate::record::{Meta, STALL};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The setup facts compared between runs, per experiment: name and value.
fn setup_facts(meta: &Meta) -> Vec<(String, String)> {
    let mut facts = vec![
        ("redis version".to_string(), meta.redis.version.clone()),
        (
            "redis binary".to_string(),
            meta.redis.binary.clone().unwrap_or_default(),
        ),
        ("profile".to_string(), meta.profile.clone()),
        // TLS changes latency and CPU per decision; a user's server is not the harness's own.
        (
            "tls".to_string(),
            (if meta.redis.tls { "on" } else { "off" }).into(),
        ),
        (
            "server".to_string(),
            (if meta.redis.managed {
                "started by ratelab"
            } else {
                "--redis-url"
            })
            .into(),
        ),
        (
            "cpu".to_string(),
            format!("{} x {}", meta.host.cpus_online, meta.host.cpu_model),
        ),
        ("kernel".to_string(), meta.host.kernel.clone()),
        ("commit".to_string(), meta.git_commit.clone()),
        ("params".to_string(), meta.params.to_string()),
    ];
    facts.extend((meta.redis.config.iter()).map(|(k, v)| (format!("config {k}"), v.clone())));
    facts
}

/// The column letter of the `i`-th run: A, B, ...
fn letter(i: usize) -> char {
    char::from(b'A' + (i % 26) as u8)
}

/// Markdown setting `dirs` side by side over the experiments `ids` (in that order). Its charts
/// are linked relative to `links_from` (the directory the markdown is written to), else by
/// absolute path.
pub fn side_by_side(
    dirs: &[PathBuf],
    ids: &[&str],
    links_from: Option<&Path>,
) -> Result<String, AnalysisError> {
    if let Some(bad) = dirs.iter().find(|d| !d.is_dir()) {
        return Err(AnalysisError::NotResults(bad.clone()));
    }
    let names: Vec<String> = (dirs.iter().enumerate())
        .map(|(i, d)| format!("{} `{}`", letter(i), d.display()))
        .collect();
    let mut out = String::from("# ratelab: runs side by side\n\n");
    for name in &names {
        let _ = writeln!(out, "- {name}");
    }
    let rows = claim_rows(dirs, ids)?;
    let (changed, same): (Vec<&ClaimRow>, Vec<&ClaimRow>) = rows.iter().partition(|r| r.changes);
    let brief = |rows: &[&ClaimRow]| {
        let head = table_head(&["claim", "accepts"], dirs.len());
        head + &rows.iter().map(|r| r.brief.as_str()).collect::<String>()
    };
    let _ = write!(
        out,
        "\n{} claims change their verdict between these runs. Each cell: the verdict, then the mean \
        (its range, the number of values); `accepts` is what the claim accepts.\n\n\
        ## Claims whose verdict changes\n\n{}",
        changed.len(),
        match changed.is_empty() {
            true => "None.\n".to_string(),
            false => brief(&changed),
        }
    );
    if !changed.is_empty() {
        let full: String = changed.iter().map(|r| r.full.as_str()).collect();
        let _ = write!(
            out,
            "\n<details><summary>The changed claims in full</summary>\n\n{}{full}\n</details>\n",
            table_head(&["claim"], dirs.len())
        );
    }
    out.push_str("\n## What differs in the setups\n\n");
    out.push_str(&setup_differences(dirs, ids));
    out.push_str(&disturbance(dirs, ids));
    let _ = write!(
        out,
        "\n## Claims whose verdict is the same\n\n{}",
        brief(&same)
    );
    out.push_str(&charts_side_by_side(dirs, ids, links_from));
    Ok(out)
}

/// The page of a side-by-side comparison whose chart links are relative to `links_from` (or
/// absolute).
pub fn page(markdown: &str, links_from: Option<&Path>) -> Result<String, AnalysisError> {
    super::html::render(markdown, links_from.unwrap_or(Path::new("/")))
}

/// One claim's rows: each run's verdict and measurement in one short cell beside what the claim
/// accepts, and in full (every number the judge wrote).
struct ClaimRow {
    changes: bool,
    brief: String,
    full: String,
}

/// Every claim's rows, in the experiments' order.
fn claim_rows(dirs: &[PathBuf], ids: &[&str]) -> Result<Vec<ClaimRow>, AnalysisError> {
    let claims = claims::all()?;
    let mut rows = Vec::new();
    let mut judging = claims::Judging::default();
    for id in ids {
        for claim in claims.iter().filter(|c| c.experiment == *id) {
            let verdicts: Vec<Option<(Call, Verdict)>> = (dirs.iter())
                .map(|d| {
                    let exp_dir = d.join(id);
                    exp_dir.is_dir().then(|| {
                        let v = judging.judge(claim, &exp_dir);
                        (Call::of(claim, &v), v)
                    })
                })
                .collect();
            let cells = |brief: bool| -> Vec<String> {
                (verdicts.iter())
                    .map(|v| match v {
                        None => "not run".to_string(),
                        Some((call, v)) if brief => {
                            let measured =
                                front::measured_briefly(v.figures.as_deref(), &v.measured);
                            format!("{} {measured}", call.label())
                        }
                        Some((call, v)) => format!("{}: {}", call.label(), v.measured),
                    })
                    .collect()
            };
            let figures = verdicts
                .iter()
                .flatten()
                .find_map(|(_, v)| v.figures.as_deref());
            let accepts = front::accepted(figures).unwrap_or_else(|| published(claim));
            let calls: Vec<Call> = verdicts.iter().flatten().map(|(c, _)| *c).collect();
            rows.push(ClaimRow {
                changes: calls.windows(2).any(|w| w[0] != w[1]),
                brief: format!(
                    "| `{}` | {accepts} | {} |\n",
                    claim.id,
                    cells(true).join(" | ")
                ),
                full: format!("| `{}` | {} |\n", claim.id, cells(false).join(" | ")),
            });
        }
    }
    Ok(rows)
}

/// Each experiment's charts, one row per chart with each run's drawing beside the others (linked
/// from `links_from`, else by absolute path: the runs live in different directories).
fn charts_side_by_side(dirs: &[PathBuf], ids: &[&str], links_from: Option<&Path>) -> String {
    let mut out = String::from("\n## Charts side by side\n");
    for id in ids {
        let mut names: Vec<String> = (dirs.iter())
            .flat_map(|d| {
                std::fs::read_dir(d.join(id))
                    .into_iter()
                    .flatten()
                    .flatten()
            })
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".svg"))
            .collect();
        names.sort();
        names.dedup();
        if names.is_empty() {
            continue;
        }
        let _ = write!(out, "\n### {id}\n\n{}", table_head(&[], dirs.len()));
        for name in &names {
            let cells: Vec<String> = (dirs.iter().enumerate())
                .map(|(i, d)| {
                    let path = d.join(id).join(name);
                    let link = link(&path, links_from);
                    match path.is_file() {
                        true => format!("![{} {name}]({})", letter(i), link.display()),
                        false => "not drawn".to_string(),
                    }
                })
                .collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
    }
    out
}

/// `path` as linked from the directory `from`: relative to it (a committed comparison's links
/// then work wherever the repository is), else absolute.
fn link(path: &Path, from: Option<&Path>) -> PathBuf {
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let target = absolute(path);
    let Some(from) = from.map(absolute) else {
        return target;
    };
    let (to, base): (Vec<_>, Vec<_>) = (target.components().collect(), from.components().collect());
    let common = to.iter().zip(&base).take_while(|(a, b)| a == b).count();
    let up = std::iter::repeat_n(std::path::Component::ParentDir, base.len() - common);
    up.chain(to[common..].iter().copied()).collect()
}

/// A table's header: the `first` columns, then a column per run (`A`, `B`, ...).
fn table_head(first: &[&str], runs: usize) -> String {
    let cells: Vec<String> = (first.iter().map(|c| c.to_string()))
        .chain((0..runs).map(|i| letter(i).to_string()))
        .collect();
    format!(
        "| {} |\n|{}\n",
        cells.join(" | "),
        "---|".repeat(cells.len())
    )
}

/// How much the machine disturbed each run, per experiment: each CPU's steal and the harness's
/// stalls. Not setup facts (they always differ a little), but a verdict that moves between a
/// quiet run and a disturbed one may be the machine's doing.
fn disturbance(dirs: &[PathBuf], ids: &[&str]) -> String {
    // One run's cell: what its meta.json knows of steal and stalls; None when nothing.
    let cell = |dir: &PathBuf, id: &str| -> Option<String> {
        let meta = read_meta(&dir.join(id)).ok().flatten()?;
        let parts: Vec<String> = [
            ("steal", steal_cell(&meta), " %"),
            ("stalls", stalls_cell(&meta), ""),
        ]
        .into_iter()
        .filter(|(_, value, _)| value != "-")
        .map(|(what, value, unit)| format!("{what} {value}{unit}"))
        .collect();
        (!parts.is_empty()).then(|| parts.join("; "))
    };
    let mut rows = String::new();
    for id in ids {
        let cells: Vec<Option<String>> = dirs.iter().map(|d| cell(d, id)).collect();
        if cells.iter().any(Option::is_some) {
            let cells: Vec<&str> = cells.iter().map(|c| c.as_deref().unwrap_or("-")).collect();
            let _ = writeln!(rows, "| {id} | {} |", cells.join(" | "));
        }
    }
    if rows.is_empty() {
        return rows;
    }
    let header: Vec<String> = (0..dirs.len()).map(|i| letter(i).to_string()).collect();
    format!(
        "\n## How much the machine disturbed each run\n\nSteal: the share of each CPU (cpu0 / cpu1 / ...) the \
        hypervisor gave to other machines; stalls: times the harness was held off its CPU for more than {} ms \
        (the longest lateness in brackets).\n\n| experiment | {} |\n|---|{}\n{rows}",
        STALL.as_millis(),
        header.join(" | "),
        "---|".repeat(dirs.len())
    )
}

/// The setup facts that are not the same in every run that has them: each fact once, with the
/// experiments it differs in ("every experiment" when it is all of them).
fn setup_differences(dirs: &[PathBuf], ids: &[&str]) -> String {
    // (fact, values per run) -> experiments, in first-seen order.
    let mut differing: Vec<((String, String), Vec<&str>)> = Vec::new();
    for id in ids {
        let facts: Vec<Option<BTreeMap<String, String>>> = (dirs.iter())
            .map(|d| {
                read_meta(&d.join(id))
                    .ok()
                    .flatten()
                    .map(|m| setup_facts(&m).into_iter().collect())
            })
            .collect();
        let present: Vec<&BTreeMap<String, String>> = facts.iter().flatten().collect();
        if present.len() < 2 {
            continue;
        }
        let mut keys: Vec<&String> = present.iter().flat_map(|f| f.keys()).collect();
        keys.sort();
        keys.dedup();
        for key in keys {
            let values: Vec<&str> = (facts.iter())
                .map(|f| {
                    f.as_ref()
                        .map_or("-", |f| f.get(key).map_or("(none)", String::as_str))
                })
                .collect();
            let known: Vec<&&str> = values.iter().filter(|v| **v != "-").collect();
            if known.windows(2).all(|w| w[0] == w[1]) {
                continue;
            }
            let fact = (key.clone(), values.join(" / "));
            match differing.iter_mut().find(|(f, _)| *f == fact) {
                Some((_, experiments)) => experiments.push(id),
                None => differing.push((fact, vec![id])),
            }
        }
    }
    let ran = (ids.iter())
        .filter(|id| {
            dirs.iter()
                .filter(|d| d.join(id).join("meta.json").exists())
                .count()
                > 1
        })
        .count();
    let mut out = String::new();
    for ((key, values), experiments) in &differing {
        let which = match experiments.len() == ran {
            true => "every experiment".to_string(),
            false => experiments.join(", "),
        };
        let _ = writeln!(out, "- {key}: {values} ({which})");
    }
    if out.is_empty() {
        out.push_str("Nothing: the same server, machine, profile and parameters.\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_a_verdict_that_changes_and_the_setup_that_differs() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        for (dir, admitted) in [(&a, 100), (&b, 120)] {
            let race = dir.path().join("race");
            std::fs::create_dir(&race).unwrap();
            let csv = format!(
                "scenario,strategy,processes,in_flight,trial,checks,admitted,denied,errors,limit,final_state,\
                 elapsed_ms\nmatrix,lua-bucket,1,1,0,1000,{admitted},0,0,100,0,1\n"
            );
            std::fs::write(race.join("race.csv"), csv).unwrap();
            let meta = concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/results/reference/race/meta.json"
            );
            let mut meta = std::fs::read_to_string(meta).unwrap();
            if admitted == 120 {
                meta = meta.replace("\"version\": \"7.0.15\"", "\"version\": \"8.2.1\"");
            }
            std::fs::write(race.join("meta.json"), meta).unwrap();
        }
        let text = side_by_side(
            &[a.path().to_path_buf(), b.path().to_path_buf()],
            &["race"],
            None,
        )
        .unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("| `race.lua-exact`"))
            .unwrap();
        assert!(line.contains("holds") && line.contains("DIFFERS"), "{line}");
        // In the changes' table, which comes first.
        let (changes, same) = text
            .split_once("## Claims whose verdict is the same")
            .unwrap();
        assert!(changes.contains(line) && !same.contains(line), "{text}");
        assert!(text.contains("1 claims change their verdict"), "{text}");
        assert!(
            text.contains("- redis version: 7.0.15 / 8.2.1 (every experiment)"),
            "{text}"
        );
        // Both copies carry the reference race's meta.json: its steal and stalls, in both columns.
        let meta = read_meta(&a.path().join("race")).unwrap().unwrap();
        let (steal, stalls) = (steal_cell(&meta), stalls_cell(&meta));
        assert!(
            steal != "-" && stalls != "-",
            "the reference's race records steal and stalls"
        );
        let cell = format!("steal {steal} %; stalls {stalls}");
        assert!(
            text.contains("## How much the machine disturbed each run")
                && text.contains(&format!("| race | {cell} | {cell} |")),
            "{text}"
        );
        assert_eq!(
            link(
                Path::new("/r/builds/a/race/x.svg"),
                Some(Path::new("/r/builds"))
            ),
            Path::new("a/race/x.svg")
        );
        assert_eq!(
            link(
                Path::new("/r/reference/race/x.svg"),
                Some(Path::new("/r/builds-full"))
            ),
            Path::new("../reference/race/x.svg")
        );
        let missing = side_by_side(&[a.path().join("nowhere")], &["race"], None);
        assert!(matches!(missing, Err(AnalysisError::NotResults(_))));
    }
}
