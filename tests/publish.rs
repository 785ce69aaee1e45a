//! Publishing and verifying datasets, from the committed reference run (no Redis needed): the
//! reference publishes into an archive that verifies; a tampered CSV, a missing file, a column
//! renamed in a CSV, a bad cell and a truncated archive each fail with a message naming them.

use crate::common;

use ratelab::publish::{self, sha256_hex, Verification, SHA256SUMS};
use std::path::{Path, PathBuf};
use std::process::Command;

fn reference() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("results/reference")
}

/// Every file under `dir` with its bytes, to show a check changed nothing.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(snapshot(&path));
        } else {
            out.push((path.clone(), std::fs::read(&path).unwrap()));
        }
    }
    out.sort();
    out
}

/// A small published dataset: the reference's calibrate experiment alone, its report rewritten.
fn small_dataset(tmp: &Path) -> PathBuf {
    let dir = tmp.join("small");
    common::copy_tree(&reference().join("calibrate"), &dir.join("calibrate"));
    ratelab::experiments::write_report(&dir, &[]).unwrap();
    publish::publish(&dir, Some(&tmp.join("small.tar.gz"))).unwrap();
    dir
}

/// Rewrites SHA256SUMS over the files it lists, so only the other checks can catch a change.
fn reseal(dir: &Path) {
    let text = std::fs::read_to_string(dir.join(SHA256SUMS)).unwrap();
    let lines: String = (text.lines())
        .filter_map(|l| l.split_once("  ").map(|(_, p)| p.to_string()))
        .filter(|p| dir.join(p).is_file())
        .map(|p| {
            format!(
                "{}  {p}\n",
                sha256_hex(&std::fs::read(dir.join(&p)).unwrap())
            )
        })
        .collect();
    std::fs::write(dir.join(SHA256SUMS), lines).unwrap();
}

fn problems(v: &Verification) -> String {
    assert!(
        !v.passed(),
        "verified although it should not:\n{}",
        v.render()
    );
    v.checks
        .iter()
        .flat_map(|c| c.problems.iter().map(move |p| format!("{}: {p}", c.name)))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_reference_run_publishes_into_an_archive_that_verifies() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("reference");
    common::copy_tree(&reference(), &dir);
    let archive = tmp.path().join("reference.tar.gz");
    let published = publish::publish(&dir, Some(&archive)).unwrap();
    assert_eq!(published.name, "ratelab-reference");
    let v = publish::verify(&archive).unwrap();
    assert!(v.passed(), "{}", v.render());
    let rendered = v.render();
    for check in ["checksums", "schemas", "redraw"] {
        assert!(rendered.contains(&format!("ok   {check}")), "{rendered}");
    }
    // Every experiment with results and every file of its directory is in the package.
    let sums = std::fs::read_to_string(dir.join(SHA256SUMS)).unwrap();
    let ran = (ratelab::experiments::ALL.iter()).filter(|e| reference().join(e.id()).is_dir());
    for e in ran {
        for t in e.tables().into_iter().filter(|t| !t.custom_limiters_only) {
            assert!(
                sums.contains(&format!("  {}/{}\n", e.id(), t.file)),
                "{}",
                t.file
            );
        }
        assert!(sums.contains(&format!("  {}/meta.json\n", e.id())));
        assert!(sums.contains(&format!("  {}/experiment.toml\n", e.id())));
    }
    // The same files publish into the same bytes.
    let again = tmp.path().join("again.tar.gz");
    publish::publish(&dir, Some(&again)).unwrap();
    assert!(std::fs::read(&archive).unwrap() == std::fs::read(&again).unwrap());
    // A published directory verifies in place, and is left as it was: the_committed_reference_verifies.
}

