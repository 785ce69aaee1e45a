//! Custom limiters (`--limiter MANIFEST`) against real redis-servers: a manifest of each of
//! ratelab's own scripts decides exactly as the built-in strategy; a broken manifest or a script
//! that errors is refused before any measurement, naming the manifest line and the reply.

use crate::common;

use ratelab::experiments::{find, ExperimentError};
use ratelab::limiter::custom::{self, CustomLimiter};
use ratelab::limiter::{unix_ms, Decision, LimitSpec, Limiter, Strategy};
use std::path::{Path, PathBuf};
use std::time::Instant;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/limiters")
        .join(name)
}

/// Every example manifest of a built-in script, with the strategy it must reproduce.
const BUILTIN_MANIFESTS: &[(&str, Strategy)] = &[
    ("ratelab-bucket.toml", Strategy::LuaBucket),
    ("ratelab-window.toml", Strategy::LuaWindow),
    ("ratelab-log.toml", Strategy::LuaLog),
    ("ratelab-swc.toml", Strategy::LuaSwc),
    ("ratelab-gcra.toml", Strategy::LuaGcra),
];

fn load(name: &str) -> Strategy {
    custom::register(custom::load(&example(name)).expect("example manifest loads"))
}

fn spec(capacity: u64) -> LimitSpec {
    LimitSpec {
        capacity,
        window_ms: 600_000,
        window_origin_ms: unix_ms(),
        ..LimitSpec::default()
    }
}

/// One check of each limiter in turn on its own key, `checks` times; each pair with the ms that
/// passed between the two calls' starts, which bounds how far a time-based retry hint may differ.
fn paired(
    url: &str,
    a: &Limiter,
    b: &Limiter,
    keys: (&str, &str),
    checks: u64,
) -> Vec<(Decision, Decision, u64)> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = redis::Client::open(url).unwrap();
        let mut con = client.get_multiplexed_async_connection().await.unwrap();
        let mut out = Vec::new();
        for _ in 0..checks {
            let started = Instant::now();
            let da = a.check(&mut con, keys.0).await.expect("built-in check");
            let db = b.check(&mut con, keys.1).await.expect("custom check");
            out.push((da, db, started.elapsed().as_millis() as u64 + 1));
        }
        out
    })
}

#[test]
fn a_manifest_of_each_builtin_script_decides_exactly_as_the_builtin() {
    let server = common::start_server();
    let mut con = server.connection().unwrap();
    for &(file, builtin) in BUILTIN_MANIFESTS {
        let strategy = load(file);
        let spec = spec(20);
        let (a, b) = (Limiter::new(builtin, spec), Limiter::new(strategy, spec));
        // The same script text: the same SHA-1 EVALSHA names it by.
        assert_eq!(
            a.script().map(|s| s.1.to_string()),
            b.script().map(|s| s.1.to_string()),
            "{file}"
        );
        assert_eq!(strategy.reference(), builtin, "{file}");
        let keys = (format!("exact:{builtin}"), format!("exact:{strategy}"));
        let pairs = paired(&server.url(), &a, &b, (&keys.0, &keys.1), 30);
        for (i, (da, db, ms)) in pairs.iter().enumerate() {
            assert_eq!(
                (da.allowed, da.remaining),
                (db.allowed, db.remaining),
                "{file} check {i}"
            );
            if i == 0 {
                // The built-in's first call cached the script: the custom one found it there.
                assert!(
                    da.noscript && !db.noscript && db.redis_calls == 1,
                    "{file}: {da:?} {db:?}"
                );
            } else {
                assert_eq!(
                    db.redis_calls, da.redis_calls,
                    "{file} check {i}: {da:?} {db:?}"
                );
            }
            // Retry hints of strategies that read the clock move with it, by at most the time
            // between the pair's calls now and when the keys' first entries were written.
            assert!(
                da.retry_ms.abs_diff(db.retry_ms) <= ms + pairs[0].2,
                "{file} check {i}: {da:?} vs {db:?}"
            );
        }
        assert_eq!(pairs.iter().filter(|p| p.0.allowed).count(), 20, "{file}");
        // The state they leave is the same too (read with the built-in's own command).
        // GCRA's state is a time in µs, which moves between the two calls.
        if builtin != Strategy::LuaGcra {
            let mut state = |key: &str| {
                let cmd = match builtin {
                    Strategy::LuaSwc => redis::cmd("HMGET")
                        .arg(key)
                        .arg("w")
                        .arg("cur")
                        .arg("prev")
                        .take(),
                    _ => builtin.state_command(key, &spec),
                };
                format!("{:?}", cmd.query::<redis::Value>(&mut con).unwrap())
            };
            assert_eq!(state(&keys.0), state(&keys.1), "{file}");
        }
    }
}

