//! Limiter processes (examples/adapters/PROTOCOL.md) against real servers: an adapter decides
//! many checks in flight, and every way an adapter can break the protocol (crash, garbage, an
//! unknown id, silence, a refusal, another protocol, no handshake, a missing program) is an error
//! that says what it did, leaves no process behind and, in a run, writes nothing.

use crate::common;

use ratelab::limiter::custom::{self, Algorithm, ProcessCommand};
use ratelab::limiter::process::{Process, Reach};
use ratelab::limiter::{Check, Decide, Decision, LimitSpec, LimiterError};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/adapters/{name}.toml"))
}

/// The fixture's command as its manifest says it.
fn command(name: &str) -> ProcessCommand {
    let limiter = custom::load(&fixture(name)).expect("the fixture's manifest loads");
    limiter.process.expect("a process manifest")
}

fn spec(limit: u64) -> LimitSpec {
    LimitSpec {
        capacity: limit,
        window_ms: 600_000,
        ..LimitSpec::default()
    }
}

fn reach(server: &ratelab::server::RedisServer, timeout_ms: u64) -> Reach {
    Reach::to(&server.endpoint().url(), timeout_ms)
}

fn start(
    name: &str,
    server: &ratelab::server::RedisServer,
    timeout_ms: u64,
) -> Result<Rc<Process>, LimiterError> {
    let reach = reach(server, timeout_ms);
    Process::start(
        name,
        Algorithm::FixedWindow,
        &command(name),
        &spec(5),
        &reach,
    )
    .map(Rc::new)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Asks `n` checks on `key` at once (each its own task, all spawned before any runs); their
/// decisions in the order asked.
fn decide_at_once(
    process: &Rc<Process>,
    key: &'static str,
    n: usize,
) -> Vec<Result<Decision, LimiterError>> {
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime(), async {
        let asks: Vec<_> = (0..n)
            .map(|_| {
                let process = process.clone();
                tokio::task::spawn_local(async move {
                    process.decide(None, Check::one(key)).await.outcome
                })
            })
            .collect();
        let mut outcomes = Vec::new();
        for ask in asks {
            outcomes.push(ask.await.expect("the check's task ends"));
        }
        outcomes
    })
}

/// Asks `n` checks on `key` at once; their outcomes in the order asked.
fn ask_at_once(
    process: &Rc<Process>,
    key: &'static str,
    n: usize,
) -> Vec<Result<bool, LimiterError>> {
    let decided = decide_at_once(process, key, n).into_iter();
    decided.map(|outcome| outcome.map(|d| d.allowed)).collect()
}

fn error_text(outcome: &Result<bool, LimiterError>) -> String {
    match outcome {
        Err(e) => e.to_string(),
        Ok(allowed) => panic!("expected an error, the adapter decided {allowed}"),
    }
}

/// Whether process `pid` still runs, a moment after it should have gone.
fn gone(pid: u32) -> bool {
    !common::pid_alive(pid)
}

#[test]
fn an_adapter_decides_checks_in_flight_at_once_and_writes_under_the_key() {
    let server = common::start_server();
    let process = start("window", &server, 1_000).expect("the fixture starts");
    assert_eq!(process.handshake.library, "fixture");
    assert_eq!(process.handshake.version, "1.window");
    let key = "ratelab:process-test:1:2:one";
    let outcomes = ask_at_once(&process, key, 20);
    let admitted = outcomes.iter().filter(|o| matches!(o, Ok(true))).count();
    let failed: Vec<_> = outcomes.iter().filter(|o| o.is_err()).collect();
    assert!(failed.is_empty(), "no check failed: {failed:?}");
    assert_eq!(
        admitted, 5,
        "a fixed window of 5 admits 5 of 20 asked at once"
    );
    let mut con = server.endpoint().connection().unwrap();
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut con).unwrap();
    assert_eq!(
        keys,
        vec![key.to_string()],
        "the adapter wrote the check's key only"
    );
    let pid = process.pid();
    drop(process);
    assert!(gone(pid), "closing its stdin ended the adapter");
}

/// How many checks came in the same read as each of `n` checks asked at once (the turns fixture
/// answers that as `remaining`), in the order asked.
fn reads_of(process: &Rc<Process>, n: usize) -> Vec<i64> {
    let decided = decide_at_once(process, "turns", n).into_iter();
    decided
        .map(|outcome| outcome.expect("the fixture allows every check").remaining)
        .collect()
}