#[test]
fn a_tampered_csv_fails_its_checksum_and_when_resealed_its_claims() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = small_dataset(tmp.path());
    assert!(publish::verify(&dir).unwrap().passed());
    let csv = dir.join("calibrate/calibrate.csv");
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let ops = (lines[0].split(','))
        .position(|c| c == "ops_per_s")
        .unwrap();
    for line in lines.iter_mut().skip(1) {
        let mut cells: Vec<String> = line.split(',').map(str::to_string).collect();
        if cells[0] == "GET" && cells[1] == "ratelab" {
            cells[ops] = "1.0".into();
        }
        *line = cells.join(",");
    }
    std::fs::write(&csv, lines.join("\n") + "\n").unwrap();
    let why = problems(&publish::verify(&dir).unwrap());
    assert!(
        why.contains("calibrate/calibrate.csv: SHA-256")
            && why.contains("changed after publishing"),
        "{why}"
    );
    // With the checksums rewritten, the report redrawn from the CSVs gives another verdict.
    reseal(&dir);
    let why = problems(&publish::verify(&dir).unwrap());
    assert!(!why.contains("checksums:"), "{why}");
    assert!(
        why.contains("claim calibrate.get: published verdict `")
            && why.contains("redrawn from the CSVs `DIFFERS`"),
        "{why}"
    );
}

#[test]
fn a_missing_file_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = small_dataset(tmp.path());
    std::fs::remove_file(dir.join("calibrate/calibrate.svg")).unwrap();
    let why = problems(&publish::verify(&dir).unwrap());
    assert!(
        why.contains("calibrate/calibrate.svg: missing (listed in SHA256SUMS)"),
        "{why}"
    );
    assert!(
        why.contains("calibrate/calibrate.svg: drawn from the CSVs but not published"),
        "{why}"
    );
}

#[test]
fn a_renamed_column_is_schema_drift_even_with_fresh_checksums() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = small_dataset(tmp.path());
    let csv = dir.join("calibrate/calibrate.csv");
    let text = std::fs::read_to_string(&csv).unwrap();
    std::fs::write(&csv, text.replacen("ops_per_s", "ops_per_sec", 1)).unwrap();
    reseal(&dir);
    let why = problems(&publish::verify(&dir).unwrap());
    assert!(
        why.contains("is `ops_per_sec` where the schema has `ops_per_s`")
            && why.contains("schema drift"),
        "{why}"
    );
    // Publishing refuses such a CSV: its schema would not be the row type's.
    let err = publish::publish(&dir, Some(&tmp.path().join("drift.tar.gz")))
        .err()
        .expect("publish must refuse a drifted CSV");
    assert!(err.to_string().contains("ops_per_sec"), "{err}");
}

#[test]
fn claims_json_carries_numbers_is_described_and_a_wrong_type_in_it_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = small_dataset(tmp.path());
    let text = std::fs::read_to_string(dir.join("claims.json")).unwrap();
    let claims: serde_json::Value = serde_json::from_str(&text).unwrap();
    let get = (claims.as_array().unwrap().iter())
        .find(|c| c["id"] == "calibrate.get")
        .expect("calibrate.get in claims.json");
    assert!(get["n"].as_u64().unwrap() >= 2, "{get}");
    for number in ["mean", "min", "max", "ci_low", "ci_high", "published_low"] {
        assert!(get[number].is_f64(), "{number} is not a number: {get}");
    }
    assert!(
        get["verdict"].is_string() && get["statistic"].is_string(),
        "{get}"
    );
    let package: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("datapackage.json")).unwrap())
            .unwrap();
    let resource = (package["resources"].as_array().unwrap().iter())
        .find(|r| r["path"] == "claims.json")
        .expect("claims.json listed in datapackage.json");
    let fields = resource["jsonschema"]["items"]["properties"]
        .as_object()
        .unwrap();
    for (name, _) in get.as_object().unwrap() {
        let described = fields.get(name).and_then(|f| f["description"].as_str());
        assert!(
            described.is_some_and(|d| !d.is_empty()),
            "{name} not described"
        );
    }
    std::fs::write(
        dir.join("claims.json"),
        text.replacen("\"n\": ", "\"n\": \"x\", \"was\": ", 1),
    )
    .unwrap();
    reseal(&dir);
    let why = problems(&publish::verify(&dir).unwrap());
    assert!(
        why.contains("claims.json: entry 1: field was is not described")
            && why.contains("n is string, described as integer or null"),
        "{why}"
    );
}

