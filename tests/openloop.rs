//! The open-loop generator and the two experiments built on it, against real redis-servers.
//! Assertions are physics (counts, bounds), never timings: the machine is shared and noisy.

use crate::common;

use ratelab::limiter::{LimitSpec, Strategy};
use ratelab::load::{run_open_loop, Arrivals, KeyChoice, OpenLoop, OpenSpec, Start};
use std::collections::BTreeMap;
use std::path::Path;

type Row = BTreeMap<String, String>;

fn rows(path: &Path) -> Vec<Row> {
    let mut reader = csv::Reader::from_path(path).expect("csv exists");
    reader
        .deserialize()
        .map(|r| r.expect("row parses"))
        .collect()
}

fn num(row: &Row, column: &str) -> f64 {
    row[column]
        .parse()
        .unwrap_or_else(|_| panic!("{column} in {row:?}"))
}

fn sets(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn every_scheduled_request_is_sent_once_across_processes() {
    let server = common::start_server();
    let exe = common::ratelab_exe();
    let arrivals = Arrivals::Poisson {
        rate_per_s: 2000.0,
        duration_ms: 500,
    };
    let scheduled = arrivals.schedule(42).len() as u64;
    let plan = OpenLoop {
        exe: &exe,
        cpus: &[],
        processes: 2,
        template: OpenSpec {
            url: server.url(),
            strategy: Strategy::Get,
            limit: LimitSpec::default(),
            keys: KeyChoice::One("open:get".into()),
            arrivals,
            start: Start::AtGo,
            connections: 4,
            record_requests: true,
            seed: 42,
            worker_index: 0,
            workers: 1,
            timeouts: Default::default(),
        },
    };
    let tally = run_open_loop(&plan).expect("workers run");
    assert_eq!(tally.checks.errors, 0, "{:?}", tally.checks.first_error);
    assert_eq!(
        (tally.offered, tally.checks.admitted),
        (scheduled, scheduled)
    );
    assert_eq!(tally.connections, 8);
    assert_eq!(tally.requests.len() as u64, scheduled);
    assert_eq!(tally.checks.latency_histogram().unwrap().len(), scheduled);
    // Latency counts from the intended start, so no request finishes before it was due.
    assert!(tally
        .requests
        .iter()
        .all(|r| r.intended_ns <= r.sent_ns && r.sent_ns <= r.done_ns));
}

#[test]
fn unique_members_are_exact_at_every_rate_and_time_ms_members_over_admit_at_10000() {
    let out = tempfile::tempdir().unwrap();
    let mut ctx = common::ctx(out.path());
    ctx.sets = sets(&[
        ("members", r#"["unique-id", "time-ms"]"#),
        ("flat_out_members", r#"["unique-id"]"#),
    ]);
    let dir = ratelab::experiments::find("tsmember")
        .expect("registered")
        .run(&ctx)
        .expect("tsmember runs");
    let all = rows(&dir.join("tsmember.csv"));
    for rate in ["100", "1000", "10000", "flat-out"] {
        for clock in ["redis", "caller"] {
            let of = |member: &str| {
                all.iter()
                    .find(|r| r["member"] == member && r["clock"] == clock && r["rate"] == rate)
            };
            let unique = of("unique-id").unwrap_or_else(|| panic!("unique {clock} {rate}"));
            let limit = num(unique, "limit");
            assert!(
                num(unique, "offered") > limit,
                "{unique:?} never reached its limit"
            );
            assert_eq!(num(unique, "admitted"), limit, "{unique:?}");
            if rate == "10000" {
                let ms = of("time-ms").expect("time-ms row");
                assert!(num(ms, "admitted") > num(ms, "limit"), "{ms:?}");
                // The undercount itself: fewer entries than admitted requests.
                assert!(num(ms, "log_entries") < num(ms, "admitted"), "{ms:?}");
            }
        }
    }
    let meta = std::fs::read_to_string(dir.join("meta.json")).unwrap();
    assert!(
        meta.contains("\"open_loop\""),
        "meta.json lacks the generator's verdict"
    );
}

#[test]
fn fixed_window_passes_twice_its_limit_at_the_edge_and_the_bucket_only_its_burst() {
    let out = tempfile::tempdir().unwrap();
    let mut ctx = common::ctx(out.path());
    ctx.sets = sets(&[("strategies", r#"["incr-window", "lua-bucket"]"#)]);
    let dir = ratelab::experiments::find("window-edge")
        .expect("registered")
        .run(&ctx)
        .expect("window-edge runs");
    let all = rows(&dir.join("window-edge.csv"));
    let of = |s: &str| -> Vec<&Row> { all.iter().filter(|r| r["strategy"] == s).collect() };
    let (fixed, bucket) = (of("incr-window"), of("lua-bucket"));
    assert!(!fixed.is_empty() && !bucket.is_empty());
    for r in fixed.iter().chain(&bucket) {
        assert_eq!(num(r, "offered"), 2.0 * num(r, "limit"), "{r:?}");
    }
    // Only a start more than 50 ms late could put both bursts into one window.
    let over = |r: &Row| num(r, "max_admitted_in_1s") > num(r, "limit");
    assert!(fixed.iter().any(|r| over(r)), "{fixed:?}");
    // L tokens at the first decision, then L/s; decisions lie inside the admitted span, and
    // Redis TIME's whole ms can add a fraction of a token.
    for r in &bucket {
        assert!(
            num(r, "max_admitted_in_1s") <= num(r, "smooth_bound") + 1.0,
            "{r:?}"
        );
    }
    let requests = rows(&dir.join("requests.csv"));
    assert_eq!(
        requests.len() as f64,
        all.iter().map(|r| num(r, "offered")).sum::<f64>()
    );
}
