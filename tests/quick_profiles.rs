//! Every experiment's quick profile runs end to end through the binary, started by the README's
//! own command (`./run_all.sh --profile quick --out DIR ID...`, with the binary this test was
//! built with instead of a release build), and leaves CSVs, meta.json, charts and a report that
//! judges every claim. Nothing here asserts a timing: the machine is shared and noisy.

use crate::common;

use assert_cmd::Command;
use ratelab::analysis::claims;
use std::path::Path;

// One test per experiment, so that nextest packs them beside the other tests (.config/nextest.toml
// gives the ones that keep a core busy two of its slots, the ones that wait on timers one) and no
// one test is the suite's long pole; the three shortest share a run, which also checks a run of
// several experiments (its progress lines count them). Together they run every experiment once.

#[test]
fn race() {
    quick(&["race"]);
}

#[test]
fn atomic() {
    quick(&["atomic"]);
}

#[test]
fn cost() {
    quick(&["cost"]);
}

#[test]
fn latency() {
    quick(&["latency"]);
}

#[test]
fn calibrate() {
    quick(&["calibrate"]);
}

#[test]
fn outage() {
    quick(&["outage"]);
}

#[test]
fn tsmember() {
    quick(&["tsmember"]);
}

#[test]
fn window_edge() {
    quick(&["window-edge"]);
}

#[test]
fn memory() {
    quick(&["memory"]);
}

#[test]
fn bigkey() {
    quick(&["bigkey"]);
}

#[test]
fn scripts() {
    let out = quick(&["scripts"]);
    scripts_rows(&out.path().join("scripts"));
}

#[test]
fn eviction() {
    quick(&["eviction"]);
}

#[test]
fn failover() {
    quick(&["failover"]);
}

#[test]
fn chaos() {
    quick(&["chaos"]);
}

#[test]
fn pods() {
    quick(&["pods"]);
}

#[test]
fn libraries() {
    quick(&["libraries"]);
}

#[test]
fn refill_replication_cluster() {
    quick(&["refill", "replication", "cluster"]);
}

#[test]
fn the_tests_run_every_experiment_once() {
    let source = include_str!("quick_profiles.rs");
    for e in ratelab::experiments::ALL {
        let named = format!("\"{}\"", e.id());
        let quick_calls = source.split("quick(&[").skip(1);
        let groups =
            quick_calls.filter(|call| call.split("])").next().unwrap_or("").contains(&named));
        assert_eq!(groups.count(), 1, "{} in exactly one test", e.id());
    }
}

/// Each experiment's CSV and chart, as its quick profile writes them.
const WRITES: &[(&str, &str, &str)] = &[
    ("race", "race.csv", "race.svg"),
    ("atomic", "atomic.csv", "atomic.svg"),
    ("cost", "cost.csv", "cost.svg"),
    ("latency", "latency.csv", "latency_cdf.svg"),
    ("calibrate", "calibrate.csv", "calibrate.svg"),
    ("outage", "outage.csv", "outage.svg"),
    ("refill", "refill.csv", "refill.svg"),
    ("tsmember", "tsmember.csv", "tsmember.svg"),
    ("window-edge", "window-edge.csv", "window-edge.svg"),
    ("memory", "memory.csv", "memory_cliff.svg"),
    ("bigkey", "bigkey.csv", "bigkey.svg"),
    ("replication", "replication.csv", "replication.svg"),
    ("scripts", "survival.csv", "cost_cpu.svg"),
    ("eviction", "keys.csv", "eviction.svg"),
    ("failover", "failover.csv", "failover.svg"),
    ("cluster", "cluster.csv", "outcome.svg"),
    ("chaos", "chaos.csv", "chaos.svg"),
    ("pods", "pods.csv", "pods.svg"),
    ("libraries", "phases.csv", "race.svg"),
];