#[test]
fn a_cell_of_the_wrong_type_is_named_with_its_line_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = small_dataset(tmp.path());
    let csv = dir.join("calibrate/calibrate.csv");
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let pair = (lines[0].split(',')).position(|c| c == "pair").unwrap();
    let mut cells: Vec<String> = lines[1].split(',').map(str::to_string).collect();
    cells[pair] = "two".into();
    lines[1] = cells.join(",");
    std::fs::write(&csv, lines.join("\n") + "\n").unwrap();
    reseal(&dir);
    let why = problems(&publish::verify(&dir).unwrap());
    assert!(
        why.contains("calibrate/calibrate.csv line 2, column `pair`: \"two\" is not an integer"),
        "{why}"
    );
}

#[test]
fn a_truncated_archive_is_an_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    small_dataset(tmp.path());
    let archive = tmp.path().join("small.tar.gz");
    assert!(publish::verify(&archive).unwrap().passed());
    let bytes = std::fs::read(&archive).unwrap();
    for keep in [bytes.len() / 2, bytes.len() - 8] {
        let cut = tmp.path().join("cut.tar.gz");
        std::fs::write(&cut, &bytes[..keep]).unwrap();
        let err = publish::verify(&cut).expect_err("a truncated archive must not verify");
        assert!(
            err.to_string()
                .contains("is truncated or not a .tar.gz archive"),
            "{err}"
        );
    }
}

#[test]
fn the_binary_exits_non_zero_on_a_failed_check_and_zero_on_a_good_copy() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = small_dataset(tmp.path());
    let run = |path: &Path| {
        Command::new(env!("CARGO_BIN_EXE_ratelab"))
            .arg("verify")
            .arg(path)
            .output()
            .unwrap()
    };
    let good = run(&tmp.path().join("small.tar.gz"));
    let stdout = String::from_utf8_lossy(&good.stdout);
    assert!(good.status.success(), "{stdout}");
    assert!(stdout.contains("verified: every check holds"), "{stdout}");
    std::fs::remove_file(dir.join("calibrate/meta.json")).unwrap();
    let bad = run(&dir);
    assert!(!bad.status.success());
    let stdout = String::from_utf8_lossy(&bad.stdout);
    assert!(stdout.contains("FAIL checksums"), "{stdout}");
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("does not verify"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}

/// An external validator named by `env` (default `command`). A missing one fails the test: a
/// validation that did not run must not read as one that passed. `./run_all.sh --test` installs
/// both into target/validators and names them in the environment.
fn validator(env: &str, command: &str) -> String {
    let tool = std::env::var(env).unwrap_or_else(|_| command.into());
    if let Err(e) = Command::new(&tool).arg("--version").output() {
        panic!(
            "`{tool}` cannot run ({e}): run the tests with ./run_all.sh --test, which installs it, \
             or `pip install {command}` and set {env} to its path"
        );
    }
    tool
}

/// datapackage.json validates with the Frictionless reference implementation (FRICTIONLESS
/// names the command, default `frictionless`): field types, constraints, byte counts and hashes
/// of every CSV.
#[test]
fn frictionless_validates_the_package() {
    let tool = validator("FRICTIONLESS", "frictionless");
    let tmp = tempfile::tempdir().unwrap();
    let dir = small_dataset(tmp.path());
    let out = Command::new(&tool)
        .arg("validate")
        .arg("datapackage.json")
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // And it sees a bad cell, so the pass above means something.
    let csv = dir.join("calibrate/calibrate.csv");
    let text = std::fs::read_to_string(&csv).unwrap();
    let header_end = text.find('\n').unwrap();
    let (header, rows) = text.split_at(header_end + 1);
    let pair = header.split(',').position(|c| c == "pair").unwrap();
    let mut first: Vec<&str> = rows.lines().next().unwrap().split(',').collect();
    first[pair] = "two";
    let rest: String = rows.lines().skip(1).map(|l| format!("{l}\n")).collect();
    std::fs::write(&csv, format!("{header}{}\n{rest}", first.join(","))).unwrap();
    let out = Command::new(&tool)
        .arg("validate")
        .arg("datapackage.json")
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(!out.status.success(), "frictionless passed a bad cell");
}

