//! The pods experiment against a real redis-server: what reached the loopback sink per second.
//! Bounds come from the run's own measurements (arrivals, latencies), never from timings.

use crate::common;

use ratelab::limiter::{unix_ms, LimitSpec, Strategy};
use ratelab::load::sink::Sink;
use ratelab::load::{run_pods, Arrivals, KeyChoice, OpenLoop, OpenSpec, PodFleet, Start};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

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

/// Round trip added for the naive window. Every request whose GET runs within one added round trip
/// after the limit-th admitted GET reads a count below the limit (that request's INCR cannot land
/// sooner: the proxy holds its GET's reply this long), so each window admits about arrivals/s x
/// round trip more; the test checks below that this is far above the per-second noise.
const NAIVE_RTT_MS: f64 = 150.0;

#[test]
fn lua_holds_the_partner_at_the_limit_at_4_pods_and_the_naive_window_leaks_with_a_round_trip() {
    let out = tempfile::tempdir().unwrap();
    let mut ctx = common::ctx(out.path());
    let rtt = format!("[{NAIVE_RTT_MS:.1}]");
    ctx.sets = sets(&[
        ("duration_s", "3"),
        ("strategies", r#"["lua-bucket"]"#),
        ("pods", "[4]"),
        ("offered_rps", "[400.0]"),
        ("rtt_strategies", r#"["naive-window"]"#),
        ("rtt_pods", "[4]"),
        ("rtt_offered_rps", "[400.0]"),
        ("rtt_ms", &rtt),
        ("loop_strategies", "[]"),
    ]);
    let dir = ratelab::experiments::find("pods")
        .expect("registered")
        .run(&ctx)
        .expect("pods runs");
    let runs = rows(&dir.join("runs.csv"));
    assert_eq!(runs.len(), 2, "{runs:?}");
    // Nothing is lost between the pods and the sink, in any run.
    for r in &runs {
        assert_eq!(num(r, "sent"), num(r, "reached"), "{r:?}");
        assert_eq!(num(r, "sent"), num(r, "acknowledged"), "{r:?}");
        assert_eq!(num(r, "sent"), num(r, "decided_allowed"), "{r:?}");
        assert!(num(r, "offered") > 2.0 * num(r, "limit"), "{r:?}");
    }
    let seconds = rows(&dir.join("pods.csv"));
    for r in &runs {
        let of_run: f64 = (seconds.iter())
            .filter(|s| s["strategy"] == r["strategy"] && s["rtt_ms"] == r["rtt_ms"])
            .map(|s| num(s, "reached"))
            .sum();
        assert_eq!(
            of_run,
            num(r, "reached"),
            "the sink's seconds add up to its total"
        );
    }
    let lua = runs.iter().find(|r| r["strategy"] == "lua-bucket").unwrap();
    let (limit, measured) = (num(lua, "limit"), num(lua, "measured_s"));
    // Offered 4x the limit keeps the bucket empty: in any interval it admits its refill, give or
    // take a token at each end; the sink's seconds see each admission shifted by at most the
    // slowest decision plus the latest start, which can move that many more across each end.
    let shift_s = (num(lua, "max_ms") + num(lua, "max_late_ms")) / 1000.0;
    let slack = 2.0 * (1.0 + limit * shift_s) / measured;
    let mean = num(lua, "reached_per_s");
    assert!(
        (mean - limit).abs() <= slack,
        "lua-bucket reached {mean}/s on a limit of {limit} (allowed ±{slack:.2}): {lua:?}"
    );
    let naive = runs
        .iter()
        .find(|r| r["strategy"] == "naive-window")
        .unwrap();
    let predicted = num(naive, "arrived_per_s") * NAIVE_RTT_MS / 1000.0;
    let m = num(naive, "measured_s");
    // Poisson arrivals: the excess of one window varies by about sqrt(predicted); half the
    // prediction must then lie at least 4 of those below the mean of the measured seconds.
    assert!(
        predicted / 2.0 >= 4.0 * (predicted / m).sqrt(),
        "round trip too short to tell"
    );
    let excess = num(naive, "excess_per_s");
    assert!(
        excess >= predicted / 2.0,
        "naive window exceeded the limit by {excess}/s, predicted {predicted}: {naive:?}"
    );
}

#[test]
fn the_sink_counts_every_request_the_pods_sent_and_in_memory_pods_admit_their_own_limit_each() {
    let server = common::start_server();
    let exe = common::ratelab_exe();
    let sink = Sink::start().expect("sink starts");
    let origin_ms = unix_ms() + 400;
    let limit = 50;
    let spec = LimitSpec {
        capacity: limit,
        window_origin_ms: origin_ms,
        ..LimitSpec::default()
    };
    let plan = PodFleet {
        open: OpenLoop {
            exe: &exe,
            cpus: &[],
            processes: 3,
            template: OpenSpec {
                url: server.url(),
                strategy: Strategy::IncrWindow,
                limit: spec,
                keys: KeyChoice::One("pods:test".into()),
                arrivals: Arrivals::Poisson {
                    rate_per_s: 900.0,
                    duration_ms: 1000,
                },
                start: Start::AtUnixMs(origin_ms),
                connections: 1,
                record_requests: false,
                seed: 7,
                worker_index: 0,
                workers: 1,
                timeouts: Default::default(),
            },
        },
        sink: sink.addr().to_string(),
        in_memory_limit: Some(limit),
        work: Duration::ZERO,
        skew_ms: 0.0,
    };
    sink.begin(origin_ms, Duration::ZERO);
    let tally = run_pods(&plan).expect("pods run");
    let count = sink.count();
    assert_eq!(
        tally.open.checks.errors, 0,
        "{:?}",
        tally.open.checks.first_error
    );
    assert_eq!(tally.send_errors, 0, "{:?}", tally.first_send_error);
    assert_eq!(count.total, tally.sent);
    assert_eq!(tally.sent, tally.acknowledged);
    assert_eq!(tally.sent, tally.open.checks.admitted);
    assert_eq!(
        count.per_second.iter().sum::<u64>() + count.early,
        count.total
    );
    let decided: u64 = tally.seconds.iter().map(|s| s.allowed).sum();
    assert_eq!(decided, tally.open.checks.admitted);
    let offered: u64 = tally.seconds.iter().map(|s| s.offered).sum();
    assert_eq!(offered, tally.open.offered);
    // About 300 arrivals per pod in the first window: each pod admits its own full limit there,
    // none more in any window (a late decision can fall into the next one).
    let admitted = tally.open.checks.admitted;
    let windows = tally.seconds.len() as u64;
    assert!(
        admitted >= 3 * limit && admitted <= 3 * limit * windows,
        "{admitted} in {windows}"
    );
}

#[test]
fn a_request_stays_open_for_its_work_and_for_the_partners_answer() {
    let server = common::start_server();
    let exe = common::ratelab_exe();
    let sink = Sink::start().expect("sink starts");
    let origin_ms = unix_ms() + 400;
    let (work, partner) = (Duration::from_millis(2), Duration::from_millis(60));
    let plan = PodFleet {
        open: OpenLoop {
            exe: &exe,
            cpus: &[],
            processes: 2,
            template: OpenSpec {
                url: server.url(),
                strategy: Strategy::NaiveWindow,
                limit: LimitSpec {
                    capacity: 40,
                    window_origin_ms: origin_ms,
                    ..LimitSpec::default()
                },
                keys: KeyChoice::One("pods:open".into()),
                arrivals: Arrivals::Poisson {
                    rate_per_s: 200.0,
                    duration_ms: 1000,
                },
                start: Start::AtUnixMs(origin_ms),
                connections: 1,
                record_requests: false,
                seed: 11,
                worker_index: 0,
                workers: 1,
                timeouts: Default::default(),
            },
        },
        sink: sink.addr().to_string(),
        in_memory_limit: None,
        work,
        skew_ms: 4.0,
    };
    sink.begin(origin_ms, partner);
    let tally = run_pods(&plan).expect("pods run");
    assert_eq!(tally.send_errors, 0, "{:?}", tally.first_send_error);
    assert_eq!(tally.acknowledged, tally.open.checks.admitted);
    assert!(
        tally.acknowledged > 0 && tally.open.checks.denied > 0,
        "{tally:?}"
    );
    // Nothing answers sooner than it is due: every request held the loop for its work, and every
    // admitted one waited for the partner's answer on top.
    let least = tally.open.offered as f64 * work.as_secs_f64()
        + tally.acknowledged as f64 * partner.as_secs_f64();
    assert!(
        tally.open_s >= least,
        "open {} s, at least {least} s",
        tally.open_s
    );
    // An admitted request is open at least the partner's latency, and they overlap.
    assert!(tally.max_open >= 2, "{}", tally.max_open);
    let decide = tally.decide_histogram().expect("histogram");
    assert_eq!(decide.len(), tally.open.offered);
}
