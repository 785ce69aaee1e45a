//! The binary as a user runs it: clear errors, nothing lost, nothing left running.

mod common;

use assert_cmd::Command;
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
    let assert = ratelab()
        .args([
            "run",
            "race",
            "--profile",
            "quick",
            "--redis-server",
            "/nonexistent/redis-server",
            "--out",
        ])
        .arg(out.path())
        .assert()
        .failure();
    let err = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(
        err.contains("redis-server not found") && err.contains("apt-get install"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(race.join("race.csv")).unwrap(),
        "good results\n"
    );
}

#[test]
fn chart_redraws_from_csv_without_redis() {
    let dir = tempfile::tempdir().unwrap();
    let race = dir.path().join("race");
    std::fs::create_dir(&race).unwrap();
    std::fs::write(
        race.join("race.csv"),
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
    ratelab().arg("report").arg(dir.path()).assert().success();
    let report = std::fs::read_to_string(dir.path().join("REPORT.md")).unwrap();
    assert!(
        report.contains("admits exactly 200") && report.contains("holds"),
        "{report}"
    );
}

/// Starts a long race run and returns it with the pid of the redis-server it started.
fn long_run(out: &std::path::Path) -> (std::process::Child, u32) {
    let mut child = std::process::Command::new(common::ratelab_exe())
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
    let mut redis = Vec::new();
    let found = common::wait_for(Duration::from_secs(15), || {
        redis = common::redis_children(child.id());
        !redis.is_empty()
    });
    if !found {
        let _ = child.kill();
        panic!("ratelab never started a redis-server");
    }
    // Let it get into the trials.
    std::thread::sleep(Duration::from_millis(500));
    (child, redis[0])
}

#[test]
fn sigterm_stops_even_a_sigstopped_server_and_keeps_no_half_results() {
    let out = tempfile::tempdir().unwrap();
    let (mut child, redis) = long_run(out.path());
    // SAFETY: signals to processes this test started.
    unsafe {
        libc::kill(redis as i32, libc::SIGSTOP);
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let status = child.wait().unwrap();
    assert!(!status.success());
    assert!(
        common::wait_for(Duration::from_secs(5), || !common::pid_alive(redis)),
        "redis-server {redis} left behind"
    );
    assert!(
        !out.path().join("race").exists(),
        "an interrupted run must not commit results"
    );
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
