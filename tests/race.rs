//! What physics guarantees about the race, against real redis-servers the harness starts.

use crate::common;

use ratelab::limiter::{unix_ms, LimitSpec, LogVariant, Strategy};
use ratelab::load::{run_closed_loop, ClosedLoop, WorkerSpec};
use std::time::Duration;

fn admitted(
    url: &str,
    strategy: Strategy,
    processes: usize,
    in_flight: usize,
    checks: u64,
    capacity: u64,
    key: &str,
) -> u64 {
    let exe = common::ratelab_exe();
    let plan = ClosedLoop {
        exe: &exe,
        cpus: &[],
        processes,
        template: WorkerSpec {
            url: url.to_string(),
            ..WorkerSpec::one_key(
                strategy,
                LimitSpec {
                    capacity,
                    refill_per_sec: 0.0,
                    window_ms: 600_000,
                    window_origin_ms: unix_ms(),
                    idle_ttl_ms: 600_000,
                    log: LogVariant::default(),
                    watch_retries: 10,
                },
                key,
                checks,
                in_flight,
            )
        },
    };
    let tally = run_closed_loop(&plan).expect("workers run");
    assert_eq!(tally.errors, 0, "{:?}", tally.first_error);
    assert_eq!(tally.total(), checks);
    tally.admitted
}

#[test]
fn lua_bucket_admits_exactly_the_capacity_at_every_configuration() {
    let server = common::start_server();
    for (p, f) in [
        (1, 1),
        (1, 2),
        (1, 4),
        (1, 8),
        (2, 1),
        (2, 2),
        (4, 1),
        (4, 2),
        (4, 8),
    ] {
        let got = admitted(
            &server.url(),
            Strategy::LuaBucket,
            p,
            f,
            1000,
            100,
            &format!("lua:{p}x{f}"),
        );
        assert_eq!(got, 100, "lua-bucket at {p}x{f}");
    }
}

#[test]
fn naive_bucket_is_exact_alone_and_doubles_with_two_in_flight() {
    let server = common::start_server();
    for trial in 0..3 {
        let alone = admitted(
            &server.url(),
            Strategy::NaiveBucket,
            1,
            1,
            1000,
            100,
            &format!("n11:{trial}"),
        );
        assert_eq!(alone, 100, "1x1 is the control");
        let two = admitted(
            &server.url(),
            Strategy::NaiveBucket,
            1,
            2,
            1000,
            100,
            &format!("n12:{trial}"),
        );
        assert_eq!(
            two, 200,
            "1x2: read, read, write, write spends one token per two requests"
        );
    }
    let eight = admitted(&server.url(), Strategy::NaiveBucket, 1, 8, 1000, 100, "n18");
    assert!(eight > 100, "1x8 over-admits: {eight}");
}

#[test]
fn fixed_windows_one_process_burst_of_500() {
    let server = common::start_server();
    let naive = admitted(
        &server.url(),
        Strategy::NaiveWindow,
        1,
        500,
        500,
        100,
        "w:naive",
    );
    // Seed 001: all 500 allowed. One event loop writes all 500 GETs before the first reply
    // is read, so every check sees the counter at 0: exact, not a matter of timing.
    assert_eq!(
        naive, 500,
        "GET then MULTI INCR EXPIRE lets the whole pipelined burst through"
    );
    let incr = admitted(
        &server.url(),
        Strategy::IncrWindow,
        1,
        500,
        500,
        100,
        "w:incr",
    );
    assert_eq!(incr, 100, "INCR and compare is atomic");
}

