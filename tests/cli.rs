//! The binary as a user runs it: clear errors, nothing lost, nothing left running.

use crate::common;

use assert_cmd::Command;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

fn ratelab() -> Command {
    Command::new(common::ratelab_exe())
}

#[test]
fn list_names_race_and_its_seeds() {
    let out = ratelab()
        .arg("list")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("race") && text.contains("000"), "{text}");
}

#[test]
fn unknown_parameter_is_a_clear_error_and_writes_nothing() {
    let out = tempfile::tempdir().unwrap();
    let assert = ratelab()
        .args([
            "run",
            "race",
            "--profile",
            "quick",
            "--set",
            "capacityy=5",
            "--out",
        ])
        .arg(out.path())
        .assert()
        .failure();
    let err = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(err.contains("unknown parameter `capacityy`"), "{err}");
    assert!(
        err.contains("valid names:") && err.contains("capacity") && err.contains("trials"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
}

/// A mistyped option is named with the fix: the option it is near, and that parameters are set
/// with `--set`; not clap's tip to pass it as a value (`-- --trails`).
#[test]
fn an_unknown_option_says_how_parameters_are_set() {
    for (option, near) in [("--trails", None), ("--profil", Some("--profile"))] {
        let assert = ratelab()
            .args(["run", "race", option, "3"])
            .assert()
            .failure();
        let output = assert.get_output();
        assert_eq!(output.status.code(), Some(2));
        let err = String::from_utf8_lossy(&output.stderr);
        assert!(err.contains(&format!("unknown option `{option}`")), "{err}");
        assert!(
            err.contains("--set name=value") && !err.contains("-- --"),
            "{err}"
        );
        if let Some(near) = near {
            assert!(err.contains(&format!("did you mean `{near}`?")), "{err}");
        }
    }
}

#[test]
fn out_naming_a_file_is_a_clear_error_and_the_file_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("results");
    std::fs::write(&file, "mine").unwrap();
    for command in ["run", "all"] {
        let mut cmd = ratelab();
        cmd.arg(command);
        if command == "run" {
            cmd.arg("race");
        }
        let assert = cmd
            .args(["--profile", "quick", "--out"])
            .arg(&file)
            .assert()
            .failure();
        let err = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
        assert!(
            err.contains("is a file, not a directory"),
            "{command}: {err}"
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
    }
}

#[test]
fn unknown_experiment_lists_valid_ids() {
    let assert = ratelab().args(["run", "raec"]).assert().failure();
    let err = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(
        err.contains("unknown experiment `raec`") && err.contains("race"),
        "{err}"
    );
}

#[test]
fn missing_redis_server_says_how_to_install_and_keeps_old_results() {
    let out = tempfile::tempdir().unwrap();
    let race = out.path().join("race");
    std::fs::create_dir(&race).unwrap();
    std::fs::write(race.join("race.csv"), "good results\n").unwrap();
    // A bare name not on PATH is a server to install; a path named with no file there, a typo.
    for (binary, says) in [
        (
            "redis-server-not-installed",
            ["redis-server not found", "apt-get install"],
        ),
        (
            "/nonexistent/redis-server",
            ["no file at `/nonexistent/redis-server`", "check the path"],
        ),
    ] {
        let assert = ratelab()
            .args([
                "run",
                "race",
                "--profile",
                "quick",
                "--redis-server",
                binary,
                "--out",
            ])
            .arg(out.path())
            .assert()
            .failure();
        let err = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
        assert!(says.iter().all(|s| err.contains(s)), "{binary}: {err}");
    }
    assert_eq!(
        std::fs::read_to_string(race.join("race.csv")).unwrap(),
        "good results\n"
    );
}

/// The `measured here` and verdict cells of the REPORT.md row of the claim whose text starts
/// with `claim`.
fn claim_cells(report: &str, claim: &str) -> (String, String) {
    let row = (report.lines())
        .find(|l| l.starts_with(&format!("| {claim}")))
        .unwrap_or_else(|| panic!("no claim `{claim}` in {report}"));
    let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
    let [.., measured, verdict] = cells[..] else {
        panic!("not a claim row: {row}");
    };
    (measured.to_string(), verdict.to_string())
}

#[test]
fn chart_redraws_from_csv_without_redis_and_the_report_judges_what_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    let race = dir.path().join("race");
    std::fs::create_dir(&race).unwrap();
    let csv = race.join("race.csv");
    std::fs::write(
        &csv,
        "scenario,strategy,processes,in_flight,trial,checks,admitted,denied,errors,limit,final_state,elapsed_ms\n\
         matrix,naive-bucket,1,2,0,1000,200,800,0,100,0,10.0\nmatrix,lua-bucket,1,2,0,1000,100,900,0,100,0,9.0\n",
    )
    .unwrap();
    ratelab()
        .arg("chart")
        .arg(dir.path())
        .env("PATH", "/nonexistent")
        .assert()
        .success();
    assert!(race.join("race.svg").exists() && race.join("race.png").exists());
    let report = || {
        ratelab().arg("report").arg(dir.path()).assert().success();
        std::fs::read_to_string(dir.path().join("REPORT.md")).unwrap()
    };
    let two_in_flight = "naive bucket, 1 process x 2 in flight";
    let lua = "Lua token bucket admits exactly 100";
    let text = report();
    let (measured, verdict) = claim_cells(&text, two_in_flight);
    assert!(measured.contains("200") && verdict == "holds", "{text}");
    assert_eq!(claim_cells(&text, lua).1, "holds", "{text}");

    // One more trial admitting 199: "exactly 200 in every trial" no longer holds, Lua still does.
    let mut rows = std::fs::read_to_string(&csv).unwrap();
    rows.push_str("matrix,naive-bucket,1,2,1,1000,199,801,0,100,0,10.0\n");
    std::fs::write(&csv, rows).unwrap();
    let text = report();
    let (measured, verdict) = claim_cells(&text, two_in_flight);
    assert!(measured.contains("199") && verdict != "holds", "{text}");
    assert_eq!(claim_cells(&text, lua).1, "holds", "{text}");
}

/// What a run in progress has flushed so far to `race.csv` in its staging directory, whole lines.
fn staged_rows(out: &Path, pid: u32) -> String {
    let csv = out.join(format!(".race.partial-{pid}/race.csv"));
    let text = std::fs::read_to_string(csv).unwrap_or_default();
    match text.rfind('\n') {
        Some(end) => text[..=end].to_string(),
        None => String::new(),
    }
}

/// Starts a long race run and returns it, once it has flushed its first trial's row (so the trials
/// are under way), with the pid of the redis-server it started.
fn long_run(out: &Path) -> (std::process::Child, u32) {
    std::fs::create_dir_all(tmp_of(out)).unwrap();
    let mut child = std::process::Command::new(common::ratelab_exe())
        .env("TMPDIR", tmp_of(out))
        .args([
            "run",
            "race",
            "--profile",
            "full",
            "--set",
            "trials=1000",
            "--out",
        ])
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A header and one row.
    let started = common::wait_for(Duration::from_secs(60), || {
        staged_rows(out, child.id()).lines().count() >= 2
    });
    let redis = common::redis_children(child.id());
    if !started || redis.is_empty() {
        let _ = child.kill();
        panic!("no trial row flushed (redis-servers {redis:?})");
    }
    (child, redis[0])
}

/// The temporary directory a harness started by `long_run` keeps its servers' files in.
fn tmp_of(out: &Path) -> std::path::PathBuf {
    out.join("tmp")
}

/// What ratelab left in `long_run`'s temporary directory.
fn leftovers(out: &Path) -> Vec<String> {
    (std::fs::read_dir(tmp_of(out)).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Every file in `dir`, by name, with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    (std::fs::read_dir(dir).unwrap())
        .map(|e| e.unwrap())
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).unwrap())
        })
        .collect()
}

