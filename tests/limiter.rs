//! Every strategy against a real redis-server, driven as the load generator drives it: tasks on a
//! current-thread runtime, several in flight, on one shared connection (or one each, for WATCH).

mod common;

use ratelab::limiter::{
    unix_ms, Decision, LimitSpec, Limiter, LogClock, LogMember, LogVariant, Strategy,
};
use redis::aio::MultiplexedConnection;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// A limit of `capacity` that neither refills nor rolls over during a test.
fn spec(capacity: u64) -> LimitSpec {
    LimitSpec {
        capacity,
        refill_per_sec: 0.0,
        window_ms: 600_000,
        window_origin_ms: unix_ms(),
        idle_ttl_ms: 600_000,
        log: LogVariant::default(),
        watch_retries: 10,
    }
}

/// Makes `checks` checks of `key`, `in_flight` at a time, on one shared connection unless the
/// strategy needs one per in-flight request (as the load generator must honour).
fn drive(url: &str, limiter: &Limiter, key: &str, checks: u64, in_flight: usize) -> Vec<Decision> {
    let own_connections = limiter.strategy().needs_own_connection();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        let client = redis::Client::open(url).unwrap();
        let shared = client.get_multiplexed_async_connection().await.unwrap();
        let limiter = Rc::new(limiter.clone());
        let left = Rc::new(Cell::new(checks));
        let out = Rc::new(RefCell::new(Vec::new()));
        let mut tasks = Vec::new();
        for _ in 0..in_flight {
            let mut con: MultiplexedConnection = if own_connections {
                client.get_multiplexed_async_connection().await.unwrap()
            } else {
                shared.clone()
            };
            let (limiter, left, out, key) =
                (limiter.clone(), left.clone(), out.clone(), key.to_string());
            tasks.push(tokio::task::spawn_local(async move {
                while left.get() > 0 {
                    left.set(left.get() - 1);
                    let d = limiter.check(&mut con, &key).await.expect("check succeeds");
                    out.borrow_mut().push(d);
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        out.take()
    })
}

fn admitted(decisions: &[Decision]) -> usize {
    decisions.iter().filter(|d| d.allowed).count()
}

fn sync_con(server: &ratelab::server::RedisServer) -> redis::Connection {
    server.connection().unwrap()
}

#[test]
fn atomic_strategies_admit_exactly_the_limit_with_8_in_flight_on_one_connection() {
    let server = common::start_server();
    for strategy in [
        Strategy::LuaBucket,
        Strategy::IncrWindow,
        Strategy::LuaWindow,
        Strategy::MultiWindow,
        Strategy::LuaLog,
        Strategy::LuaSwc,
        Strategy::LuaGcra,
    ] {
        let limiter = Limiter::new(strategy, spec(100));
        let decisions = drive(
            &server.url(),
            &limiter,
            &format!("exact:{strategy}"),
            1000,
            8,
        );
        assert_eq!(decisions.len(), 1000);
        assert_eq!(admitted(&decisions), 100, "{strategy}");
        assert!(
            decisions.iter().all(|d| !d.aborted && d.retries == 0),
            "{strategy}"
        );
        assert!(decisions.iter().all(|d| d.redis_calls >= 1), "{strategy}");
    }
}

#[test]
fn redis_calls_count_round_trips() {
    let server = common::start_server();
    let url = server.url();
    let calls = |strategy, capacity, checks, key: &str| -> Vec<(bool, u32)> {
        let limiter = Limiter::new(strategy, spec(capacity));
        drive(&url, &limiter, key, checks, 1)
            .iter()
            .map(|d| (d.allowed, d.redis_calls))
            .collect()
    };
    // Read then write when there is a token; the read alone when there is none.
    assert_eq!(
        calls(Strategy::NaiveBucket, 1, 2, "c:nb"),
        [(true, 2), (false, 1)]
    );
    assert_eq!(
        calls(Strategy::NaiveWindow, 1, 2, "c:nw"),
        [(true, 2), (false, 1)]
    );
    // INCR, and EXPIRE only for the request that created the counter.
    assert_eq!(
        calls(Strategy::IncrWindow, 1, 3, "c:iw"),
        [(true, 2), (false, 1), (false, 1)]
    );
    assert_eq!(
        calls(Strategy::MultiWindow, 1, 2, "c:mw"),
        [(true, 1), (false, 1)]
    );
    assert_eq!(calls(Strategy::Get, 0, 2, "c:get"), [(true, 1), (true, 1)]);
    // WATCH, HMGET, MULTI..EXEC: three round trips per attempt, a refusal included.
    assert_eq!(
        calls(Strategy::WatchBucket, 1, 2, "c:wb"),
        [(true, 3), (false, 3)]
    );

    // A script Redis has forgotten costs one failed EVALSHA and one EVAL, which caches it again.
    redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query::<()>(&mut sync_con(&server))
        .unwrap();
    assert_eq!(
        calls(Strategy::LuaWindow, 1, 2, "c:lw"),
        [(true, 2), (false, 1)]
    );
    assert_eq!(
        calls(Strategy::LuaBucket, 1, 2, "c:lb"),
        [(true, 2), (false, 1)]
    );
}

#[test]
fn denied_window_requests_are_told_when_the_window_ends() {
    let server = common::start_server();
    for strategy in [
        Strategy::NaiveWindow,
        Strategy::IncrWindow,
        Strategy::LuaWindow,
        Strategy::MultiWindow,
    ] {
        let mut limit = spec(2);
        limit.window_ms = 10_000;
        let limiter = Limiter::new(strategy, limit);
        let d = drive(&server.url(), &limiter, &format!("retry:{strategy}"), 3, 1);
        assert_eq!((d[0].remaining, d[1].remaining), (1, 0), "{strategy}");
        assert!(!d[2].allowed, "{strategy}");
        assert!(
            d[2].retry_ms > 0 && d[2].retry_ms <= 10_000,
            "{strategy}: {:?}",
            d[2]
        );
    }
}

fn zcard(server: &ratelab::server::RedisServer, key: &str) -> u64 {
    redis::cmd("ZCARD")
        .arg(key)
        .query(&mut sync_con(server))
        .unwrap()
}

#[test]
fn sliding_log_admits_again_once_the_window_passes_and_never_logs_past_the_limit() {
    let server = common::start_server();
    let mut limit = spec(10);
    limit.window_ms = 300;
    let limiter = Limiter::new(Strategy::LuaLog, limit);
    for round in 0..3 {
        let d = drive(&server.url(), &limiter, "log:slide", 100, 8);
        assert_eq!(admitted(&d), 10, "round {round}");
        assert_eq!(zcard(&server, "log:slide"), 10, "round {round}");
        let denied = d.iter().find(|d| !d.allowed).unwrap();
        assert!((1..=300).contains(&denied.retry_ms), "{denied:?}");
        std::thread::sleep(std::time::Duration::from_millis(350));
    }
    // The log expires with its newest entry.
    assert_eq!(zcard(&server, "log:slide"), 0);
}

#[test]
fn sliding_log_variants_unique_members_are_exact_and_time_in_ms_over_admits() {
    let server = common::start_server();
    let run = |member, clock, key: &str| {
        let mut limit = spec(100);
        limit.log = LogVariant { member, clock };
        let d = drive(
            &server.url(),
            &Limiter::new(Strategy::LuaLog, limit),
            key,
            1000,
            8,
        );
        (admitted(&d), zcard(&server, key))
    };
    assert_eq!(
        run(LogMember::UniqueId, LogClock::Caller, "v:id:caller"),
        (100, 100)
    );
    assert_eq!(
        run(LogMember::RedisMicros, LogClock::Redis, "v:us:redis"),
        (100, 100)
    );
    // Eight requests in flight land several per ms; each ms keeps one entry, so the log undercounts.
    for clock in [LogClock::Redis, LogClock::Caller] {
        let (admitted, logged) = run(LogMember::TimeMs, clock, &format!("v:ms:{clock:?}"));
        assert!(admitted > 100, "{clock:?}: {admitted} admitted");
        assert!(logged <= 100, "{clock:?}: {logged} logged");
    }
}

fn sleep_ms(ms: u64) {
    std::thread::sleep(std::time::Duration::from_millis(ms));
}

#[test]
fn token_bucket_and_gcra_admit_again_as_they_refill() {
    let server = common::start_server();
    // Five requests of burst, then one every 100 ms: by refill rate for the bucket, by emission
    // interval (window / limit) for GCRA.
    let mut bucket = spec(5);
    bucket.refill_per_sec = 10.0;
    let mut gcra = spec(5);
    gcra.window_ms = 500;
    for (strategy, limit) in [
        (Strategy::LuaBucket, bucket),
        (Strategy::WatchBucket, bucket),
        (Strategy::LuaGcra, gcra),
    ] {
        let limiter = Limiter::new(strategy, limit);
        let key = format!("refill:{strategy}");
        let first = drive(&server.url(), &limiter, &key, 20, 4);
        assert_eq!(admitted(&first), 5, "{strategy}");
        let denied = first.iter().find(|d| !d.allowed).unwrap();
        assert!(
            (1..=100).contains(&denied.retry_ms),
            "{strategy}: {denied:?}"
        );
        sleep_ms(250);
        // 2.5 intervals passed (a little more if the sleep overran).
        let later = drive(&server.url(), &limiter, &key, 20, 4);
        assert!((2..=3).contains(&admitted(&later)), "{strategy}: {later:?}");
    }
}

#[test]
fn sliding_window_counter_weighs_the_previous_window_then_forgets_it() {
    let server = common::start_server();
    let mut limit = spec(10);
    limit.window_ms = 300;
    let limiter = Limiter::new(Strategy::LuaSwc, limit);
    let first = drive(&server.url(), &limiter, "swc:slide", 30, 4);
    assert_eq!(admitted(&first), 10);
    let denied = first.iter().find(|d| !d.allowed).unwrap();
    assert!(denied.retry_ms > 0 && denied.retry_ms <= 600, "{denied:?}");
    // A quarter into the next window, the full previous one still weighs about three quarters.
    sleep_ms(375);
    let partial = admitted(&drive(&server.url(), &limiter, "swc:slide", 30, 4));
    assert!((1..10).contains(&partial), "{partial} admitted");
    // Two windows later, nothing weighs: a full window's worth again.
    sleep_ms(650);
    assert_eq!(
        admitted(&drive(&server.url(), &limiter, "swc:slide", 30, 4)),
        10
    );
}

fn hget_tokens(server: &ratelab::server::RedisServer, key: &str) -> f64 {
    redis::cmd("HGET")
        .arg(key)
        .arg("tokens")
        .query(&mut sync_con(server))
        .unwrap()
}

fn watch_spec(capacity: u64, watch_retries: u32) -> LimitSpec {
    LimitSpec {
        watch_retries,
        ..spec(capacity)
    }
}

#[test]
fn watch_bucket_alone_admits_exactly_the_capacity_without_retries() {
    let server = common::start_server();
    let limiter = Limiter::new(Strategy::WatchBucket, watch_spec(100, 10));
    let d = drive(&server.url(), &limiter, "watch:alone", 1000, 1);
    assert_eq!(admitted(&d), 100);
    assert!(d.iter().all(|d| d.retries == 0 && !d.aborted));
    assert_eq!(hget_tokens(&server, "watch:alone"), 0.0);
}

#[test]
fn watch_bucket_with_a_small_budget_refuses_legitimate_requests_and_counts_them() {
    let server = common::start_server();
    // Enough tokens for every check: any refusal is the retry budget running out.
    let limiter = Limiter::new(Strategy::WatchBucket, watch_spec(1000, 1));
    let d = drive(&server.url(), &limiter, "watch:small", 1000, 8);
    let aborted = d.iter().filter(|d| d.aborted).count();
    let retried: u32 = d.iter().map(|d| d.retries).sum();
    assert!(
        aborted > 0,
        "8 writers on one key should exhaust a budget of 1"
    );
    assert_eq!(admitted(&d) + aborted, 1000, "every refusal is an abort");
    assert!(d
        .iter()
        .filter(|d| d.aborted)
        .all(|d| d.retries == 1 && d.redis_calls == 6));
    assert!(retried as usize >= aborted);
    // What was admitted is exactly what was spent: optimistic, but never over.
    assert_eq!(
        hget_tokens(&server, "watch:small"),
        (1000 - admitted(&d)) as f64
    );
}

#[test]
fn watch_bucket_with_a_big_budget_never_over_admits() {
    let server = common::start_server();
    let limiter = Limiter::new(Strategy::WatchBucket, watch_spec(100, 1000));
    let d = drive(&server.url(), &limiter, "watch:big", 1000, 8);
    assert_eq!(admitted(&d), 100);
    assert!(d.iter().all(|d| !d.aborted));
    assert!(
        d.iter().any(|d| d.retries > 0),
        "8 writers on one key contend"
    );
    assert_eq!(hget_tokens(&server, "watch:big"), 0.0);
}
