//! The resilient store against a real redis-server that is killed, restarted, SIGSTOPped and
//! continued, all without restarting the harness. Latency is the monotonic clock around one check.
//!
//! Slack: a hung check must return within the budget plus 5 ms (the median of five; see
//! `assert_timing`). tokio's timer has 1 ms resolution and fires on the next tick after the
//! deadline, so ~1 ms of the 5 is the timer itself; the rest is scheduling on this 2-core shared
//! machine (other test binaries run in parallel).

mod common;

use ratelab::fault;
use ratelab::limiter::{LimitSpec, Limiter, Strategy};
use ratelab::server::RedisServer;
use ratelab::store::{
    Answer, BreakerSettings, BreakerState, Failure, Outcome, Policy, Route, Store, StoreSettings,
};
use std::time::{Duration, Instant};

const BUDGET: Duration = Duration::from_millis(250);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn store(server: &RedisServer, policy: Policy, breaker: Option<BreakerSettings>) -> Store {
    let limit = LimitSpec {
        capacity: 1_000_000_000,
        refill_per_sec: 1_000_000.0,
        ..LimitSpec::default()
    };
    let settings = StoreSettings {
        budget: BUDGET,
        policy,
        breaker,
    };
    Store::new(
        &server.url(),
        Limiter::new(Strategy::LuaBucket, limit),
        settings,
    )
    .expect("store")
}

/// One check and its latency on the monotonic clock.
fn check(rt: &tokio::runtime::Runtime, store: &Store) -> (Answer, Duration) {
    let start = Instant::now();
    let answer = rt
        .block_on(store.check("outage:test"))
        .expect("no limiter bug");
    (answer, start.elapsed())
}

/// Neither stopped nor left running once the server is dropped.
fn assert_gone(pids: &[u32]) {
    for &pid in pids {
        assert!(!fault::is_stopped(pid), "redis-server {pid} left stopped");
        assert!(!common::pid_alive(pid), "redis-server {pid} left running");
    }
}

/// Every check takes at least `floor`; the median is within `bound`; none exceeds it by more than
/// 100 ms. Why the median: CI runs the test binaries in parallel on 2 cores, and one check in a
/// few hundred was seen waiting ~50 ms for a CPU after its timer fired (255.7 ms and 300 ms hung
/// checks in a loaded full run). The median shows what the store does; the ceiling still catches
/// a budget that is not enforced (seed 000's 30-minute check) or a dead check that waits.
fn assert_timing(what: &str, took: &mut [Duration], floor: Duration, bound: Duration) {
    took.sort();
    assert!(
        took[0] >= floor,
        "{what}: fastest {:?} < {floor:?}",
        took[0]
    );
    let median = took[took.len() / 2];
    assert!(
        median <= bound,
        "{what}: median {median:?} > {bound:?}; all {took:?}"
    );
    let ceiling = bound + Duration::from_millis(100);
    assert!(
        took[took.len() - 1] <= ceiling,
        "{what}: slowest {:?} > {ceiling:?}",
        took[took.len() - 1]
    );
}