/// docs/layout.md: "a failed or interrupted run leaves the previous results untouched (its partial rows go
/// to `DIR/.<id>.failed/`)".
#[test]
fn sigterm_stops_even_a_sigstopped_server_keeps_the_previous_results_and_sets_partial_rows_aside() {
    let out = tempfile::tempdir().unwrap();
    let previous = out.path().join("race");
    std::fs::create_dir(&previous).unwrap();
    let reference = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/reference/race");
    for name in ["race.csv", "meta.json"] {
        std::fs::copy(reference.join(name), previous.join(name)).unwrap();
    }
    let before = files(&previous);
    let (mut child, redis) = long_run(out.path());
    let flushed = staged_rows(out.path(), child.id());
    // SAFETY: signals to processes this test started.
    unsafe {
        libc::kill(redis as i32, libc::SIGSTOP);
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let status = child.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(130),
        "the interrupt handler ran: {status}"
    );
    assert!(
        common::wait_for(Duration::from_secs(5), || !common::pid_alive(redis)),
        "redis-server {redis} left behind"
    );
    // Compared whole; printed by name only (the files are large).
    let after = files(&previous);
    assert!(
        after == before,
        "an interrupted run touched the previous results: {:?}",
        after.keys().collect::<Vec<_>>()
    );
    let failed = std::fs::read_to_string(out.path().join(".race.failed/race.csv"))
        .expect("the partial rows set aside in .race.failed/");
    assert!(
        failed.starts_with(&flushed),
        "rows flushed before SIGTERM are missing from .race.failed/race.csv:\n{flushed}\n---\n{failed}"
    );
    let staging: Vec<String> = (std::fs::read_dir(out.path()).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("partial"))
        .collect();
    assert!(staging.is_empty(), "staging left behind: {staging:?}");
    let left = leftovers(out.path());
    assert!(left.is_empty(), "server directories left behind: {left:?}");
}

