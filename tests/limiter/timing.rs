//! Strategies that forget: logs and windows slide, buckets and GCRA refill (waits under 1 s).

use super::{admitted, common, drive, sleep_ms, spec, sync_con};
use ratelab::limiter::{unix_ms, Limiter, LogClock, LogMember, LogVariant, Strategy};
use std::time::Instant;

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
    limit.window_ms = 500;
    let limiter = Limiter::new(Strategy::LuaLog, limit);
    for round in 0..3 {
        let d = drive(&server.url(), &limiter, "log:slide", 100, 8);
        assert_eq!(admitted(&d), 10, "round {round}");
        assert_eq!(zcard(&server, "log:slide"), 10, "round {round}");
        let denied = d.iter().find(|d| !d.allowed).unwrap();
        assert!((1..=500).contains(&denied.retry_ms), "{denied:?}");
        sleep_ms(550);
    }
    // The log expires with its newest entry.
    assert_eq!(zcard(&server, "log:slide"), 0);
}

#[test]
fn sliding_log_variants_unique_members_are_exact_and_time_in_ms_over_admits() {
    let server = common::start_server();
    let run = |member, clock, key: &str| {
        let mut limit = spec(100);
        limit.log = LogVariant {
            member,
            clock,
            member_bytes: None,
        };
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
        let start = Instant::now();
        let first = admitted(&drive(&server.url(), &limiter, &key, 20, 4));
        // Nothing can pass beyond the burst and what refilled meanwhile (a slow machine refills more).
        let refilled = |since: Instant| since.elapsed().as_millis() as usize / 100;
        assert!(
            (5..=5 + refilled(start)).contains(&first),
            "{strategy}: {first}"
        );
        sleep_ms(250);
        let later = drive(&server.url(), &limiter, &key, 20, 4);
        let denied = later.iter().find(|d| !d.allowed).unwrap();
        assert!(
            (1..=100).contains(&denied.retry_ms),
            "{strategy}: {denied:?}"
        );
        // At least the 2.5 tokens of the sleep came back, and nothing more than time allows.
        let total = first + admitted(&later);
        assert!(admitted(&later) >= 2, "{strategy}: {later:?}");
        assert!(total <= 5 + refilled(start), "{strategy}: {total} in all");
    }
}

/// Admissions a burst at `t_ms` after the origin gets, once window 0 took the whole limit of 10
/// and nothing came after: none in window 0, then more as window 0 slides out, then all 10.
fn swc_admits(t_ms: u64, window_ms: u64) -> usize {
    match t_ms / window_ms {
        0 => 0,
        1 => (10 * (t_ms - window_ms)).div_ceil(window_ms) as usize,
        _ => 10,
    }
}

#[test]
fn sliding_window_counter_weighs_the_previous_window_then_forgets_it() {
    let server = common::start_server();
    let mut limit = spec(10);
    limit.window_ms = 400;
    let limiter = Limiter::new(Strategy::LuaSwc, limit);
    let since_origin = || unix_ms() - limit.window_origin_ms;
    let first = drive(&server.url(), &limiter, "swc:slide", 30, 4);
    assert_eq!(admitted(&first), 10);
    let denied = first.iter().find(|d| !d.allowed).unwrap();
    assert!(denied.retry_ms > 0 && denied.retry_ms <= 800, "{denied:?}");
    // A quarter into the next window, the full previous one still weighs about three quarters:
    // about 3 pass. The bounds come from the clock, in case the sleep or the burst overran.
    sleep_ms(500);
    let start = since_origin();
    let partial = admitted(&drive(&server.url(), &limiter, "swc:slide", 30, 4));
    let end = since_origin();
    let (low, high) = (swc_admits(start - 1, 400), swc_admits(end + 1, 400));
    assert!(
        (low..=high).contains(&partial),
        "{partial} admitted, not in {low}..={high}"
    );
    assert!(
        partial < 10 || start >= 800,
        "window 0 still weighed at {start} ms"
    );
    // Two windows later, nothing weighs: a full window's worth again.
    sleep_ms(850);
    assert_eq!(
        admitted(&drive(&server.url(), &limiter, "swc:slide", 30, 4)),
        10
    );
}