#[test]
fn checks_asked_in_one_turn_reach_the_adapter_in_one_write_and_later_ones_wait_for_none() {
    // A burst started at once must start at once in the adapter's event loop (seed 001's 500
    // GETs before the first INCR): one write, so one read.
    let server = common::start_server();
    let process = start("turns", &server, 1_000).expect("the fixture starts");
    let burst = 300;
    let together = reads_of(&process, burst);
    assert!(
        together.iter().all(|&n| n == burst as i64),
        "every check of the burst came in one read of {burst}: {:?}",
        &together[..together.len().min(20)]
    );
    // One at a time: each goes out alone, at once.
    for _ in 0..3 {
        assert_eq!(reads_of(&process, 1), vec![1], "a lone check is sent alone");
    }
}

#[test]
fn an_adapter_that_breaks_the_protocol_is_named_with_what_it_did_and_is_gone() {
    let server = common::start_server();
    let key = "ratelab:process-test:1:2:k";
    // Each breaks after its handshake: the checks say how, and the process is gone once dropped.
    let cases = [
        ("crash", 6, "exited (exit status: 3)"),
        ("garbage", 2, "not an answer"),
        ("not-utf8", 2, "it wrote a line that is not UTF-8"),
        ("unknown-id", 2, "which is not in flight"),
        ("silent", 2, "no answer to check"),
    ];
    for (name, n, says) in cases {
        let process = start(name, &server, 100).unwrap_or_else(|e| panic!("{name} starts: {e}"));
        let pid = process.pid();
        let outcomes = ask_at_once(&process, key, n);
        let errors: Vec<String> = (outcomes.iter().filter(|o| o.is_err()))
            .map(error_text)
            .collect();
        assert!(
            !errors.is_empty(),
            "{name}: some check failed: {outcomes:?}"
        );
        assert!(
            errors
                .iter()
                .all(|e| e.contains(says) && e.contains(&format!("limiter process {name}"))),
            "{name}: every failed check says `{says}`: {errors:?}"
        );
        if name == "crash" {
            let decided = outcomes.iter().filter(|o| o.is_ok()).count();
            assert_eq!(
                decided, 3,
                "the three checks answered before the crash stand"
            );
            assert!(
                errors[0].contains("crashing as told"),
                "its stderr is shown: {}",
                errors[0]
            );
        }
        drop(process);
        assert!(gone(pid), "{name}: no adapter is left running");
    }
}

/// An adapter started through a shell that does not exec it, beside a helper of its own, is
/// ended whole: its process group goes with it, whichever of its processes ratelab started.
#[test]
fn an_adapter_behind_a_wrapper_with_a_helper_leaves_no_process() {
    let mark = common::mark_descendants();
    let server = common::start_server();
    let process = start("wrapped", &server, 1000).expect("the wrapped adapter starts");
    let outcomes = ask_at_once(&process, "ratelab:process-test:wrapped:k", 2);
    assert!(outcomes.iter().all(|o| o.is_ok()), "{outcomes:?}");
    // The helper and the shell that started it (its command line names the helper too).
    let running = common::marked_processes("sleep 301", &mark);
    assert!(
        running.iter().any(|(_, c)| c.starts_with("sleep")),
        "{running:?}"
    );
    drop(process);
    common::assert_marked_gone("sleep 301", &mark);
    common::assert_marked_gone("fixture.py window", &mark);
}

/// An adapter dies with ratelab by the parent-death signal, which Linux sends when the *thread*
/// that forked it exits: one started from a thread that then ends (a runtime's blocking thread,
/// as chaos starts them) still decides afterwards.
#[test]
fn an_adapter_started_from_a_thread_that_ends_outlives_that_thread() {
    let server = common::start_server();
    let reach = reach(&server, 1000);
    let process = std::thread::spawn(move || {
        Process::start(
            "window",
            Algorithm::FixedWindow,
            &command("window"),
            &spec(5),
            &reach,
        )
    });
    let process = Rc::new(
        process
            .join()
            .expect("the thread ends")
            .expect("the adapter starts"),
    );
    // The kernel signals the child as the thread exits: give a signal time to land.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let outcomes = ask_at_once(&process, "ratelab:process-test:lasting:k", 2);
    assert!(
        outcomes.iter().all(|o| o.is_ok()),
        "the adapter still decides: {outcomes:?}"
    );
}