#[test]
fn sigkill_of_the_harness_takes_its_server_down() {
    let out = tempfile::tempdir().unwrap();
    let (mut child, redis) = long_run(out.path());
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        common::wait_for(Duration::from_secs(5), || !common::pid_alive(redis)),
        "redis-server {redis} outlived a SIGKILLed harness"
    );
    // Nothing runs to remove its directory now; the next ratelab does, as it starts a server.
    let orphans = leftovers(out.path());
    assert!(
        orphans
            .iter()
            .any(|name| name.starts_with("ratelab-redis-")),
        "the SIGKILLed harness's server directory: {orphans:?}"
    );
    ratelab()
        .env("TMPDIR", tmp_of(out.path()))
        .args([
            "run",
            "race",
            "--profile",
            "quick",
            "--set",
            "trials=1",
            "--quiet",
            "--out",
        ])
        .arg(out.path().join("next"))
        .assert()
        .success();
    let left = leftovers(out.path());
    assert!(
        left.is_empty(),
        "left after the next run: {left:?} (before it: {orphans:?})"
    );
}

#[test]
fn a_server_crash_mid_run_is_reported_with_its_log() {
    let out = tempfile::tempdir().unwrap();
    let (child, redis) = long_run(out.path());
    // SAFETY: a signal to the server the harness started.
    unsafe { libc::kill(redis as i32, libc::SIGKILL) };
    let output = child.wait_with_output().unwrap();
    assert!(!output.status.success());
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("died mid-run"), "{err}");
    assert!(!out.path().join("race").exists());
}

/// Runs `ratelab all --profile quick` into `out` with `args`, expects it to fail, returns stderr.
fn all_failing(out: &std::path::Path, args: &[&str]) -> String {
    let assert = ratelab()
        .args(["all", "--profile", "quick", "--quiet"])
        .args(args)
        .arg("--out")
        .arg(out)
        .assert()
        .failure();
    String::from_utf8_lossy(&assert.get_output().stderr).into_owned()
}

/// `all` runs on past a failed experiment, keeps the previous results of the ones that failed,
/// and still writes REPORT.md saying which failed and why; it exits non-zero naming them.
#[test]
fn all_survives_failures_and_reports_them() {
    let out = tempfile::tempdir().unwrap();
    let earlier = out.path().join("race");
    std::fs::create_dir(&earlier).unwrap();
    let reference = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results/reference/race");
    for name in ["race.csv", "trace.csv", "meta.json"] {
        std::fs::copy(reference.join(name), earlier.join(name)).unwrap();
    }
    let err = all_failing(out.path(), &["--redis-server", "/nonexistent/redis-server"]);
    assert!(
        err.contains("experiment `race` failed") && err.contains("experiment `bigkey` failed"),
        "{err}"
    );
    assert!(err.contains("experiments failed: race, atomic"), "{err}");
    let report = std::fs::read_to_string(out.path().join("REPORT.md")).expect("REPORT.md written");
    assert!(
        report.contains("- `memory`: failed: starting redis-server"),
        "{report}"
    );
    assert!(
        report.contains("The results below are from an earlier run"),
        "{report}"
    );
    let kept = std::fs::read(earlier.join("race.csv")).unwrap();
    assert_eq!(kept, std::fs::read(reference.join("race.csv")).unwrap());
    assert!(report
        .contains("| naive bucket, 1 process x 2 in flight, admits exactly 200 in every trial"));
}

/// Against a server the user names, experiments that must own the server are skipped up front
/// with their reason; the rest run (here they fail at once: nothing listens on port 1).
#[test]
fn all_against_a_users_server_skips_what_must_own_it() {
    let out = tempfile::tempdir().unwrap();
    let err = all_failing(out.path(), &["--redis-url", "redis://127.0.0.1:1/"]);
    for id in ["outage", "memory", "bigkey"] {
        assert!(
            err.contains(&format!(
                "skipping {id}: experiment `{id}` must own the server"
            )),
            "{err}"
        );
    }
    assert!(err.contains("experiment `race` failed"), "{err}");
    assert!(!err.contains("experiment `outage` failed"), "{err}");
    let report = std::fs::read_to_string(out.path().join("REPORT.md")).expect("REPORT.md written");
    assert!(
        report
            .contains("- `outage`: skipped: experiment `outage` must own the server (it SIGKILLs"),
        "{report}"
    );
    let run = ratelab()
        .args([
            "run",
            "memory",
            "--redis-url",
            "redis://127.0.0.1:1/",
            "--out",
        ])
        .arg(out.path())
        .assert()
        .failure();
    let err = String::from_utf8_lossy(&run.get_output().stderr).into_owned();
    assert!(
        err.contains("`memory` must own the server (it sets zset-max-listpack-entries"),
        "{err}"
    );
}

