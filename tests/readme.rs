//! The README's commands work as written. Every `ratelab` line of a shell block in README.md and
//! docs/*.md is checked: the cheap ones (`list`, `params`, `estimate`, `--version`) are run as
//! written; the one-minute first run is run as written (its output directory moved into a temporary
//! one); every other line (a usage line with placeholders, a 35-minute run) must name a command
//! whose `--help` lists each of its options. `./run_all.sh --profile quick` runs in quick_profiles.

use crate::common;

use assert_cmd::Command;
use std::path::Path;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Each `ratelab ...` line of the ```sh blocks of `file`, without its comment.
fn commands(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut out = Vec::new();
    let mut in_sh = false;
    for line in text.lines() {
        match line.trim() {
            "```sh" => in_sh = true,
            "```" => in_sh = false,
            l if in_sh && l.starts_with("ratelab ") => {
                out.push(l.split(" #").next().unwrap_or(l).trim().to_string());
            }
            _ => {}
        }
    }
    out
}

/// The README's and every docs page's commands, with where each is written.
fn documented() -> Vec<(String, String)> {
    let mut files = vec![repo().join("README.md")];
    let mut docs: Vec<_> = (std::fs::read_dir(repo().join("docs")).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let mut out = Vec::new();
    for file in files {
        let name = file.strip_prefix(repo()).unwrap().display().to_string();
        out.extend(commands(&file).into_iter().map(|c| (name.clone(), c)));
    }
    out
}

fn ratelab(args: &[&str]) -> std::process::Output {
    (Command::new(common::ratelab_exe()))
        .args(args)
        .current_dir(repo())
        .env_remove("RATELAB_REDIS_URL")
        .output()
        .unwrap()
}

#[test]
fn every_documented_command_runs_or_names_options_its_help_lists() {
    let commands = documented();
    let readme = commands.iter().filter(|(f, _)| f == "README.md").count();
    assert!(readme >= 10, "only {readme} ratelab lines in README.md");
    let mut problems = Vec::new();
    for (file, line) in &commands {
        let words: Vec<&str> = line.split_whitespace().skip(1).collect();
        let cheap = matches!(
            words.first(),
            Some(&"list" | &"params" | &"estimate" | &"--version")
        );
        let placeholder = words
            .iter()
            .any(|w| w.contains(['[', ']']) || is_placeholder(w));
        if cheap && !placeholder {
            let out = ratelab(&words);
            if !out.status.success() {
                let err = String::from_utf8_lossy(&out.stderr);
                problems.push(format!("{file}: `{line}` failed: {err}"));
            }
            continue;
        }
        let command: Vec<&str> = words
            .iter()
            .take_while(|w| !w.starts_with('-'))
            .take(1)
            .copied()
            .collect();
        let help = ratelab(&[command.as_slice(), &["--help"]].concat());
        let help_text = String::from_utf8_lossy(&help.stdout);
        if !help.status.success() {
            problems.push(format!(
                "{file}: `{line}`: `ratelab {} --help` fails",
                command.join(" ")
            ));
            continue;
        }
        for option in words
            .iter()
            .map(|w| w.trim_matches(['[', ']']))
            .filter(|w| w.starts_with("--"))
        {
            let option = option.split('=').next().unwrap_or(option);
            // A whole word of the help: `--profil` is not `--profile`.
            let listed = (help_text.split(|c: char| !(c.is_alphanumeric() || c == '-')))
                .any(|w| w == option);
            if !listed {
                problems.push(format!("{file}: `{line}`: {option} is not in its --help"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A word that stands for something the reader fills in: DIR, ID..., F.md, ARCHIVE_OR_DIR.
fn is_placeholder(word: &str) -> bool {
    let letters: String = word.chars().filter(|c| c.is_alphabetic()).collect();
    word == "F.md" || (!letters.is_empty() && letters.chars().all(|c| c.is_uppercase()))
}

#[test]
fn the_first_run_works_as_written() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let section = readme
        .split("## A first run")
        .nth(1)
        .expect("README has a first run");
    let lines = commands_in(section.split("\n## ").next().unwrap());
    let [run, report] = lines.as_slice() else {
        panic!("the first run is two commands, run and report: {lines:?}");
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("first");
    let as_here = |line: &str| -> Vec<String> {
        let line = line.replace("/tmp/first", &dir.display().to_string());
        line.split_whitespace()
            .skip(1)
            .map(str::to_string)
            .collect()
    };
    for line in [run, report] {
        let args = as_here(line);
        let out = ratelab(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(
            out.status.success(),
            "README's `{line}` failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for file in [
        "race/race.csv",
        "REPORT.md",
        "REPORT.html",
        "claims.csv",
        "claims.json",
    ] {
        assert!(dir.join(file).is_file(), "the first run left no {file}");
    }
    let report = std::fs::read_to_string(dir.join("REPORT.md")).unwrap();
    assert!(
        report.contains("[race](#race"),
        "no race row in the scoreboard"
    );
}

/// The `ratelab` lines of the shell blocks of a piece of markdown.
fn commands_in(markdown: &str) -> Vec<String> {
    let tmp = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tmp.path(), markdown).unwrap();
    commands(tmp.path())
}
