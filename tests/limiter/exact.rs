//! Atomic strategies admit exactly the limit; the round trips each decision reports are the ones
//! Redis saw.

use super::wire::{decide_on_the_wire, Wire};
use super::{admitted, common, drive, spec, sync_con};
use ratelab::limiter::{Limiter, Strategy};
use ratelab::server::{RedisServer, ServerSample, Target};

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

/// One decision as Redis should see it: allowed or not, the commands it ran, once each (a
/// script's and a transaction's included), and the requests written to it: the round trips.
type OnWire = (bool, &'static str, u64);

/// Checks `key` once per entry of `want`, one at a time, and compares each decision with what
/// Redis counted while it was made; the limiter's own `redis_calls` must be what Redis saw.
fn assert_wire(
    server: &RedisServer,
    strategy: Strategy,
    capacity: u64,
    key: &str,
    want: &[OnWire],
) {
    let limiter = Limiter::new(strategy, spec(capacity));
    let seen = decide_on_the_wire(server, &limiter, key, want.len() as u64);
    assert_eq!(seen.len(), want.len());
    for (i, ((decision, wire), &(allowed, commands, round_trips))) in
        seen.iter().zip(want).enumerate()
    {
        let expected = Wire {
            commands: commands
                .split_whitespace()
                .map(|c| (c.to_string(), 1))
                .collect(),
            reads: round_trips,
        };
        let what = format!("{strategy}, decision {i}");
        assert_eq!((decision.allowed, wire), (allowed, &expected), "{what}");
        assert_eq!(
            u64::from(decision.redis_calls),
            wire.reads,
            "{what}: self-reported round trips"
        );
    }
}

#[test]
fn redis_calls_are_the_round_trips_redis_saw() {
    let server = common::start_server();
    let s = &server;
    // Read then write when there is a token; the read alone when there is none.
    let naive_bucket = [(true, "hmget hset", 2), (false, "hmget", 1)];
    assert_wire(s, Strategy::NaiveBucket, 1, "c:nb", &naive_bucket);
    // GET, then MULTI INCRBY EXPIRE EXEC written at once (redis-rs sends INCR as INCRBY): four
    // commands, one round trip.
    let naive_window = [(true, "get multi incrby expire exec", 2), (false, "get", 1)];
    assert_wire(s, Strategy::NaiveWindow, 1, "c:nw", &naive_window);
    // INCR, and EXPIRE only for the request that created the counter.
    let incr_window = [
        (true, "incr expire", 2),
        (false, "incr", 1),
        (false, "incr", 1),
    ];
    assert_wire(s, Strategy::IncrWindow, 1, "c:iw", &incr_window);
    let multi_window = [
        (true, "multi incrby pexpire exec", 1),
        (false, "multi incrby pexpire exec", 1),
    ];
    assert_wire(s, Strategy::MultiWindow, 1, "c:mw", &multi_window);
    assert_wire(
        s,
        Strategy::Get,
        0,
        "c:get",
        &[(true, "get", 1), (true, "get", 1)],
    );
    // WATCH, HMGET, MULTI..EXEC: three round trips per attempt, a refusal included (its
    // transaction only refreshes the expiry).
    let watch_bucket = [
        (true, "watch hmget multi hset pexpire exec", 3),
        (false, "watch hmget multi pexpire exec", 3),
    ];
    assert_wire(s, Strategy::WatchBucket, 1, "c:wb", &watch_bucket);

    // A script Redis has forgotten costs one failed EVALSHA and one EVAL, which caches it again;
    // the commands a script runs count on the server but cost no round trip.
    redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query::<()>(&mut sync_con(s))
        .unwrap();
    let lua_window = [
        (true, "evalsha eval incr pexpire", 2),
        (false, "evalsha incr", 1),
    ];
    assert_wire(s, Strategy::LuaWindow, 1, "c:lw", &lua_window);
    let lua_bucket = [
        (true, "evalsha eval time hmget hset pexpire", 2),
        (false, "evalsha time hmget pexpire", 1),
    ];
    assert_wire(s, Strategy::LuaBucket, 1, "c:lb", &lua_bucket);
    let lua_swc = [
        (true, "evalsha eval time hmget hset pexpire", 2),
        (false, "evalsha time hmget", 1),
    ];
    assert_wire(s, Strategy::LuaSwc, 1, "c:swc", &lua_swc);
    let lua_log = [
        (
            true,
            "evalsha eval time zremrangebyscore zcard zadd pexpire",
            2,
        ),
        (false, "evalsha time zremrangebyscore zcard zrange", 1),
    ];
    assert_wire(s, Strategy::LuaLog, 1, "c:log", &lua_log);
    let lua_gcra = [
        (true, "evalsha eval time get set", 2),
        (false, "evalsha time get", 1),
    ];
    assert_wire(s, Strategy::LuaGcra, 1, "c:gcra", &lua_gcra);
}

/// atomic's `server_commands` is Redis's count between two samples: the commands the decisions ran,
/// none of the sampling's own (its INFO calls, its connections' handshake) nor the clients'.
#[test]
fn sampled_command_count_is_the_commands_the_decisions_ran() {
    let target = Target::Managed(common::start_server());
    let limiter = Limiter::new(Strategy::WatchBucket, spec(100));
    let before = ServerSample::take(&target).unwrap();
    let d = drive(&target.url(), &limiter, "c:sampled", 300, 1);
    let after = ServerSample::take(&target).unwrap();
    assert_eq!(admitted(&d), 100);
    // WATCH HMGET MULTI HSET PEXPIRE EXEC per admission; no HSET in a refusal.
    let executed = before.cost_until(&after).commands_executed();
    assert_eq!(executed, 100 * 6 + 200 * 5);
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
