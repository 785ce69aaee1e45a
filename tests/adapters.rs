//! Every adapter in examples/adapters/ run as itself (its library installed by scripts/adapters.sh
//! from its lock file) through race's quick matrix against a real server: the atomic libraries
//! admit exactly their limit at every concurrency, the non-atomic ones over-admit once checks are
//! in flight together, and the do-nothing adapter admits every check. A manifest with no expected
//! outcome here fails, so a new adapter says what it should show.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// What race should show of an adapter.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// Exactly its limit in every trial.
    Exact,
    /// Its limit one check at a time, more than it with 32 checks in flight at once (4x8).
    OverAdmitsInFlight,
    /// Every check (it decides nothing).
    Everything,
}

fn expected(name: &str) -> Option<Expect> {
    use Expect::*;
    Some(match name {
        "noop" => Everything,
        "rlf-non-atomic" | "seed000-naive" | "seed001-naive" => OverAdmitsInFlight,
        "rate-limiter-flexible"
        | "rolling-rate-limiter"
        | "rate-limit-redis"
        | "seed000-lua"
        | "seed001-lua"
        | "python-redis-py" => Exact,
        _ => return None,
    })
}

fn manifests() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/adapters");
    let mut found = Vec::new();
    for folder in std::fs::read_dir(&root)
        .expect("examples/adapters exists")
        .flatten()
    {
        let Ok(files) = std::fs::read_dir(folder.path()) else {
            continue;
        };
        found.extend(
            files
                .flatten()
                .map(|f| f.path())
                .filter(|p| p.extension().is_some_and(|e| e == "toml")),
        );
    }
    found.sort();
    found
}

/// race.csv's rows of `name`: (configuration, admitted, limit, errors).
fn rows(race_csv: &str, name: &str) -> Vec<(String, u64, u64, u64)> {
    let mut lines = race_csv.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let col = |c: &str| {
        header
            .iter()
            .position(|h| *h == c)
            .unwrap_or_else(|| panic!("race.csv has {c}"))
    };
    let (s, p, f, a, l, e) = (
        col("strategy"),
        col("processes"),
        col("in_flight"),
        col("admitted"),
        col("limit"),
        col("errors"),
    );
    let number = |v: &str| v.parse::<u64>().unwrap_or_else(|_| panic!("a count: {v}"));
    (lines.map(|l| l.split(',').collect::<Vec<_>>()))
        .filter(|r| r.get(s) == Some(&name))
        .map(|r| {
            (
                format!("{}x{}", r[p], r[f]),
                number(r[a]),
                number(r[l]),
                number(r[e]),
            )
        })
        .collect()
}

/// Checks per trial: the do-nothing adapter admits all of them.
const CHECKS: u64 = 1000;

/// One race over every adapter at once (one server, one build of the matrix: CI time).
fn race_every_adapter(manifests: &[PathBuf], out: &Path) {
    let mut run = Command::new(common::ratelab_exe());
    run.args(["run", "race", "--profile", "quick"]);
    for manifest in manifests {
        run.arg("--limiter").arg(manifest);
    }
    let run = run
        .args([
            "--set",
            "strategies=[\"lua-bucket\"]",
            "--set",
            "configs=[\"1x1\", \"4x8\"]",
        ])
        .args([
            "--set",
            "trials=1",
            "--set",
            &format!("checks={CHECKS}"),
            "--out",
        ])
        .arg(out)
        .env("CI", "1")
        .output()
        .expect("ratelab runs");
    assert!(
        run.status.success(),
        "race failed (are the adapters installed? scripts/adapters.sh): {}",
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn every_adapter_runs_race_as_its_library_and_shows_what_its_design_allows() {
    let manifests = manifests();
    assert!(!manifests.is_empty(), "examples/adapters has manifests");
    let out = tempfile::tempdir().unwrap();
    race_every_adapter(&manifests, out.path());
    let csv = std::fs::read_to_string(out.path().join("race/race.csv")).unwrap();
    let limiters = std::fs::read_to_string(out.path().join("race/limiters.csv")).unwrap();
    let mut failures = Vec::new();
    for manifest in &manifests {
        let limiter = ratelab::limiter::custom::load(manifest).expect("the manifest loads");
        let Some(expect) = expected(&limiter.name) else {
            failures.push(format!(
                "{}: no expected outcome in tests/adapters.rs",
                limiter.name
            ));
            continue;
        };
        let rows = rows(&csv, &limiter.name);
        assert_eq!(
            rows.len(),
            2,
            "{}: a row per configuration: {rows:?}",
            limiter.name
        );
        for (config, admitted, limit, errors) in &rows {
            let ok = *errors == 0
                && match (expect, config.as_str()) {
                    (Expect::Exact, _) | (Expect::OverAdmitsInFlight, "1x1") => admitted == limit,
                    (Expect::OverAdmitsInFlight, _) => admitted > limit,
                    (Expect::Everything, _) => *admitted == CHECKS,
                };
            if !ok {
                failures.push(format!(
                    "{} at {config}: admitted {admitted} of limit {limit} with {errors} errors; expected {expect:?}",
                    limiter.name
                ));
            }
        }
        let row = limiters
            .lines()
            .find(|l| l.starts_with(&format!("{},", limiter.name)));
        assert!(
            row.is_some_and(|r| r.contains(",process,")),
            "{}: {limiters}",
            limiter.name
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
