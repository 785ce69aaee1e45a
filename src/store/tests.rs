//! The store against fake servers on paused time: a "hung" listener that accepts connections and
//! never answers (what a SIGSTOPped Redis looks like to a client), and a closed port (a dead one).
//! Time is tokio's paused clock, so a 250 ms budget costs no real waiting and the measured
//! durations are exact. The real-Redis behaviour is in tests/outage.rs.

use super::*;
use crate::limiter::{Attempt, Check, Decide, Decider, LimitSpec, Limiter, Link, Strategy};
use redis::aio::MultiplexedConnection;
use std::sync::Arc;
use tokio::net::TcpListener;

/// Accepts every connection and holds it open without reading or answering.
async fn hung_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    format!("redis://127.0.0.1:{port}/")
}

/// A port nothing listens on: connecting is refused at once.
fn dead_server() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("redis://127.0.0.1:{port}/")
}

fn store(url: &str, policy: Policy, breaker: Option<(u32, u64)>) -> Store {
    let limiter = Limiter::new(Strategy::LuaBucket, LimitSpec::default());
    store_with(url, policy, breaker, limiter.into())
}

fn store_with(url: &str, policy: Policy, breaker: Option<(u32, u64)>, decider: Decider) -> Store {
    let settings = StoreSettings {
        budget: Duration::from_millis(250),
        policy,
        breaker: breaker.map(|(k, cooldown_ms)| BreakerSettings {
            failures: k,
            cooldown: Duration::from_millis(cooldown_ms),
            probe_budget: Duration::from_millis(20),
            probe_by: ProbeBy::Check,
        }),
        flaw: None,
        reconnect: Default::default(),
    };
    Store::new(url, decider, settings).unwrap()
}

/// (answer, virtual time the check took)
async fn timed(store: &Store) -> (Answer, Duration) {
    let start = Instant::now();
    let answer = store.check("k").await.unwrap();
    (answer, start.elapsed())
}