/// Exactness is physics, not timing: these must hold on any machine. So are the outage claims
/// about what happens, as opposed to how long it takes.
const PHYSICS: &[&str] = &[
    "race.control",
    "race.lua-exact",
    "race.incr-window-exact",
    "race.seed001-allowed",
    "refill.denial-refresh-keeps-the-rate",
    "refill.no-refresh-hands-a-fresh-bucket",
    "refill.no-refresh-fresh-bucket-is-full",
    "refill.no-refresh-harmless-with-a-full-refill-expiry",
    "refill.skewed-clocks-wrong-rate",
    "refill.redis-clock-keeps-the-rate",
    "refill.one-caller-clock-keeps-the-rate",
    "atomic.lua-exact-over",
    "atomic.lua-exact-legit",
    "outage.resumed-next-check",
    "outage.restart-next-check",
    "outage.restart-script-reload",
    "outage.fail-open-dead",
    "outage.fail-closed-dead",
    "outage.fail-open-hung",
    "outage.fail-closed-hung",
    "outage.breaker-k-pay",
    "outage.full-budget-only-k",
    "outage.probe-paid-by-no-user",
    "outage.background-probe-sent",
    "outage.user-probe-pays-probe-budget",
    "tsmember.unique-exact",
    "tsmember.micros-exact",
    "memory.listpack-up-to-threshold",
    "memory.cliff-moves",
    "replication.buckets-match",
    "replication.no-script-on-replica",
    "replication.effects-arrive",
    "replication.absolute-expiry",
    "scripts.restart-evalsha-noscript",
    "scripts.replica-evalsha-noscript",
    "scripts.functions-survive-rdb",
    "scripts.functions-replicated",
    "scripts.fallback-eval-round-trips",
    "scripts.fallback-eval-decides",
    "scripts.fallback-load-round-trips",
    "scripts.no-fallback-errors",
    "scripts.flush-fallback-no-errors",
    "cluster.same-node-works",
    "cluster.fails-only-across-nodes",
    "cluster.one-redis-passes",
    "cluster.declared-works",
    "cluster.hashtag-works",
    "cluster.bucket-exact",
    "chaos.5s-unavailable",
    "chaos.unrecorded-counter-flat",
    "chaos.after-enforced",
    "chaos.after-decided-by-redis",
    "chaos.after-stuck-open",
    "chaos.error-path-rejects",
    "chaos.fail-closed-rejects",
    "chaos.reply-drop-redis-still-decides",
    "chaos.partition-redis-runs-nothing",
    "chaos.held-checks-run-on-heal",
    "chaos.outbound-drop-times-out",
    "chaos.direction-unseen-by-client",
    "pods.nothing-lost",
    "libraries.node-redis-lua-exact",
    "libraries.node-redis-hung-every-check-waits",
    "libraries.node-redis-queue-dead-waits",
];

