//! Atomic strategies admit exactly the limit; every decision counts its round trips.

use super::{admitted, common, drive, spec, sync_con};
use ratelab::limiter::{Limiter, Strategy};

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