#[tokio::test(start_paused = true)]
async fn a_hung_server_costs_exactly_the_budget_and_the_policy_answers() {
    let url = hung_server().await;
    for (policy, want) in [
        (Policy::FailOpen, Outcome::DegradedAllowed),
        (Policy::FailClosed, Outcome::DegradedDenied),
    ] {
        let s = store(&url, policy, None);
        for _ in 0..3 {
            let (a, took) = timed(&s).await;
            assert_eq!(a.outcome, want);
            assert_eq!((a.route, a.failure), (Route::Redis, Some(Failure::Timeout)));
            assert_eq!(took, Duration::from_millis(250), "{policy:?}");
        }
        let c = s.counters();
        assert_eq!(c.timeouts, 3);
        assert_eq!(c.degraded_allowed + c.degraded_denied, 3);
        assert_eq!(
            c.allowed + c.denied,
            0,
            "degraded answers are not decisions"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_dead_server_fails_at_once_without_a_breaker() {
    let s = store(&dead_server(), Policy::FailClosed, None);
    for _ in 0..5 {
        let (a, took) = timed(&s).await;
        assert_eq!(a.outcome, Outcome::DegradedDenied);
        assert_eq!(a.failure, Some(Failure::Connection));
        assert!(a.reconnected, "every check tries to connect again");
        assert_eq!(took, Duration::ZERO, "refused at once, no timer involved");
    }
}

#[tokio::test(start_paused = true)]
async fn an_error_path_that_denies_answers_a_plain_denial_under_fail_open() {
    let limiter = Limiter::new(Strategy::LuaBucket, LimitSpec::default());
    let settings = StoreSettings {
        budget: Duration::from_millis(250),
        policy: Policy::FailOpen,
        breaker: None,
        flaw: Some(Flaw::DeniesOnError),
        reconnect: Default::default(),
    };
    let s = Store::new(&dead_server(), Decider::from(limiter), settings).unwrap();
    let (a, _) = timed(&s).await;
    assert_eq!(
        (a.outcome, a.failure),
        (Outcome::Denied, Some(Failure::Connection))
    );
    let c = s.counters();
    assert_eq!(
        (c.degraded_allowed, c.degraded_denied),
        (0, 0),
        "nothing says it degraded"
    );
}

#[tokio::test(start_paused = true)]
async fn the_breaker_limits_full_budget_checks_to_k_and_probes_cheaply() {
    let s = store(&hung_server().await, Policy::FailOpen, Some((3, 1000)));
    let mut paid = Vec::new();
    for _ in 0..3 {
        let (a, took) = timed(&s).await;
        assert_eq!(a.route, Route::Redis);
        paid.push(took);
    }
    assert_eq!(paid, [Duration::from_millis(250); 3]);
    assert_eq!(s.breaker_state(), BreakerState::Open);
    // Open: answered by policy at once, for the whole cooldown.
    let opened_at = Instant::now();
    while opened_at.elapsed() < Duration::from_millis(990) {
        let (a, took) = timed(&s).await;
        assert_eq!(
            (a.route, a.outcome),
            (Route::Open, Outcome::DegradedAllowed)
        );
        assert_eq!(took, Duration::ZERO);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(10)).await;
    // The first check after the cooldown probes, and pays the probe budget, not the full one.
    let (a, took) = timed(&s).await;
    assert_eq!((a.route, a.failure), (Route::Probe, Some(Failure::Timeout)));
    assert!(a.reconnected, "the probe tests a fresh connection");
    assert_eq!(took, Duration::from_millis(20));
    assert_eq!(a.breaker, BreakerState::Open);
    let c = s.counters();
    assert_eq!((c.timeouts, c.probes, c.breaker_opened), (4, 1, 2));
}

#[tokio::test(start_paused = true)]
async fn a_probe_given_up_by_its_caller_reopens_the_breaker() {
    let s = store(&hung_server().await, Policy::FailOpen, Some((1, 100)));
    timed(&s).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let gave_up = tokio::time::timeout(Duration::from_millis(5), s.check("k")).await;
    assert!(gave_up.is_err(), "the caller's own deadline came first");
    assert_eq!(s.breaker_state(), BreakerState::Open, "not stuck half-open");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (a, _) = timed(&s).await;
    assert_eq!(a.route, Route::Probe, "a later request may probe again");
}

/// A decider with a link of its own (as a limiter process is) that never answers.
struct Silent;

impl Decide for Silent {
    fn link(&self) -> Link {
        Link::Own
    }

    async fn decide<'a>(
        &'a self,
        con: Option<&'a mut MultiplexedConnection>,
        _check: Check<'a>,
    ) -> Attempt {
        assert!(
            con.is_none(),
            "a decider with its own link is handed no connection"
        );
        std::future::pending().await
    }
}

#[tokio::test(start_paused = true)]
async fn a_decider_with_its_own_link_decides_without_the_stores_connection() {
    // Nothing listens at the URL: a store that connected first would answer by policy.
    let spec = LimitSpec {
        capacity: 2,
        window_ms: 3_600_000,
        ..LimitSpec::default()
    };
    let s = store_with(
        &dead_server(),
        Policy::FailClosed,
        None,
        Decider::in_memory(spec),
    );
    let mut seen = Vec::new();
    for _ in 0..3 {
        let (a, took) = timed(&s).await;
        assert!(!a.reconnected && a.failure.is_none());
        assert_eq!(took, Duration::ZERO);
        seen.push(a.outcome);
    }
    assert_eq!(seen, [Outcome::Allowed, Outcome::Allowed, Outcome::Denied]);
    assert_eq!(s.counters().connection_errors, 0);
    // One that never answers is bounded by the budget like Redis is, and answered by policy.
    let s = store_with(
        &dead_server(),
        Policy::FailOpen,
        None,
        Decider::Boxed(Arc::new(Silent)),
    );
    let (a, took) = timed(&s).await;
    assert_eq!(
        (a.outcome, a.failure),
        (Outcome::DegradedAllowed, Some(Failure::Timeout))
    );
    assert_eq!(took, Duration::from_millis(250));
}
