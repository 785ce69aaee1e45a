//! `ratelab params <id>`: every parameter with its type, its value in each profile, its unit and
//! meaning, read from the Params struct and the experiment's TOML (nothing listed twice), `--set`
//! checked as `run` checks it, and the planned time; `ratelab estimate` of named experiments.

use crate::common;

use ratelab::context::Profile;
use ratelab::experiments::{find, ALL};
use std::process::{Command, Output};

fn ratelab(args: &[&str]) -> Output {
    Command::new(common::ratelab_exe())
        .args(args)
        .output()
        .unwrap()
}

fn stdout(args: &[&str]) -> String {
    let out = ratelab(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {err}");
    String::from_utf8(out.stdout).unwrap()
}

/// The profile table `name` of an experiment's TOML.
fn profile_table(id: &str, name: &str) -> toml::Table {
    let doc: toml::Table = toml::from_str(find(id).unwrap().toml()).unwrap();
    doc[name].as_table().unwrap().clone()
}

#[test]
fn params_race_shows_every_parameter_with_type_values_unit_and_meaning() {
    let text = stdout(&["params", "race"]);
    let (quick, full) = (
        profile_table("race", "quick"),
        profile_table("race", "full"),
    );
    let lines: Vec<&str> = text.lines().collect();
    for (name, value) in &full {
        let i = (lines.iter())
            .position(|l| l.split_whitespace().next() == Some(name.as_str()))
            .unwrap_or_else(|| panic!("no row for `{name}`:\n{text}"));
        let row = lines[i];
        assert!(
            row.contains(&value.to_string()),
            "full value of {name}: {row}"
        );
        if quick[name] != *value {
            assert!(
                row.contains(&quick[name].to_string()),
                "quick value of {name}: {row}"
            );
        }
        let meaning = lines[i + 1];
        assert!(
            meaning.starts_with("    ") && !meaning.contains("not described"),
            "{name} has no meaning: {meaning}"
        );
    }
    let row = |name: &str| {
        *lines
            .iter()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap()
    };
    assert!(row("trials").contains("integer"), "{}", row("trials"));
    assert!(row("strategies").contains("list of Strategy"));
    assert!(row("window_ms").contains(" ms "), "{}", row("window_ms"));
    let budget = ratelab::analysis::budget::Budget::load().unwrap();
    let planned = budget.planned("full", "race").unwrap().round() as u64;
    let want = format!(
        "planned time of race, profile full: {}:{:02}",
        planned / 60,
        planned % 60
    );
    assert!(text.contains(&want), "{text}");
}

#[test]
fn params_checks_set_as_run_does_and_shows_the_values_it_gives() {
    let text = stdout(&["params", "race", "--profile", "quick", "--set", "trials=2"]);
    let header = text.lines().find(|l| l.starts_with("name ")).unwrap();
    assert!(header.ends_with("quick with --set"), "{header}");
    let trials = text.lines().find(|l| l.starts_with("trials ")).unwrap();
    assert!(trials.trim_end().ends_with(" 2"), "{trials}");
    assert!(
        text.contains("with --set trials=2 the time changes"),
        "{text}"
    );
    for (set, said) in [
        (
            "trails=2",
            "unknown parameter `trails` for race; valid names:",
        ),
        (
            "trials=many",
            "bad value for race parameter `trials` (many)",
        ),
        (
            "trials=0",
            "race: capacity, checks, trials and window_ms must be >= 1",
        ),
    ] {
        let out = ratelab(&["params", "race", "--set", set]);
        assert!(!out.status.success(), "{set}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(said), "{set}: {err}");
    }
}

/// Every experiment's parameters come from its Params struct (build.rs saw each one, so every
/// type is known) and its TOML (the same names in both profiles).
#[test]
fn every_experiment_describes_its_parameters_from_one_list() {
    for e in ALL {
        for profile in [Profile::Quick, Profile::Full] {
            let described = e.parameters(profile, &[]).unwrap();
            let mut names: Vec<&str> = described
                .parameters
                .iter()
                .map(|p| p.name.as_str())
                .collect();
            names.sort();
            let table = profile_table(e.id(), profile.name());
            let keys: Vec<&str> = table.keys().map(String::as_str).collect();
            assert_eq!(names, keys, "{}", e.id());
            for p in &described.parameters {
                assert_ne!(p.rust_type, "?", "{}: no type for {}", e.id(), p.name);
                assert_eq!(p.chosen, table[&p.name], "{} {}", e.id(), p.name);
            }
        }
    }
}

/// Every parameter says what it means: a doc comment on its Params field, or a comment in its
/// TOML.
#[test]
fn every_parameter_says_what_it_means() {
    // Every one: a parameter added without a meaning fails here.
    let described: Vec<&str> = ALL.iter().map(|e| e.id()).collect();
    for id in described {
        let all = find(id).unwrap().parameters(Profile::Full, &[]).unwrap();
        let missing: Vec<&str> = (all.parameters.iter())
            .filter(|p| p.meaning.is_none())
            .map(|p| p.name.as_str())
            .collect();
        assert!(missing.is_empty(), "{id}: no meaning for {missing:?}");
    }
}

#[test]
fn estimate_adds_up_the_experiments_named() {
    let text = stdout(&["estimate", "race", "cost", "--profile", "quick"]);
    let budget = ratelab::analysis::budget::Budget::load().unwrap();
    let total = budget.planned("quick", "race").unwrap() + budget.planned("quick", "cost").unwrap();
    let total = total.round() as u64;
    let ids: Vec<&str> = (text.lines().skip(1))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(ids, ["race", "cost", "total"], "{text}");
    // The quick plan is a debug build's: said, since it can exceed the full profile's.
    assert!(
        text.starts_with("planned wall time, profile quick (a debug build's"),
        "{text}"
    );
    assert!(
        text.contains(&format!("{}:{:02}", total / 60, total % 60)),
        "{text}"
    );
    // The scoreboard's plan: every check of the battery, and their total.
    let board = stdout(&["estimate", "scoreboard"]);
    for check in ["concurrency", "outage", "cluster", "total"] {
        assert!(
            board.lines().any(|l| l.trim_start().starts_with(check)),
            "{board}"
        );
    }
    let out = ratelab(&["estimate", "rcae"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown experiment `rcae`"));
    let out = ratelab(&["estimate", "--set", "trials=2"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--set is for one experiment"));
}