#[test]
fn an_adapter_that_cannot_start_is_named_with_why() {
    let server = common::start_server();
    let cases = [
        (
            "fatal",
            "it could not start: this fixture was told to refuse",
        ),
        (
            "old-protocol",
            "it speaks protocol 0, this ratelab speaks 1",
        ),
        (
            "no-handshake",
            "closed its stdout before its handshake and exited (exit status: 0)",
        ),
    ];
    for (name, says) in cases {
        let error = start(name, &server, 100).expect_err(name).to_string();
        assert!(error.contains(says), "{name}: `{says}` in: {error}");
    }
    let missing = ProcessCommand {
        argv: vec!["ratelab-no-such-adapter".into()],
        dir: ".".into(),
    };
    let error = Process::start(
        "missing",
        Algorithm::FixedWindow,
        &missing,
        &spec(5),
        &reach(&server, 100),
    )
    .expect_err("a missing program");
    assert!(
        error.to_string().contains("not found (install it"),
        "{error}"
    );
}

fn ratelab(args: &[&str]) -> std::process::Output {
    Command::new(common::ratelab_exe())
        .args(args)
        .env("CI", "1")
        .output()
        .expect("ratelab runs")
}

/// A manifest of the window fixture named `fixture-window` in `dir`, whose command carries `tag`:
/// tests run at once, so each counts only its own adapters.
fn tagged_window(dir: &Path, tag: &str) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/adapters/fixture.py");
    let manifest = dir.join(format!("{tag}.toml"));
    let text = format!(
        "name = \"fixture-window\"\ndescription = \"the window fixture, tagged {tag}\"\nkind = \"process\"\n\
         command = [\"python3\", \"{}\", \"window\", \"{tag}\"]\nalgorithm = \"fixed-window\"\n\
         anchor = \"first-hit\"\n",
        script.display()
    );
    std::fs::write(&manifest, text).unwrap();
    manifest
}

/// Processes running the fixture with `mode` (or a tag) in their command line.
fn fixtures_running(mode: &str) -> usize {
    common::processes_with("fixture.py", &[mode]).len()
}

#[test]
fn race_runs_an_adapter_in_every_worker_and_names_its_library() {
    let out = tempfile::tempdir().unwrap();
    let window = tagged_window(out.path(), "tag-race");
    let run = ratelab(&[
        "run",
        "race",
        "--profile",
        "quick",
        "--limiter",
        window.to_str().unwrap(),
        "--set",
        "strategies=[\"lua-bucket\"]",
        // One process, and four with eight in flight each: every worker's adapter (CI time).
        "--set",
        "configs=[\"1x1\", \"4x8\"]",
        "--set",
        "trials=1",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "race with a limiter process runs: {stderr}"
    );
    let limiters = std::fs::read_to_string(out.path().join("race/limiters.csv")).unwrap();
    assert!(
        limiters.contains("fixture 1.window (raw RESP)"),
        "{limiters}"
    );
    assert!(limiters.contains(",process,"), "{limiters}");
    let rows = std::fs::read_to_string(out.path().join("race/race.csv")).unwrap();
    let header: Vec<&str> = rows.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let mine: Vec<Vec<&str>> = (rows.lines().skip(1))
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|r| r[col("strategy")] == "fixture-window")
        .collect();
    assert!(!mine.is_empty(), "race.csv has the adapter's rows");
    for r in &mine {
        // An atomic window opened at the first hit, longer than the run: exactly its limit.
        assert_eq!(r[col("admitted")], r[col("limit")], "{r:?}");
        assert_eq!(r[col("errors")], "0", "{r:?}");
    }
    assert_eq!(
        fixtures_running("tag-race"),
        0,
        "every worker's adapter is gone"
    );
}

