//! The resilient store against a real redis-server that is killed, restarted, SIGSTOPped and
//! continued, all without restarting the harness. Latency is the monotonic clock around one check.
//!
//! Slack: no fixed ms. Lower bounds are the budgets (no timer fires before its deadline); upper
//! bounds come from this run on this machine: healthy checks measured first in the same test, and
//! a plain tokio sleep started beside each check that waits out a budget (the budget is such a
//! timer, so a loaded machine delays both alike). Other test binaries run in parallel on 2 cores.

use crate::common;

use ratelab::fault;
use ratelab::limiter::{LimitSpec, Limiter, Strategy};
use ratelab::server::RedisServer;
use ratelab::store::{
    Answer, BreakerSettings, BreakerState, Failure, Outcome, Policy, ProbeBy, Reconnect, Route,
    Store, StoreSettings,
};
use std::time::{Duration, Instant};

const BUDGET: Duration = Duration::from_millis(250);
const KEY: &str = "outage:test";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn store(server: &RedisServer, policy: Policy, breaker: Option<BreakerSettings>) -> Store {
    store_reconnecting(server, policy, breaker, Reconnect::InCheck)
}

fn store_reconnecting(
    server: &RedisServer,
    policy: Policy,
    breaker: Option<BreakerSettings>,
    reconnect: Reconnect,
) -> Store {
    let limit = LimitSpec {
        capacity: 1_000_000_000,
        refill_per_sec: 1_000_000.0,
        ..LimitSpec::default()
    };
    let settings = StoreSettings {
        budget: BUDGET,
        policy,
        breaker,
        flaw: None,
        reconnect,
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
    let answer = rt.block_on(store.check(KEY)).expect("no limiter bug");
    (answer, start.elapsed())
}

/// One check that may wait out a budget of `wait`, beside a plain tokio sleep started with it for
/// `wait + lead` (`lead` covers what the check does before its own timer starts, so the sleep's
/// deadline is never the earlier one). Returns the check's latency and, when the check took at
/// least `wait`, when the sleep fired: a check that waits out its budget ends no later than that.
fn check_beside_timer(
    rt: &tokio::runtime::Runtime,
    store: &Store,
    wait: Duration,
    lead: Duration,
) -> (Answer, Duration, Option<Duration>) {
    rt.block_on(async {
        let start = tokio::time::Instant::now();
        let timer = tokio::spawn(async move {
            tokio::time::sleep_until(start + wait + lead).await;
            start.elapsed()
        });
        let answer = store.check(KEY).await.expect("no limiter bug");
        let took = start.elapsed();
        if took < wait {
            timer.abort();
            return (answer, took, None);
        }
        (answer, took, Some(timer.await.expect("the timer task")))
    })
}

/// Neither stopped nor left running once the server is dropped.
fn assert_gone(pids: &[u32]) {
    for &pid in pids {
        assert!(!fault::is_stopped(pid), "redis-server {pid} left stopped");
        assert!(!common::pid_alive(pid), "redis-server {pid} left running");
    }
}

/// Healthy checks on a warm connection on this machine, now: the scale the bounds are drawn from.
#[derive(Debug)]
struct Healthy {
    p50: Duration,
    max: Duration,
}

/// Runs one warm-up check (it connects and loads the script), then `n` healthy ones.
fn measure_healthy(rt: &tokio::runtime::Runtime, store: &Store, n: usize) -> Healthy {
    assert_eq!(check(rt, store).0.outcome, Outcome::Allowed);
    let mut took: Vec<Duration> = (0..n)
        .map(|_| {
            let (a, took) = check(rt, store);
            assert_eq!(a.outcome, Outcome::Allowed);
            took
        })
        .collect();
    took.sort();
    Healthy {
        p50: took[n / 2],
        max: took[n - 1],
    }
}

/// A check that timed out on a hung server: never before its budget (`wait`), and no later than
/// the sleep beside it fired plus a healthy check's time (the work of returning its answer).
fn assert_waited_out(
    what: &str,
    took: Duration,
    fired: Option<Duration>,
    wait: Duration,
    healthy: &Healthy,
) {
    assert!(
        took >= wait,
        "{what} returned before its budget: {took:?} < {wait:?}"
    );
    let fired = fired.expect("a check that took its budget has the sleep beside it");
    assert!(
        took <= fired + healthy.max,
        "{what} took {took:?}: past the sleep beside it ({fired:?}) by more than a healthy check \
         ({healthy:?})"
    );
}

#[test]
fn dead_is_fast_hung_costs_the_budget_and_both_recover_without_restarting_the_harness() {
    let rt = runtime();
    let mut server = common::start_server();
    let mut pids = vec![server.pid()];
    let s = store(&server, Policy::FailOpen, None);
    let healthy = measure_healthy(&rt, &s, 100);

    fault::kill(&mut server).unwrap();
    let mut dead = Vec::new();
    for _ in 0..20 {
        let (a, took) = check(&rt, &s);
        assert_eq!(a.outcome, Outcome::DegradedAllowed);
        assert_eq!(a.failure, Some(Failure::Connection));
        dead.push(took);
    }
    dead.sort();
    // The kernel refuses a connect to a closed port at once, with no server to wait for, so the
    // typical dead check is faster than a healthy round trip (the median: one check in a few
    // hundred waits ~50 ms for a CPU here). None may wait for a timer: a wait would be the budget.
    let dead_p50 = dead[dead.len() / 2];
    assert!(
        dead_p50 < healthy.p50,
        "dead checks (median {dead_p50:?}) not faster than healthy ones ({healthy:?}); all {dead:?}"
    );
    assert!(
        dead[dead.len() - 1] < BUDGET,
        "a dead check waited: {dead:?}"
    );

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
    for _ in 0..5 {
        let (a, took, fired) = check_beside_timer(&rt, &s, BUDGET, healthy.max);
        assert_eq!(
            (a.outcome, a.failure),
            (Outcome::DegradedAllowed, Some(Failure::Timeout))
        );
        assert_waited_out("a hung check", took, fired, BUDGET, &healthy);
    }
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

/// `n` checks on a dead server; their latencies, sorted. Every one is answered by policy for a
/// connection failure; `connects`: whether each tried to connect (every one, or none).
fn dead_checks(
    rt: &tokio::runtime::Runtime,
    store: &Store,
    n: usize,
    connects: bool,
) -> Vec<Duration> {
    let mut took: Vec<Duration> = (0..n)
        .map(|i| {
            let (a, took) = check(rt, store);
            assert_eq!(
                (a.outcome, a.failure),
                (Outcome::DegradedAllowed, Some(Failure::Connection))
            );
            // The first finds its old connection broken, so it has not connected either.
            assert!(i == 0 || a.reconnected == connects, "{a:?}");
            took
        })
        .collect();
    took.sort();
    took
}

/// The store that fails fast: while the server is dead a check makes no connect (a refused one
/// is a system call; answering from the missing connection is not), so the median dead check is
/// faster than the seed-style store's measured beside it, and a background task reconnects once
/// the server is back: the first normal answer says it found a new connection and reloaded the
/// script, with no check having connected.
#[test]
fn a_fail_fast_store_answers_at_once_while_dead_and_reconnects_in_the_background() {
    let rt = runtime();
    let mut server = common::start_server();
    let mut pids = vec![server.pid()];
    let fast = store_reconnecting(&server, Policy::FailOpen, None, Reconnect::Background);
    let in_check = store(&server, Policy::FailOpen, None);
    // The fail-fast store connects in the background: its first checks may answer by policy.
    let first_normal = (0..500).find(|_| {
        let normal = check(&rt, &fast).0.outcome.is_normal();
        rt.block_on(async { tokio::time::sleep(Duration::from_millis(10)).await });
        normal
    });
    assert!(
        first_normal.is_some(),
        "the background task never connected"
    );
    measure_healthy(&rt, &in_check, 10);

    fault::kill(&mut server).unwrap();
    // Each store's first dead check finds its connection broken; later ones find none.
    let (fast_dead, in_check_dead) = (
        dead_checks(&rt, &fast, 41, false),
        dead_checks(&rt, &in_check, 41, true),
    );
    assert!(
        fast_dead[20] < in_check_dead[20],
        "failing fast {fast_dead:?} not faster than connecting in the check {in_check_dead:?}"
    );

    fault::restart(&mut server).unwrap();
    pids.push(server.pid());
    let mut answer = None;
    for _ in 0..500 {
        let (a, _) = check(&rt, &fast);
        if a.outcome.is_normal() {
            answer = Some(a);
            break;
        }
        assert!(!a.reconnected, "a check connected: {a:?}");
        rt.block_on(async { tokio::time::sleep(Duration::from_millis(10)).await });
    }
    let a = answer.expect("the background task reconnected after the restart");
    assert!(a.reconnected && a.script_reloaded, "{a:?}");
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
        probe_by: ProbeBy::Check,
    };
    // Between checks, as traffic would leave them: the breaker's cooldown is time.
    let pause = Duration::from_millis(5);
    let s = store(&server, Policy::FailClosed, Some(breaker));
    let healthy = measure_healthy(&rt, &s, 100);

    let hung = fault::suspend(&server).unwrap();
    let mut answers = Vec::new();
    let until = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < until {
        let (a, took, fired) = check_beside_timer(&rt, &s, breaker.probe_budget, healthy.max);
        if a.route == Route::Probe {
            assert_eq!(
                a.failure,
                Some(Failure::Timeout),
                "a probe of a hung server"
            );
            assert_waited_out("a probe", took, fired, breaker.probe_budget, &healthy);
        }
        answers.push((a, took));
        std::thread::sleep(pause);
    }
    let full = answers.iter().filter(|(_, t)| *t >= BUDGET).count();
    assert_eq!(
        full, 2,
        "only the K checks that trip the breaker pay the budget"
    );
    assert!(
        answers.iter().any(|(a, _)| a.route == Route::Probe),
        "it probed while hung"
    );
    let open: Vec<Duration> = (answers.iter())
        .filter(|(a, _)| a.route == Route::Open)
        .map(|(_, t)| *t)
        .collect();
    assert!(open.len() * 10 >= answers.len() * 8, "most answered open");
    // An open breaker answers without any I/O: faster than a round trip to a healthy server.
    let instant = open.iter().filter(|t| **t < healthy.p50).count();
    assert!(
        instant * 10 >= open.len() * 9,
        "open answers cost ~0: {instant} of {} under the healthy median {:?}",
        open.len(),
        healthy.p50
    );
    assert!(answers
        .iter()
        .all(|(a, _)| a.outcome == Outcome::DegradedDenied));

    // After SIGCONT the breaker stays open for at most one cooldown (it opened when the last
    // probe failed, before SIGCONT); the first check after that is the probe, and Redis, back,
    // answers it. So no check answered open may start a cooldown or more after SIGCONT.
    let resumed = hung.resume().unwrap();
    let mut last_open_start = resumed;
    let probe = loop {
        let start = Instant::now();
        let (a, _) = check(&rt, &s);
        if a.outcome.is_normal() {
            break a;
        }
        assert_eq!(
            a.route,
            Route::Open,
            "only open answers before the probe: {a:?}"
        );
        assert!(resumed.elapsed() < breaker.cooldown * 10, "never recovered");
        last_open_start = start;
        std::thread::sleep(pause);
    };
    assert_eq!(probe.route, Route::Probe, "the breaker's probe closed it");
    assert!(
        last_open_start - resumed < breaker.cooldown,
        "a check {:?} after SIGCONT was answered open: the cooldown is {:?}",
        last_open_start - resumed,
        breaker.cooldown
    );
    assert_eq!(s.breaker_state(), BreakerState::Closed);
    drop(server);
    assert_gone(&[pid]);
}

/// The breaker of issue 34: recovery probed by the store's own task. No check carries a probe,
/// the task probes while Redis stays hung, and once Redis is back it closes the breaker and hands
/// its connection over, so the first normal check neither probes nor reconnects.
#[test]
fn a_background_probe_closes_the_breaker_and_no_check_carries_it() {
    let rt = runtime();
    let server = common::start_server();
    let breaker = BreakerSettings {
        failures: 2,
        cooldown: Duration::from_millis(200),
        probe_budget: Duration::from_millis(20),
        probe_by: ProbeBy::Background,
    };
    let s = store(&server, Policy::FailOpen, Some(breaker));
    measure_healthy(&rt, &s, 20);
    // Checks paced by the runtime's own sleep, as the drills pace them, so the probe's task runs
    // between them.
    let pause = Duration::from_millis(5);
    let checks_until = |done: &dyn Fn(&Answer, Duration) -> bool| {
        rt.block_on(async {
            let mut answers = Vec::new();
            loop {
                let start = Instant::now();
                let a = s.check(KEY).await.expect("no limiter bug");
                answers.push((a, start));
                let (a, start) = answers.last().expect("one answer");
                if done(a, start.elapsed()) {
                    return answers;
                }
                tokio::time::sleep(pause).await;
            }
        })
    };
    let hung = fault::suspend(&server).unwrap();
    let until = Instant::now() + Duration::from_millis(1500);
    let answers = checks_until(&|_, _| Instant::now() >= until);
    let paid = answers
        .iter()
        .filter(|(a, _)| a.route == Route::Redis)
        .count();
    assert_eq!(paid, 2, "only the K checks that trip the breaker ask Redis");
    assert!(
        answers.iter().all(|(a, _)| a.route != Route::Probe),
        "a check carried a probe"
    );
    let sent = s.counters().background_probes;
    // 1.5 s hung, tripped after 0.5 s, a cycle of 220 ms: four probes, at least two.
    assert!(
        sent >= 2,
        "the task probed {sent} times while Redis was hung"
    );

    let resumed = hung.resume().unwrap();
    let recovery =
        checks_until(&|a, _| a.outcome.is_normal() || resumed.elapsed() > breaker.cooldown * 10);
    let (first, _) = recovery.last().expect("a check after SIGCONT");
    assert!(first.outcome.is_normal(), "never recovered: {first:?}");
    assert_eq!(
        (first.route, first.reconnected),
        (Route::Redis, false),
        "{first:?}"
    );
    // Open for at most the rest of a cooldown and a probe: the task's probe is what closed it.
    let last_open = recovery.len().checked_sub(2).map(|i| recovery[i].1);
    if let Some(last_open) = last_open {
        assert!(
            last_open - resumed < breaker.cooldown + breaker.probe_budget + pause * 2,
            "a check {:?} after SIGCONT was answered open",
            last_open - resumed
        );
    }
    assert_eq!(s.breaker_state(), BreakerState::Closed);
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

/// The `--set`s that keep an outage run short: few checks per phase, a one-point sweep.
const SHORT: &[(&str, &str)] = &[
    ("checks_per_phase", "4"),
    ("fail_fast_checks_per_phase", "4"),
    ("warmup", "2"),
    ("sweep_failures", "[1]"),
    ("sweep_cooldowns_ms", "[50]"),
    ("sweep_hung_ms", "100"),
    ("sweep_after_checks", "1"),
];

/// The dependency-free fixture adapter `tests/adapters/<name>.toml`, loaded and registered.
fn fixture_limiter(name: &str) -> Strategy {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/adapters/{name}.toml"));
    let manifest = ratelab::limiter::custom::load(&path).expect("the fixture's manifest loads");
    ratelab::limiter::custom::register(manifest)
}

/// Fixture adapters behaving as `mode` that this test process started and that still run.
fn adapters_left(mode: &str) -> Vec<u32> {
    let me = std::process::id();
    (common::processes_with("fixture.py", &[mode]).into_iter())
        .filter(|&(pid, ppid, _)| ppid == Some(me) && common::pid_alive(pid))
        .map(|(pid, ..)| pid)
        .collect()
}

#[test]
fn a_limiter_process_decides_its_own_runs_and_its_failures_are_the_policys() {
    let out = tempfile::tempdir().unwrap();
    let window = fixture_limiter("window");
    let dir = common::run_with_limiters("outage", out.path(), vec![window], SHORT);
    assert!(
        adapters_left("window").is_empty(),
        "every run's adapter is gone"
    );
    let phases: Vec<ratelab::experiments::outage::PhaseRow> =
        ratelab::experiments::outage::PHASES.read(&dir).unwrap();
    let mine: Vec<_> = phases
        .iter()
        .filter(|r| r.limiter == Some(window))
        .collect();
    assert_eq!(mine.len(), 2 * 2 * 5, "policy x breaker x phase");
    assert!(
        phases.iter().all(|r| r.limiter.is_some()),
        "every row names who decided"
    );
    assert!((phases.iter()).any(|r| r.limiter == Some(Strategy::LuaBucket)));
    for r in &mine {
        let by_policy = match r.policy {
            Policy::FailOpen => (r.degraded_allowed, r.degraded_denied),
            Policy::FailClosed => (r.degraded_denied, r.degraded_allowed),
        };
        match r.phase {
            // The adapter's own error answers, read by the policy like the store's failures.
            ratelab::experiments::outage::Phase::Dead => {
                assert_eq!(by_policy, (r.checks, 0), "{r:?}")
            }
            ratelab::experiments::outage::Phase::Healthy => {
                assert_eq!(r.allowed, r.checks, "{r:?}")
            }
            _ => {}
        }
    }
    let checks: Vec<ratelab::experiments::outage::CheckRow> =
        ratelab::experiments::outage::CHECKS.read(&dir).unwrap();
    let dead = (checks.iter()).filter(|c| {
        c.limiter == Some(window)
            && c.breaker == "off"
            && c.phase == ratelab::experiments::outage::Phase::Dead
    });
    let failures: Vec<_> = dead.map(|c| (c.route, c.failure)).collect();
    assert!(!failures.is_empty());
    assert!(
        (failures.iter()).all(|f| *f == (Route::Redis, Some(Failure::Connection))),
        "the adapter's connection errors are the store's connection failures: {failures:?}"
    );
    let cell = common::custom_limiter_cell(out.path(), "fixture-window", "outage: dead");
    assert!(
        cell.contains("(lua-bucket: fail-open ") && cell.contains("answered by policy"),
        "{cell}"
    );
    // Its client reconnects by itself: it decides again after the restart and after the hang.
    for after in ["restart", "hang"] {
        let id = format!("limiter.fixture-window.outage.decides-after-{after}");
        let (verdict, measured) = common::limiter_claim(out.path(), &id);
        assert_eq!(verdict, "holds", "{after}: {measured}");
    }
    assert_eq!(
        common::mutation::every_limiter_claim_can_hold_and_fail(out.path()),
        3
    );
}

#[test]
fn a_limiter_process_falling_silent_stops_the_run_instead_of_timing_out() {
    let out = tempfile::tempdir().unwrap();
    let silent = fixture_limiter("silent-mid");
    let mut ctx = common::ctx(out.path());
    ctx.limiters = vec![silent];
    ctx.sets = common::sets(SHORT);
    ctx.sets.push(("policies".into(), "[\"fail-open\"]".into()));
    let err = (ratelab::experiments::find("outage").unwrap().run(&ctx))
        .expect_err("a silent adapter stops the run");
    let text = ratelab::errors::one_line(&err);
    assert!(
        text.contains("limiter process fixture-silent-mid") && text.contains("no answer to check"),
        "{text}"
    );
    assert!(
        !out.path().join("outage").exists(),
        "nothing partial is written"
    );
    assert!(
        adapters_left("silent-after").is_empty(),
        "no adapter is left running"
    );
}