#[test]
fn race_with_the_builtin_manifests_admits_what_the_builtins_admit() {
    let out = tempfile::tempdir().unwrap();
    let mut ctx = common::ctx(out.path());
    ctx.limiters = BUILTIN_MANIFESTS.iter().map(|(f, _)| load(f)).collect();
    let builtins: Vec<String> = BUILTIN_MANIFESTS
        .iter()
        .map(|(_, s)| format!("\"{s}\""))
        .collect();
    ctx.sets = vec![
        ("configs".into(), r#"["1x1", "1x8", "4x8"]"#.into()),
        ("trials".into(), "1".into()),
        ("strategies".into(), format!("[{}]", builtins.join(", "))),
    ];
    let dir = find("race").unwrap().run(&ctx).expect("race runs");
    let rows: Vec<ratelab::experiments::race::RaceRow> =
        ratelab::analysis::table::read_typed(&dir.join("race.csv")).unwrap();
    let matrix: Vec<_> = rows.iter().filter(|r| r.scenario == "matrix").collect();
    for &(file, builtin) in BUILTIN_MANIFESTS {
        let custom = ctx
            .limiters
            .iter()
            .find(|s| s.reference() == builtin)
            .unwrap();
        for config in ["1x1", "1x8", "4x8"] {
            let at = |s: Strategy| {
                (matrix.iter())
                    .find(|r| {
                        r.strategy == s && format!("{}x{}", r.processes, r.in_flight) == config
                    })
                    .map(|r| (r.admitted, r.denied, r.errors))
            };
            assert!(at(builtin).is_some(), "{builtin} at {config}");
            assert_eq!(at(*custom), at(builtin), "{file} at {config}");
            assert_eq!(at(builtin).unwrap().0, 100, "{builtin} at {config}");
        }
    }
    let meta = std::fs::read_to_string(dir.join("meta.json")).unwrap();
    assert!(
        meta.contains("custom limiter ratelab-bucket"),
        "the probe is noted: {meta}"
    );
}

/// A manifest written into a temp dir beside a script.
fn broken(dir: &Path, name: &str, script: &str, allowed: &str) -> CustomLimiter {
    std::fs::write(dir.join(format!("{name}.lua")), script).unwrap();
    let text = format!(
        "name = \"{name}\"\nalgorithm = \"token-bucket\"\nscript = \"{name}.lua\"\nkeys = [\"{{key}}\"]\n\
         args = [\"{{limit}}\"]\nallowed = \"{allowed}\"\n"
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    custom::load(&path).unwrap()
}

#[test]
fn a_reply_that_does_not_fit_and_a_failing_script_are_refused_before_any_result() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let cases = [
        (
            broken(tmp.path(), "short-reply", "return {1, 2}", "element 3 == 1"),
            vec![
                "short-reply.toml line 6",
                "no element 3",
                "[(integer) 1, (integer) 2]",
            ],
        ),
        (
            broken(
                tmp.path(),
                "erroring",
                "return redis.call('NOSUCHCOMMAND')",
                "reply == 1",
            ),
            vec![
                "erroring.toml",
                "probe call 1",
                "Unknown Redis command",
                "erroring.lua",
            ],
        ),
        (
            broken(tmp.path(), "inverted", "return {1}", "element 0 == 0"),
            vec![
                "inverted.toml line 6",
                "first call on a fresh key was read as denied",
            ],
        ),
    ];
    for (limiter, needles) in cases {
        let mut ctx = common::ctx(&out);
        ctx.limiters = vec![custom::register(limiter)];
        ctx.sets = vec![("trials".into(), "1".into())];
        let err = find("race").unwrap().run(&ctx).unwrap_err();
        assert!(matches!(err, ExperimentError::Manifest(_)), "{err}");
        let text = err.to_string();
        for needle in needles {
            assert!(text.contains(needle), "`{needle}` missing from: {text}");
        }
        assert!(!out.join("race").exists(), "no partial results: {text}");
    }
}

#[test]
fn experiments_that_do_not_take_custom_limiters_say_which_do() {
    let tmp = tempfile::tempdir().unwrap();
    let mut ctx = common::ctx(tmp.path());
    ctx.limiters = vec![load("incr-inside.toml")];
    let err = find("memory").unwrap().prepare(&ctx).unwrap_err();
    assert!(
        err.to_string()
            .contains("does not take --limiter; these do: race"),
        "{err}"
    );
}

/// Runs experiment `id` with the two example limiters whose verdicts differ most (a key built
/// inside the script; a GCRA function) and the `sets` that keep it short; returns its directory.
fn run_with_examples(id: &str, out: &Path, sets: &[(&str, &str)]) -> PathBuf {
    let limiters = vec![load("incr-inside.toml"), load("gcra-time.toml")];
    common::run_with_limiters(id, out, limiters, sets)
}

#[test]
fn atomic_latency_and_cost_measure_custom_limiters_beside_their_references() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path();
    let dir = run_with_examples(
        "atomic",
        out,
        &[
            ("configs", r#"["4x8"]"#),
            ("trials", "1"),
            ("strategies", r#"["lua-window"]"#),
            ("capacities", "[100]"),
        ],
    );
    let rows: Vec<ratelab::experiments::atomic::AtomicRow> =
        ratelab::analysis::table::read_typed(&dir.join("atomic.csv")).unwrap();
    for name in ["incr-inside", "gcra-time"] {
        let row = rows.iter().find(|r| r.strategy.name() == name).unwrap();
        // One script per check on one key: exactly the limit, whatever the concurrency.
        assert_eq!((row.admitted, row.errors), (100, 0), "{name}");
    }
    run_with_examples(
        "latency",
        out,
        &[
            ("runs", "1"),
            ("requests", "200"),
            ("warmup", "20"),
            ("strategies", r#"["lua-window", "lua-gcra"]"#),
        ],
    );
    run_with_examples(
        "cost",
        out,
        &[
            ("runs", "1"),
            ("run_seconds", "0.3"),
            ("warmup_seconds", "0.1"),
            ("strategies", r#"["lua-window"]"#),
            ("log_limits", "[]"),
            ("hot_key_strategies", "[]"),
        ],
    );
    let (verdict, measured) = common::limiter_claim(out, "limiter.incr-inside.atomic.exact");
    assert_eq!(verdict, "holds", "{measured}");
    assert!(common::mutation::every_limiter_claim_can_hold_and_fail(out) >= 2);
    // lua-gcra has no uniform variant in these sets: it is measured as the reference.
    let cpu = common::custom_limiter_cell(out, "gcra-time", "Redis CPU / decision vs reference");
    assert!(
        cpu.contains("of lua-gcra (") && cpu.contains("µs)"),
        "{cpu}"
    );
    let p50 = common::custom_limiter_cell(out, "incr-inside", "latency p50 vs reference");
    assert!(p50.contains("of lua-window"), "{p50}");
}

#[test]
fn window_edge_and_tsmember_show_the_edge_burst_and_no_collisions_for_a_time_script() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path();
    let dir = run_with_examples(
        "window-edge",
        out,
        &[("trials", "1"), ("strategies", r#"["lua-gcra"]"#)],
    );
    let rows: Vec<ratelab::experiments::window_edge::WindowEdgeRow> =
        ratelab::analysis::table::read_typed(&dir.join("window-edge.csv")).unwrap();
    let of = |name: &str| rows.iter().find(|r| r.strategy.name() == name).unwrap();
    // Two bursts of the limit around a boundary of its own windows: a fixed window takes both
    // (less what misses the boundary on a loaded machine); a GCRA only what refills meanwhile.
    let inside = of("incr-inside");
    assert!(inside.admitted > inside.limit, "{inside:?}");
    let gcra = of("gcra-time");
    assert!(
        gcra.max_admitted_in_1s as f64 <= gcra.smooth_bound + 1.0,
        "{gcra:?}"
    );
    run_with_examples(
        "tsmember",
        out,
        &[
            ("trials", "1"),
            ("rates", "[1000.0]"),
            ("batch_members", "[]"),
            ("members", r#"["unique-id"]"#),
            ("clocks", r#"["redis"]"#),
            ("flat_out_trials", "0"),
        ],
    );
    assert!(common::custom_limiter_cell(
        out,
        "gcra-time",
        "colliding timestamps: admitted / exact"
    )
    .contains("within the limit"));
    assert!(
        common::custom_limiter_cell(out, "incr-inside", "window edge: most in 1 s / limit")
            .contains("burst at the edge")
    );
    // Each within what its algorithm allows: a fixed window's two windows, a GCRA's refill.
    for id in [
        "limiter.incr-inside.window-edge.edge-bounded",
        "limiter.gcra-time.window-edge.edge-bounded",
        "limiter.gcra-time.tsmember.at-most-exact",
    ] {
        let (verdict, measured) = common::limiter_claim(out, id);
        assert_eq!(verdict, "holds", "{id}: {measured}");
    }
    assert!(common::mutation::every_limiter_claim_can_hold_and_fail(out) >= 4);
}

#[test]
fn cluster_and_scripts_tell_a_key_built_inside_from_a_declared_function() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path();
    let dir = run_with_examples(
        "cluster",
        out,
        &[
            ("users", "60"),
            ("variants", r#"["declared"]"#),
            ("bucket_users", "30"),
            ("bucket_requests", "15"),
        ],
    );
    let rows: Vec<ratelab::experiments::cluster::CustomBucketRow> =
        ratelab::analysis::table::read_typed(&dir.join("custom.csv")).unwrap();
    let of = |name: &'static str| rows.iter().filter(move |r| r.strategy.name() == name);
    // The built key lives on another node for most users of a 3-node cluster; each such user
    // fails with seed 002's error, the rest pass, and the declared GCRA never fails.
    let failed: Vec<_> = of("incr-inside").filter(|r| r.errors > 0).collect();
    assert!(!failed.is_empty() && failed.len() < 30, "{}", failed.len());
    assert!(
        failed.iter().all(|r| r.non_local_key == 1),
        "{:?}",
        failed[0]
    );
    assert!(
        of("gcra-time").all(|r| r.errors == 0 && r.admitted <= r.limit),
        "gcra-time on the cluster"
    );
    run_with_examples(
        "scripts",
        out,
        &[
            ("modes", r#"["evalsha-eval"]"#),
            ("runs", "1"),
            ("run_seconds", "0.2"),
            ("warmup_seconds", "0.1"),
            ("flush_modes", r#"["evalsha-eval"]"#),
            ("flush_before_ms", "100"),
            ("flush_after_ms", "200"),
            ("reload_after_ms", "100"),
            ("survival_modes", r#"["evalsha-eval"]"#),
            (
                "events",
                r#"["restart-no-persistence", "restart-rdb", "script-flush"]"#,
            ),
        ],
    );
    let survival = common::custom_limiter_cell(out, "gcra-time", "NOSCRIPT survival");
    // A function survives a restart with an RDB and SCRIPT FLUSH; without persistence it is
    // reloaded by its fallback.
    assert!(
        survival.starts_with("fcall-load: survives 3 of 3"),
        "{survival}"
    );
    assert!(
        survival.contains("reloaded after restart-no-persistence") && !survival.contains("rdb"),
        "{survival}"
    );
    let survival = common::custom_limiter_cell(out, "incr-inside", "NOSCRIPT survival");
    assert!(
        survival.contains("reloaded after restart-no-persistence, restart-rdb, script-flush"),
        "{survival}"
    );
    assert!(
        common::custom_limiter_cell(out, "incr-inside", "cluster: users failing")
            .contains("(non local key)")
    );
    let (verdict, measured) =
        common::limiter_claim(out, "limiter.incr-inside.cluster.no-user-fails");
    assert_eq!(verdict, "DIFFERS", "{measured}");
    let (verdict, measured) = common::limiter_claim(out, "limiter.gcra-time.cluster.no-user-fails");
    assert_eq!(verdict, "holds", "{measured}");
    // Each event's claim, for both: a fallback reloads what the event took.
    for name in ["gcra-time", "incr-inside"] {
        let id = format!("limiter.{name}.scripts.restart-no-persistence-decides-again");
        assert_eq!(common::limiter_claim(out, &id).0, "holds", "{name}");
    }
    assert!(common::mutation::every_limiter_claim_can_hold_and_fail(out) >= 6);
}

#[test]
fn the_binary_runs_a_manifest_and_refuses_a_broken_one_or_an_experiment_without_limiters() {
    let tmp = tempfile::tempdir().unwrap();
    let ratelab = || assert_cmd::Command::new(common::ratelab_exe());
    let out = tmp.path().join("out");
    ratelab()
        .args([
            "run",
            "race",
            "--profile",
            "quick",
            "--quiet",
            "--set",
            r#"configs=["1x2"]"#,
        ])
        .args(["--set", "trials=1", "--limiter"])
        .arg(example("zset-caller-time.toml"))
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let csv = std::fs::read_to_string(out.join("race/race.csv")).unwrap();
    assert!(
        csv.contains("\nmatrix,zset-caller-time,1,2,0,1000,"),
        "{csv}"
    );
    // The report, from the CSVs alone (no manifest), names it in the custom limiters' table.
    ratelab().arg("report").arg(&out).assert().success();
    let report = std::fs::read_to_string(out.join("REPORT.md")).unwrap();
    assert!(report.contains("| zset-caller-time |"), "{report}");

    let bad = tmp.path().join("bad.toml");
    let text = std::fs::read_to_string(example("incr-inside.toml")).unwrap();
    std::fs::write(tmp.path().join("incr_inside.lua"), "return 1").unwrap();
    std::fs::write(&bad, text.replace("{window_s}", "{window_sec}")).unwrap();
    let empty = tmp.path().join("empty");
    let assert = ratelab()
        .args(["run", "race", "--profile", "quick", "--limiter"])
        .arg(&bad)
        .arg("--out")
        .arg(&empty)
        .assert()
        .failure();
    let err = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    let line = text.lines().position(|l| l.contains("{window_s}")).unwrap() + 1;
    assert!(
        err.contains(&format!("bad.toml line {line}")) && err.contains("`{window_sec}`"),
        "{err}"
    );
    assert!(!empty.exists(), "nothing written");

    let assert = ratelab()
        .args(["run", "memory", "--profile", "quick", "--limiter"])
        .arg(example("gcra-time.toml"))
        .arg("--out")
        .arg(&empty)
        .assert()
        .failure();
    let err = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    let takers =
        "race, atomic, cost, latency, outage, tsmember, window-edge, scripts, cluster, chaos, pods";
    assert!(
        err.contains(&format!(
            "`memory` does not take --limiter; these do: {takers}"
        )),
        "{err}"
    );
}

#[test]
fn a_function_library_is_never_loaded_into_a_users_server() {
    let tmp = tempfile::tempdir().unwrap();
    let mut ctx = common::ctx(tmp.path());
    ctx.redis_url = Some("redis://127.0.0.1:1/".into());
    ctx.limiters = vec![load("gcra-time.toml")];
    let err = find("race").unwrap().prepare(&ctx).unwrap_err().to_string();
    assert!(
        err.contains("gcra-time is called with FCALL") && err.contains("--redis-url"),
        "{err}"
    );
    ctx.limiters = vec![load("incr-inside.toml")];
    assert!(find("race").unwrap().prepare(&ctx).is_ok());
}

/// docs/limiters.md names the experiments that take `--limiter`: exactly the registry's.
#[test]
fn the_docs_name_every_experiment_that_takes_a_limiter() {
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/limiters.md")).unwrap();
    let list = docs.split("that take it:").nth(1).expect("the sentence");
    let list = list.split("(tests/").next().unwrap();
    let named: Vec<&str> = list.split('`').skip(1).step_by(2).collect();
    let takers: Vec<&str> = (ratelab::experiments::ALL.iter())
        .filter(|e| e.takes_limiters())
        .map(|e| e.id())
        .collect();
    assert_eq!(named, takers);
}