#[test]
fn report_sets_runs_side_by_side_and_names_a_missing_one() {
    let reference = concat!(env!("CARGO_MANIFEST_DIR"), "/results/reference");
    let out = common::succeeded(
        ratelab()
            .args(["report", reference, reference])
            .output()
            .unwrap(),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // What the claim accepts, then each run's verdict and mean.
    assert!(
        text.contains("| `race.lua-exact` | 100 | holds 100 (n = 90) | holds 100 (n = 90) |"),
        "{text}"
    );
    assert!(text.contains("0 claims change their verdict"), "{text}");
    let out = ratelab()
        .args(["report", reference, "/nonexistent/run"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("/nonexistent/run does not exist: name a results directory"));
}

/// `ratelab list | head` closes the pipe before ratelab is done: it must neither panic nor fail.
#[test]
fn a_reader_that_goes_away_is_not_an_error() {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let out = std::process::Command::new(common::ratelab_exe())
        .arg("list")
        .stdout(writer)
        .output()
        .expect("ratelab runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit {:?}: {stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// `run` ends with the verdicts of the experiment's claims, and its log says where the run is.
#[test]
fn run_ends_with_its_verdicts_and_says_where_it_is() {
    let out = tempfile::tempdir().unwrap();
    let run = ratelab()
        .args(["run", "replication", "--profile", "quick", "--out"])
        .arg(out.path())
        .output();
    let output = common::succeeded(run.unwrap());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let claims = ratelab::analysis::claims::all().unwrap();
    let n = claims
        .iter()
        .filter(|c| c.experiment == "replication")
        .count();
    assert!(
        stdout.contains(&format!("verdicts of replication's {n} claims: ")),
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("[1/1] replication (quick profile): planned "),
        "{stderr}"
    );
}

/// `report A B --out F.md` writes F.md and F.html; the claims whose verdict changes come first,
/// and every experiment's charts are set side by side.
#[test]
fn report_of_two_runs_lists_changed_verdicts_first_and_writes_html() {
    let reference = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/reference");
    let tmp = tempfile::tempdir().unwrap();
    let other = tmp.path().join("other");
    common::copy_tree(&reference, &other);
    // One Lua-bucket trial admits one more than its limit: race.lua-exact no longer holds.
    let csv = other.join("race/race.csv");
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let row = (lines.iter())
        .position(|l| l.starts_with("matrix,lua-bucket,"))
        .unwrap();
    let mut cells: Vec<String> = lines[row].split(',').map(str::to_string).collect();
    cells[6] = (cells[6].parse::<u64>().unwrap() + 1).to_string();
    lines[row] = cells.join(",");
    std::fs::write(&csv, lines.join("\n") + "\n").unwrap();
    let md = tmp.path().join("cmp.md");
    let report = ratelab()
        .arg("report")
        .arg(&reference)
        .arg(&other)
        .arg("--out")
        .arg(&md)
        .output();
    common::succeeded(report.unwrap());
    let text = std::fs::read_to_string(&md).unwrap();
    let changes = text
        .find("## Claims whose verdict changes")
        .expect("a changes section");
    let same = text
        .find("## Claims whose verdict is the same")
        .expect("a same section");
    let lua = text
        .find("| `race.lua-exact` |")
        .expect("race.lua-exact's row");
    assert!(changes < lua && lua < same, "{text}");
    // Its row: what the claim accepts, then each run's verdict and measurement in brief.
    let row = text[lua..].lines().next().unwrap_or_default();
    assert!(
        row.contains("| holds 100 (n = ") && row.contains("| DIFFERS 100.0"),
        "{row}"
    );
    let html = std::fs::read_to_string(md.with_extension("html")).unwrap();
    assert!(
        html.contains("Charts side by side") && html.contains("<svg"),
        "no charts"
    );
}

/// An unfinished run's partial rows (`.race.failed/`, beside a complete race run) are said by
/// `report`, which reads only the complete results.
#[test]
fn report_names_the_partial_rows_of_a_run_that_did_not_finish() {
    let out = tempfile::tempdir().unwrap();
    let race = out.path().join("race");
    std::fs::create_dir(&race).unwrap();
    let reference = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/reference/race");
    for file in std::fs::read_dir(&reference).unwrap().flatten() {
        std::fs::copy(file.path(), race.join(file.file_name())).unwrap();
    }
    std::fs::create_dir(out.path().join(".race.failed")).unwrap();
    let assert = ratelab().arg("report").arg(out.path()).assert().success();
    let err = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(
        err.contains("/.race.failed/ holds the partial rows of a run that did not finish"),
        "{err}"
    );
}
