//! Every experiment's quick profile runs end to end through the binary, as CI and `ratelab all`
//! would run it, and leaves CSVs, meta.json, charts and a report that judges every claim.
//! Nothing here asserts a timing: the machine is shared and noisy.

mod common;

use assert_cmd::Command;

#[test]
fn all_quick_writes_every_experiment_and_a_report() {
    let out = tempfile::tempdir().unwrap();
    let assert = Command::new(common::ratelab_exe())
        .args(["all", "--profile", "quick", "--quiet", "--out"])
        .arg(out.path())
        .assert();
    let output = assert.get_output().clone();
    assert!(
        output.status.success(),
        "ratelab all failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for (id, csv, chart) in [
        ("race", "race.csv", "race.svg"),
        ("atomic", "atomic.csv", "atomic.svg"),
        ("cost", "cost.csv", "cost.svg"),
        ("latency", "latency.csv", "latency_cdf.svg"),
        ("calibrate", "calibrate.csv", "calibrate.svg"),
        ("outage", "outage.csv", "outage.svg"),
        ("tsmember", "tsmember.csv", "tsmember.svg"),
        ("window-edge", "window-edge.csv", "window-edge.svg"),
        ("memory", "memory.csv", "memory_cliff.svg"),
        ("bigkey", "bigkey.csv", "bigkey.svg"),
    ] {
        let dir = out.path().join(id);
        let rows = std::fs::read_to_string(dir.join(csv)).unwrap_or_default();
        assert!(rows.lines().count() > 1, "{id}/{csv} has no rows");
        assert!(dir.join("meta.json").exists(), "{id}/meta.json missing");
        assert!(dir.join(chart).exists(), "{id}/{chart} missing");
    }
    let report = std::fs::read_to_string(out.path().join("REPORT.md")).unwrap();
    for id in [
        "race",
        "atomic",
        "cost",
        "latency",
        "calibrate",
        "outage",
        "tsmember",
        "window-edge",
        "memory",
        "bigkey",
    ] {
        assert!(report.contains(&format!("## {id}")), "report lacks {id}");
    }
    // Exactness is physics, not timing: these must hold on any machine. So are the outage
    // claims about what happens, as opposed to how long it takes.
    for claim in [
        "Lua token bucket admits exactly 100",
        "Lua token bucket is exact under contention",
        "after SIGCONT the next check succeeded normally",
        "after a restart the client reloaded the script on its own",
        "only the K checks that trip it pay the full budget",
        "a unique member (a request id) admits exactly the limit",
        "the log is still a listpack at exactly the threshold",
        "one entry past the threshold is a skiplist",
    ] {
        let line = report
            .lines()
            .find(|l| l.contains(claim))
            .unwrap_or_default();
        assert!(line.ends_with("| holds |"), "{claim}: {line}");
    }
}