/// Every published column says what it holds: datapackage.json is what people who download the
/// dataset read, and a column without a description is a number nobody can use. Checked on the
/// package the reference publishes into, and on every table of every experiment (a custom
/// limiter's table is in no reference run).
#[test]
fn every_published_column_has_a_description() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("reference");
    common::copy_tree(&reference(), &dir);
    publish::publish(&dir, None).unwrap();
    let text = std::fs::read_to_string(dir.join("datapackage.json")).unwrap();
    let package: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut missing = Vec::new();
    let mut columns = 0;
    for resource in package["resources"].as_array().unwrap() {
        // A CSV's Table Schema lists its fields; claims.json's JSON Schema names them as properties.
        let fields: Vec<(String, &serde_json::Value)> = match resource["format"].as_str() {
            Some("json") => (resource["jsonschema"]["items"]["properties"]
                .as_object()
                .unwrap())
            .iter()
            .map(|(name, f)| (name.clone(), f))
            .collect(),
            _ => (resource["schema"]["fields"].as_array().unwrap().iter())
                .map(|f| (f["name"].as_str().unwrap_or_default().to_string(), f))
                .collect(),
        };
        for (name, field) in fields {
            columns += 1;
            let text = field["description"].as_str().unwrap_or_default();
            if text.trim().is_empty() {
                missing.push(format!("{}: {name}", resource["path"]));
            }
        }
    }
    // The whole reference: a package that lost its resources would pass vacuously.
    assert!(
        columns > 500,
        "only {columns} columns in the published package"
    );
    for e in ratelab::experiments::ALL {
        for table in e.tables() {
            let bare = table
                .fields()
                .into_iter()
                .filter(|f| f.description.is_none());
            missing.extend(bare.map(|f| format!("{}/{}: {}", e.id(), table.file, f.name)));
        }
    }
    missing.sort();
    missing.dedup();
    assert!(
        missing.is_empty(),
        "{} published column(s) have no description: give the row type's field a doc comment\n{}",
        missing.len(),
        missing.join("\n")
    );
}

/// The committed reference is published: its datapackage.json, SHA256SUMS and CITATION.cff are
/// current. After re-running or adding a reference experiment, or changing claims:
/// `ratelab report results/reference && ratelab publish results/reference`, then commit.
#[test]
fn the_committed_reference_verifies() {
    let before = snapshot(&reference());
    let v = publish::verify(&reference()).unwrap();
    assert!(
        v.passed(),
        "results/reference is stale: run `ratelab report results/reference && ratelab publish \
         results/reference` and commit\n{}",
        v.render()
    );
    // Verifying a directory in place changes nothing in it.
    assert!(
        before == snapshot(&reference()),
        "verify changed the directory it checked"
    );
}

/// The committed library scoreboard is published and current the same way: its board, report and
/// package redraw from its CSVs (`ratelab report results/libraries && ratelab publish
/// results/libraries` after a change to what they show, then commit).
#[test]
fn the_committed_scoreboard_verifies() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/libraries");
    assert!(
        dir.join("SCOREBOARD.md").is_file(),
        "results/libraries has its board"
    );
    let v = publish::verify(&dir).unwrap();
    assert!(
        v.passed(),
        "results/libraries is stale: run `ratelab report results/libraries && ratelab publish \
         results/libraries` and commit\n{}",
        v.render()
    );
}

/// CITATION.cff validates against the Citation File Format 1.2.0 schema with `cffconvert`
/// (CFFCONVERT names the command).
#[test]
fn cffconvert_validates_the_citation() {
    let tool = validator("CFFCONVERT", "cffconvert");
    let tmp = tempfile::tempdir().unwrap();
    let dir = small_dataset(tmp.path());
    let out = Command::new(&tool)
        .args(["--validate", "-i"])
        .arg(dir.join("CITATION.cff"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