#[test]
fn a_run_whose_adapter_crashes_stops_writing_nothing_and_leaves_no_process() {
    let out = tempfile::tempdir().unwrap();
    let crash = fixture("crash-mid");
    let run = ratelab(&[
        "run",
        "race",
        "--profile",
        "quick",
        "--limiter",
        crash.to_str().unwrap(),
        "--set",
        "strategies=[\"lua-bucket\"]",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "the run fails");
    assert!(
        stderr.contains("limiter process fixture-crash-mid"),
        "{stderr}"
    );
    assert!(
        !out.path().join("race").exists(),
        "nothing partial is written"
    );
    assert_eq!(
        fixtures_running("crash-after"),
        0,
        "no adapter is left running"
    );
}

#[test]
fn an_experiment_that_asks_on_its_own_connections_refuses_a_process() {
    let out = tempfile::tempdir().unwrap();
    let window = fixture("window");
    let run = ratelab(&[
        "run",
        "cost",
        "--limiter",
        window.to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success());
    assert!(
        stderr.contains("cannot run limiter process fixture-window"),
        "{stderr}"
    );
    assert!(stderr.contains("these can: race"), "{stderr}");
}

/// survival_custom.csv's rows of `name`: (event, first outcome, recovered ms).
fn survival_rows(csv: &str, name: &str) -> Vec<(String, String, String)> {
    let header: Vec<&str> = csv.lines().next().unwrap_or_default().split(',').collect();
    let col = |c: &str| {
        header
            .iter()
            .position(|h| *h == c)
            .unwrap_or_else(|| panic!("{c}"))
    };
    (csv.lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>()))
    .filter(|r| r[col("strategy")] == name)
    .map(|r| {
        let text = |c: &str| r[col(c)].to_string();
        (text("event"), text("first_outcome"), text("recovered_ms"))
    })
    .collect()
}

#[test]
fn scripts_survival_restarts_an_adapters_server_and_times_its_reconnect() {
    let out = tempfile::tempdir().unwrap();
    let window = tagged_window(out.path(), "tag-survival");
    let run = ratelab(&[
        "run",
        "scripts",
        "--profile",
        "quick",
        "--limiter",
        window.to_str().unwrap(),
        "--set",
        "modes=[\"evalsha\"]",
        "--set",
        "runs=1",
        "--set",
        "flush_modes=[\"evalsha\"]",
        "--set",
        "survival_modes=[\"evalsha\"]",
        "--set",
        "events=[\"restart-no-persistence\", \"promoted\", \"script-flush\"]",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "scripts with a limiter process runs: {stderr}"
    );
    let csv = std::fs::read_to_string(out.path().join("scripts/survival_custom.csv")).unwrap();
    let rows = survival_rows(&csv, "fixture-window");
    let event = |name: &str| rows.iter().find(|r| r.0 == name);
    // The restart closed the fixture's one connection: its first check fails, and the check after
    // its reconnect decides again.
    let restart = event("restart-no-persistence").expect("the restart row");
    assert_eq!(restart.1, "error", "{rows:?}");
    let recovered: f64 = restart
        .2
        .parse()
        .unwrap_or_else(|_| panic!("a recovery time: {rows:?}"));
    assert!(recovered > 0.0, "{rows:?}");
    // A script flush does not touch a limiter that sends plain commands.
    let flush = event("script-flush").expect("the flush row");
    assert_eq!((flush.1.as_str(), flush.2.as_str()), ("ok", ""), "{rows:?}");
    // A promotion is followed through Sentinels, and the fixture's handshake does not say it has
    // a Sentinel client: not asked, and said so.
    assert!(event("promoted").is_none(), "{rows:?}");
    let meta = std::fs::read_to_string(out.path().join("scripts/meta.json")).unwrap();
    assert!(
        meta.contains("fixture-window not asked after promoted") && meta.contains("sentinel"),
        "{meta}"
    );
    assert_eq!(fixtures_running("tag-survival"), 0, "the adapters are gone");
}

#[test]
fn pods_run_an_adapter_in_every_pod_on_loopback_and_through_the_proxy() {
    let out = tempfile::tempdir().unwrap();
    let window = tagged_window(out.path(), "tag-pods");
    let run = ratelab(&[
        "run",
        "pods",
        "--profile",
        "quick",
        "--limiter",
        window.to_str().unwrap(),
        "--set",
        "strategies=[\"in-memory\"]",
        "--set",
        "pods=[2]",
        "--set",
        "rtt_strategies=[]",
        "--set",
        "rtt_pods=[2]",
        "--set",
        "rtt_ms=[20.0]",
        "--set",
        "loop_strategies=[]",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "pods with a limiter process runs: {stderr}"
    );
    let csv = std::fs::read_to_string(out.path().join("pods/runs.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let mine: Vec<Vec<&str>> = (csv.lines().skip(1))
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|r| r[col("strategy")] == "fixture-window")
        .collect();
    let rtts: Vec<&str> = mine.iter().map(|r| r[col("rtt_ms")]).collect();
    assert_eq!(rtts, ["0.0", "20.0"], "the main grid and the sweep: {csv}");
    for r in &mine {
        let count = |c: &str| r[col(c)].parse::<u64>().unwrap();
        // The adapter decided, and the sink cannot receive more than the pods sent it.
        assert!(count("decided_allowed") > 0, "{r:?}");
        assert!(count("reached") <= count("sent"), "{r:?}");
    }
    assert_eq!(
        fixtures_running("tag-pods"),
        0,
        "every pod's adapter is gone"
    );
    // Another process, with no manifest loaded, reads the adapter's rows back for the report.
    let report = ratelab(&["report", out.path().to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&report.stderr);
    assert!(
        report.status.success(),
        "the report reads the run: {stderr}"
    );
    let cell = common::custom_limiter_cell(
        out.path(),
        "fixture-window",
        "pods: reached the partner per second",
    );
    assert!(cell.starts_with("highest second "), "{cell}");
}

/// The cluster experiment's settings for a short bucket phase with `clients` adapters.
const SHORT_CLUSTER: [(&str, &str); 5] = [
    ("users", "60"),
    ("variants", r#"["declared"]"#),
    ("bucket_users", "30"),
    ("bucket_requests", "15"),
    ("bucket_clients", "3"),
];

#[test]
fn cluster_asks_each_library_through_its_own_cluster_client_and_refuses_one_that_cannot() {
    let mark = common::mark_descendants();
    // Seed 001's script on ioredis, seed 000's on node-redis, the Python window on redis-py: each
    // told one node and that it is a cluster, its library's cluster client routes every user's key
    // to the node that owns it, so each admits exactly its limit.
    let limiters = common::example_adapters(&[
        "seed001-ioredis/seed001-lua.toml",
        "seed000-node-redis/seed000-lua.toml",
        "python-redis-py/python-redis-py.toml",
    ]);
    let tmp = tempfile::tempdir().unwrap();
    let dir = common::run_with_limiters("cluster", tmp.path(), limiters, &SHORT_CLUSTER);
    let rows: Vec<ratelab::experiments::cluster::CustomBucketRow> =
        ratelab::analysis::table::read_typed(&dir.join("custom.csv")).unwrap();
    for name in ["seed001-lua", "seed000-lua", "python-redis-py"] {
        let mine: Vec<_> = rows.iter().filter(|r| r.strategy.name() == name).collect();
        assert_eq!(mine.len(), 30, "{name}: one row per user");
        for r in &mine {
            assert_eq!((r.admitted, r.errors), (r.limit, 0), "{r:?}");
        }
        let mut nodes: Vec<&str> = mine.iter().map(|r| r.node.as_str()).collect();
        nodes.sort();
        nodes.dedup();
        assert_eq!(
            nodes.len(),
            3,
            "{name}: the users' keys live on every node: {nodes:?}"
        );
    }
    let limiters = std::fs::read_to_string(dir.join("limiters.csv")).unwrap();
    for client in ["ioredis", "node-redis", "redis-py"] {
        assert!(limiters.contains(client), "{client}: {limiters}");
    }

    // The Python fixture knows nothing of clusters: refused before any check, saying why.
    let window = common::fixture_adapter("window");
    let tmp = tempfile::tempdir().unwrap();
    let mut ctx = common::ctx(tmp.path());
    (ctx.limiters, ctx.sets) = (vec![window], common::sets(&SHORT_CLUSTER));
    let err = ratelab::experiments::find("cluster")
        .unwrap()
        .run(&ctx)
        .expect_err("an adapter that does not say it speaks to a cluster is refused");
    let mut chain = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(e) = source {
        chain.push_str(&format!(": {e}"));
        source = e.source();
    }
    assert!(chain.contains("does not say \"cluster\": true"), "{chain}");
    assert!(
        !tmp.path().join("cluster").exists(),
        "nothing partial is written"
    );
    common::assert_marked_gone("fixture.py", &mark);
}

/// `--redis-url` naming one node of the user's cluster: the adapter is probed through its
/// library's cluster client too (a plain client there meets MOVED for every key another node
/// owns), the bucket phase admits every user's capacity, and no key of the run is left on any node.
#[test]
fn a_users_cluster_node_probes_an_adapter_as_a_cluster_client() {
    let cluster = ratelab::server::RedisCluster::start(&Default::default()).expect("a cluster");
    let lua = common::example_adapters(&["seed001-ioredis/seed001-lua.toml"]);
    let tmp = tempfile::tempdir().unwrap();
    let mut ctx = common::ctx(tmp.path());
    (ctx.limiters, ctx.sets) = (lua, common::sets(&SHORT_CLUSTER));
    ctx.redis_url = Some(cluster.nodes()[1].url());
    let dir = ratelab::experiments::find("cluster")
        .unwrap()
        .run(&ctx)
        .unwrap_or_else(|e| panic!("cluster runs an adapter on the user's cluster: {e:#}"));
    let rows: Vec<ratelab::experiments::cluster::CustomBucketRow> =
        ratelab::analysis::table::read_typed(&dir.join("custom.csv")).unwrap();
    assert_eq!(rows.len(), 30, "one row per user");
    for r in &rows {
        assert_eq!((r.admitted, r.errors), (r.limit, 0), "{r:?}");
    }
    for node in cluster.nodes() {
        let keys: u64 = redis::cmd("DBSIZE")
            .query(&mut node.connection().unwrap())
            .unwrap();
        assert_eq!(keys, 0, "node {} keeps {keys} keys", node.port());
    }
}

/// tsmember with only unique members scored by Redis, at 1,000/s and flat out: the built-in rows
/// beside the custom limiter's are quick.
fn tsmember_with(manifest: &Path, out: &Path) -> std::process::Output {
    ratelab(&[
        "run",
        "tsmember",
        "--profile",
        "quick",
        "--limiter",
        manifest.to_str().unwrap(),
        "--set",
        "rates=[1000.0]",
        "--set",
        "batch_members=[]",
        "--set",
        "members=[\"unique-id\"]",
        "--set",
        "clocks=[\"redis\"]",
        "--set",
        "flat_out_members=[\"unique-id\"]",
        "--out",
        out.to_str().unwrap(),
    ])
}

#[test]
fn tsmember_records_the_checks_a_library_fails_and_stops_on_an_adapter_that_breaks() {
    let out = tempfile::tempdir().unwrap();
    let run = tsmember_with(&fixture("time-out-every"), out.path());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "a library's timeouts are measured: {stderr}"
    );
    let rows: Vec<ratelab::experiments::tsmember::CustomRow> =
        ratelab::analysis::table::read_typed(&out.path().join("tsmember/tsmember_custom.csv"))
            .unwrap();
    assert_eq!(rows.len(), 2, "one run at 1,000/s, one flat out: {rows:?}");
    for r in &rows {
        // Each run's worker starts its own adapter, which fails every 7th check it is sent.
        assert_eq!(r.failed, r.offered / 7, "{r:?}");
        assert_eq!(
            r.first_failure, "redis: fixture: timed out as told",
            "{r:?}"
        );
        assert_eq!(r.admitted + r.denied + r.failed, r.offered, "{r:?}");
        assert!(
            r.admitted <= r.limit,
            "a failed check admits nothing: {r:?}"
        );
    }
    let cell = common::custom_limiter_cell(
        out.path(),
        "fixture-time-out-every",
        "colliding timestamps: admitted / exact",
    );
    let most = rows.iter().map(|r| r.failed).max().unwrap_or_default();
    assert!(cell.contains(&format!("; failed {most} of ")), "{cell}");

    let broken = tempfile::tempdir().unwrap();
    let run = tsmember_with(&fixture("crash-mid"), broken.path());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "a crashed adapter stops the run");
    assert!(
        stderr.contains("limiter process fixture-crash-mid"),
        "{stderr}"
    );
    assert!(
        !broken.path().join("tsmember").exists(),
        "nothing partial is written"
    );
    assert_eq!(
        fixtures_running("crash-after"),
        0,
        "no adapter is left running"
    );
    assert_eq!(
        fixtures_running("time-out-every"),
        0,
        "no adapter is left running"
    );
}