/// atomic sizes its trials by their spread: Lua admits exactly its capacity in every trial, so
/// each configuration stops after `min_trials` however many `trials` allow. Its GETs run in the
/// first `round_trip_trials`, every one answered.
#[test]
fn atomic_stops_an_exact_configuration_after_its_minimum_trials() {
    let out = tempfile::tempdir().unwrap();
    let dir = common::run_experiment(
        "atomic",
        out.path(),
        &[
            ("checks", "300"),
            ("trials", "4"),
            ("min_trials", "2"),
            ("configs", r#"["1x1", "4x8"]"#),
            ("strategies", r#"["lua-bucket"]"#),
            ("capacities", "[100]"),
            ("round_trip_trials", "1"),
        ],
    );
    let gets: Vec<ratelab::experiments::atomic::RoundTripRow> =
        ratelab::analysis::table::read_typed(&dir.join("round_trips.csv")).unwrap();
    let shape: Vec<_> = (gets.iter())
        .map(|r| (r.processes, r.in_flight, r.trial, r.checks, r.errors))
        .collect();
    assert_eq!(shape, [(1, 1, 0, 300, 0), (4, 8, 0, 300, 0)]);
    assert!(gets.iter().all(|r| r.redis_cpu_us > 0.0), "{gets:?}");
    let rows: Vec<ratelab::experiments::atomic::AtomicRow> =
        ratelab::analysis::table::read_typed(&dir.join("atomic.csv")).unwrap();
    let shape: Vec<_> = rows
        .iter()
        .map(|r| (r.processes, r.in_flight, r.trial, r.admitted))
        .collect();
    assert_eq!(
        shape,
        [
            (1, 1, 0, 100),
            (4, 8, 0, 100),
            (1, 1, 1, 100),
            (4, 8, 1, 100)
        ]
    );
}

#[test]
fn experiment_writes_csvs_meta_trace_and_chart_then_stops_its_server() {
    let out = tempfile::tempdir().unwrap();
    let dir = common::run_experiment(
        "race",
        out.path(),
        &[
            ("trials", "1"),
            ("configs", r#"["1x1", "1x2"]"#),
            ("strategies", r#"["naive-bucket", "lua-bucket"]"#),
            ("seed001_strategies", r#"["naive-window"]"#),
        ],
    );
    assert_eq!(dir, out.path().join("race"));

    let race = std::fs::read_to_string(dir.join("race.csv")).unwrap();
    let header = race.lines().next().unwrap();
    for col in [
        "strategy",
        "processes",
        "in_flight",
        "trial",
        "checks",
        "admitted",
        "limit",
    ] {
        assert!(
            header.split(',').any(|h| h == col),
            "race.csv lacks {col}: {header}"
        );
    }
    assert!(
        race.contains("matrix,naive-bucket,1,2,0,1000,200,"),
        "{race}"
    );
    assert!(
        race.contains("trace,naive-bucket,1,2,0,10,6,"),
        "6 admitted on 3 tokens: {race}"
    );

    // The trace: on the traced key, two reads then two writes, from one connection.
    let mut reader = csv::Reader::from_path(dir.join("trace.csv")).unwrap();
    let rows: Vec<ratelab::experiments::race::TraceRow> =
        reader.deserialize().collect::<Result<_, _>>().unwrap();
    let on_key: Vec<_> = rows.iter().filter(|r| r.on_trace_key).collect();
    let first: Vec<&str> = on_key.iter().take(4).map(|r| r.command.as_str()).collect();
    assert_eq!(first, ["HMGET", "HMGET", "HSET", "HSET"]);
    assert!(on_key.iter().take(4).all(|r| r.client == on_key[0].client));

    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("meta.json")).unwrap()).unwrap();
    assert!(meta["redis"]["version"]
        .as_str()
        .is_some_and(|v| !v.is_empty() && v != "unknown"));
    assert_eq!(meta["params"]["trials"], 1);
    let url = meta["redis"]["url"].as_str().unwrap().to_string();
    // The managed server is gone once the experiment returns.
    assert!(redis::Client::open(url.as_str())
        .unwrap()
        .get_connection_with_timeout(Duration::from_millis(300))
        .is_err());

    let charts = ratelab::experiments::find("race")
        .expect("registered")
        .charts(&dir)
        .unwrap();
    assert!(charts.iter().any(|p| p.ends_with("race.svg")));
}

#[test]
fn dropping_a_stopped_server_continues_and_kills_it() {
    let server = common::start_server();
    let pid = server.pid();
    server.signal(libc::SIGSTOP).unwrap();
    drop(server);
    assert!(!common::pid_alive(pid), "redis-server {pid} left behind");
}
