//! The optimistic bucket: exact alone, never over, and refusing legitimate requests when its
//! WATCH retry budget runs out under contention.

use super::wire::on_the_wire;
use super::{admitted, common, drive, drive_on, spec, sync_con};
use ratelab::limiter::{LimitSpec, Limiter, Strategy};

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
    let (d, wire) = on_the_wire(&server, || {
        drive(&server.url(), &limiter, "watch:small", 1000, 8)
    });
    let aborted = d.iter().filter(|d| d.aborted).count();
    let retried: u32 = d.iter().map(|d| d.retries).sum();
    assert!(
        aborted > 0,
        "8 writers on one key should exhaust a budget of 1"
    );
    assert_eq!(admitted(&d) + aborted, 1000, "every refusal is an abort");
    assert!(d.iter().filter(|d| d.aborted).all(|d| d.retries == 1));
    assert!(retried as usize >= aborted);
    // On the wire: every attempt is WATCH, HMGET, MULTI, EXEC; only a committed one runs its
    // HSET and PEXPIRE. The round trips reported are three per attempt (MULTI..EXEC is one).
    let attempts = u64::from(retried) + 1000;
    for command in ["watch", "hmget", "multi", "exec"] {
        assert_eq!(wire.calls(command), attempts, "{command}: {wire:?}");
    }
    for command in ["hset", "pexpire"] {
        assert_eq!(
            wire.calls(command),
            admitted(&d) as u64,
            "{command}: {wire:?}"
        );
    }
    let reported: u64 = d.iter().map(|d| u64::from(d.redis_calls)).sum();
    let round_trips = wire.calls("watch") + wire.calls("hmget") + wire.calls("exec");
    assert_eq!(reported, round_trips, "{wire:?}");
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

#[test]
fn watch_bucket_sharing_one_connection_loses_its_watch_and_over_admits() {
    let server = common::start_server();
    let limiter = Limiter::new(Strategy::WatchBucket, watch_spec(100, 10));
    // One request's EXEC ends the WATCH of every request on the connection: the others then
    // commit stale reads unchecked, as the naive bucket does. Hence needs_own_connection.
    let d = drive_on(&server.url(), &limiter, "watch:shared", 1000, 8, false);
    assert!(admitted(&d) > 100, "{} admitted", admitted(&d));
}