/// `ids`' quick profiles run by the README's own command (`./run_all.sh --profile quick --out DIR
/// ID...`): each leaves its CSV, meta.json and chart, the report a section, every claim a verdict
/// and every claim of physics holds, shown so in REPORT.md.
fn quick(ids: &[&str]) -> tempfile::TempDir {
    let out = tempfile::tempdir().unwrap();
    let assert = Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/run_all.sh"))
        .args(["--profile", "quick", "--out"])
        .arg(out.path())
        .args(ids)
        .env("RATELAB_BIN", common::ratelab_exe())
        .env_remove("RATELAB_REDIS_URL")
        .assert();
    let output = assert.get_output().clone();
    assert!(
        output.status.success(),
        "./run_all.sh --profile quick --out DIR {ids:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    progress_at_least_every_tick(&String::from_utf8_lossy(&output.stderr), ids.len());
    // run_all.sh printed the plan of the profile it was given, not of the full one.
    let plan = String::from_utf8_lossy(&output.stdout);
    assert!(
        plan.contains("profile quick"),
        "no quick plan printed:\n{plan}"
    );
    let report = std::fs::read_to_string(out.path().join("REPORT.md")).unwrap();
    for id in ids {
        let (_, csv, chart) = WRITES
            .iter()
            .find(|w| w.0 == *id)
            .expect("a known experiment");
        let dir = out.path().join(id);
        let rows = std::fs::read_to_string(dir.join(csv)).unwrap_or_default();
        assert!(rows.lines().count() > 1, "{id}/{csv} has no rows");
        assert!(dir.join("meta.json").exists(), "{id}/meta.json missing");
        assert!(dir.join(chart).exists(), "{id}/{chart} missing");
        assert!(report.contains(&format!("## {id}")), "report lacks {id}");
    }
    let claims = claims::all().unwrap();
    let mine: Vec<_> = (claims.iter())
        .filter(|c| ids.contains(&c.experiment.as_str()))
        .collect();
    // Every claim of these experiments gets a verdict from the quick profile: a point the claim
    // needs and the quick profile lacks would otherwise pass as "no data" in CI.
    let mut judging = claims::Judging::default();
    for claim in &mine {
        let v = judging.judge(claim, &out.path().join(&claim.experiment));
        assert!(v.holds.is_some(), "{}: {}", claim.id, v.measured);
    }
    for claim in mine.iter().filter(|c| PHYSICS.contains(&c.id.as_str())) {
        let id = &claim.id;
        let v = judging.judge(claim, &out.path().join(&claim.experiment));
        assert_eq!(v.holds, Some(true), "{id}: {}", v.measured);
        // The claim's cell is its text, then the seed's words it judges when it quotes them.
        let cell = [
            format!("| {} |", claim.text),
            format!("| {}<br/>", claim.text),
        ];
        let line = (report.lines()).find(|l| cell.iter().any(|c| l.starts_with(c.as_str())));
        assert!(
            line.is_some_and(|l| l.ends_with("| holds |")),
            "{id} in REPORT.md: {line:?}"
        );
    }
    out
}

/// scripts' quick rows: every mode after every event (6 x 7), a steady state with no fallback and
/// no error in any mode, its five charts and a summary that names each restart.
fn scripts_rows(dir: &Path) {
    let rows = |name: &str| -> Vec<std::collections::HashMap<String, String>> {
        let mut reader = csv::Reader::from_path(dir.join(name)).unwrap();
        reader.deserialize().map(Result::unwrap).collect()
    };
    let survival = rows("survival.csv");
    assert_eq!(survival.len(), 42, "every mode after every event");
    for column in [
        "mode",
        "fallback",
        "event",
        "first_outcome",
        "error",
        "round_trips",
        "first_call_us",
    ] {
        assert!(
            survival[0].contains_key(column),
            "survival.csv lacks {column}"
        );
    }
    for row in rows("cost.csv") {
        assert_eq!(
            (row["errors"].as_str(), row["noscript"].as_str()),
            ("0", "0"),
            "{row:?}"
        );
    }
    assert!(rows("flush.csv").len() > 1, "flush.csv has rows");
    let scripts = ratelab::experiments::find("scripts").unwrap();
    assert_eq!(
        scripts.charts(dir).unwrap().len(),
        10,
        "five charts, SVG and PNG"
    );
    let summary = scripts.summary(dir).unwrap();
    assert!(summary.contains("| restart-rdb |"), "{summary}");
}

/// The log of a run says where it is at least every tick: each experiment's start line and the
/// lines while it runs carry the run's time so far (`run M:SS so far`), and no two follow each
/// other by more than a tick (plus a few seconds for a thread woken late on a loaded machine).
fn progress_at_least_every_tick(stderr: &str, n: usize) {
    let so_far: Vec<u64> = (stderr.lines())
        .filter_map(|l| l.split_once("; run ")?.1.split_once(" so far"))
        .map(|(clock, _)| {
            let (m, s) = clock.split_once(':').expect("M:SS");
            m.parse::<u64>().unwrap() * 60 + s.parse::<u64>().unwrap()
        })
        .collect();
    let of_n = format!("/{n}] ");
    let starts = (stderr.lines()).filter(|l| l.contains(&of_n) && l.contains(" profile): "));
    assert_eq!(starts.count(), n, "a start line per experiment:\n{stderr}");
    let tick = ratelab::progress::TICK.as_secs();
    for pair in so_far.windows(2) {
        assert!(
            pair[1] >= pair[0] && pair[1] - pair[0] <= tick + 5,
            "no progress between {} s and {} s of the run:\n{stderr}",
            pair[0],
            pair[1]
        );
    }
}