#[test]
fn dead_is_fast_hung_costs_the_budget_and_both_recover_without_restarting_the_harness() {
    let rt = runtime();
    let mut server = common::start_server();
    let mut pids = vec![server.pid()];
    let s = store(&server, Policy::FailOpen, None);
    for _ in 0..20 {
        assert_eq!(check(&rt, &s).0.outcome, Outcome::Allowed);
    }

    fault::kill(&mut server).unwrap();
    let mut dead = Vec::new();
    for _ in 0..20 {
        let (a, took) = check(&rt, &s);
        assert_eq!(a.outcome, Outcome::DegradedAllowed);
        assert_eq!(a.failure, Some(Failure::Connection));
        dead.push(took);
    }
    assert_timing("dead", &mut dead, Duration::ZERO, Duration::from_millis(5));

    fault::restart(&mut server).unwrap();
    pids.push(server.pid());
    let registered = ratelab::server::registered();
    assert!(registered.contains(&pids[1]) && !registered.contains(&pids[0]));
    let (a, _) = check(&rt, &s);
    assert_eq!(a.outcome, Outcome::Allowed, "the first check after restart");
    assert!(
        a.reconnected && a.script_reloaded,
        "reconnected and reloaded: {a:?}"
    );

    let hung = fault::suspend(&server).unwrap();
    assert!(fault::is_stopped(server.pid()));
    let mut hung_times = Vec::new();
    for _ in 0..5 {
        let (a, took) = check(&rt, &s);
        assert_eq!(
            (a.outcome, a.failure),
            (Outcome::DegradedAllowed, Some(Failure::Timeout))
        );
        hung_times.push(took);
    }
    assert_timing(
        "hung",
        &mut hung_times,
        BUDGET,
        BUDGET + Duration::from_millis(5),
    );
    hung.resume().unwrap();
    assert!(!fault::is_stopped(server.pid()));
    let (a, _) = check(&rt, &s);
    assert_eq!(a.outcome, Outcome::Allowed, "the first check after SIGCONT");
    assert!(!a.reconnected, "a hang keeps the connection");
    let c = s.counters();
    // Two loads: the fresh server's first check, and the first after the restart.
    assert_eq!(
        (c.timeouts, c.connection_errors, c.script_reloads),
        (5, 20, 2)
    );
    drop(server);
    assert_gone(&pids);
}

#[test]
fn the_breaker_cuts_the_hung_cost_once_open_and_closes_after_sigcont() {
    let rt = runtime();
    let server = common::start_server();
    let pid = server.pid();
    let breaker = BreakerSettings {
        failures: 2,
        cooldown: Duration::from_millis(200),
        probe_budget: Duration::from_millis(20),
    };
    let s = store(&server, Policy::FailClosed, Some(breaker));
    assert_eq!(check(&rt, &s).0.outcome, Outcome::Allowed);

    let hung = fault::suspend(&server).unwrap();
    let mut answers = Vec::new();
    let until = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < until {
        answers.push(check(&rt, &s));
        std::thread::sleep(Duration::from_millis(5));
    }
    let full = answers.iter().filter(|(_, t)| *t >= BUDGET).count();
    assert_eq!(
        full, 2,
        "only the K checks that trip the breaker pay the budget"
    );
    let probes: Vec<Duration> = (answers.iter())
        .filter(|(a, _)| a.route == Route::Probe)
        .map(|(_, t)| *t)
        .collect();
    assert!(!probes.is_empty(), "it probed while hung");
    for t in &probes {
        assert!(*t <= Duration::from_millis(25), "a probe took {t:?}");
    }
    let open: Vec<Duration> = (answers.iter())
        .filter(|(a, _)| a.route == Route::Open)
        .map(|(_, t)| *t)
        .collect();
    assert!(open.len() * 10 >= answers.len() * 8, "most answered open");
    let instant = open
        .iter()
        .filter(|t| **t < Duration::from_millis(1))
        .count();
    assert!(instant * 10 >= open.len() * 9, "open answers cost ~0 ms");
    assert!(answers
        .iter()
        .all(|(a, _)| a.outcome == Outcome::DegradedDenied));

    let resumed = hung.resume().unwrap();
    let first_normal = loop {
        let (a, _) = check(&rt, &s);
        if a.outcome.is_normal() {
            break resumed.elapsed();
        }
        assert!(
            resumed.elapsed() < Duration::from_secs(2),
            "never recovered"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(
        first_normal <= Duration::from_millis(200 + 20 + 50),
        "{first_normal:?}"
    );
    assert_eq!(s.breaker_state(), BreakerState::Closed);
    drop(server);
    assert_gone(&[pid]);
}

#[test]
fn a_panic_between_stop_and_cont_leaves_no_server_stopped() {
    let server = common::start_server();
    let pid = server.pid();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _hung = fault::suspend(&server).unwrap();
        assert!(fault::is_stopped(pid));
        panic!("measurement failed while the server was stopped");
    }));
    assert!(result.is_err());
    assert!(!fault::is_stopped(pid), "the guard continued it");
    assert!(server.connection().is_ok(), "and it answers");
    drop(server);
    assert_gone(&[pid]);
}
