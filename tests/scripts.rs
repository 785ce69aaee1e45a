//! What survives a restart and a replica, per way of invoking the token bucket, against real
//! servers: EVALSHA answers NOSCRIPT after a restart and on a replica, the library survives an RDB
//! restart and reaches the replica, and each client fallback turns NOSCRIPT into a decision at the
//! round trips it states, as Redis itself counted them. No timing is asserted.

use ratelab::limiter::{library, Attempt, Invocation, LimitSpec, Limiter, Strategy};
use ratelab::server::{self, Info, Persistence, RedisServer, ServerOptions, ADMIN_TIMEOUT};
use redis::{ErrorKind, ServerErrorKind};

const KEY: &str = "scripts-test:bucket";

fn bucket(mode: Invocation) -> Limiter {
    let spec = LimitSpec {
        capacity: 1000,
        refill_per_sec: 1000.0,
        ..LimitSpec::default()
    };
    Limiter::with_invocation(Strategy::LuaBucket, spec, mode).expect("the bucket takes every way")
}

fn start(persistence: Persistence) -> RedisServer {
    let opts = ServerOptions {
        persistence,
        ..ServerOptions::default()
    };
    RedisServer::start(&opts).expect("redis-server starts (is it installed?)")
}

/// Caches the bucket script and loads the library, as a deploy does.
fn load(server: &RedisServer) {
    let mut con = server.connection().unwrap();
    let limiter = bucket(Invocation::Evalsha);
    let (source, _) = limiter.script().unwrap();
    redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(source)
        .query::<String>(&mut con)
        .unwrap();
    let mut load = redis::cmd("FUNCTION");
    load.arg("LOAD").arg("REPLACE").arg(library());
    load.query::<String>(&mut con).unwrap();
}

fn script_exists(server: &RedisServer) -> bool {
    let (_, hash) = bucket(Invocation::Evalsha)
        .script()
        .map(|(s, h)| (s, h.to_string()))
        .unwrap();
    let mut con = server.connection().unwrap();
    let found: Vec<u8> = redis::cmd("SCRIPT")
        .arg("EXISTS")
        .arg(hash)
        .query(&mut con)
        .unwrap();
    found == [1]
}

fn libraries(server: &RedisServer) -> usize {
    let mut con = server.connection().unwrap();
    let listed: Vec<redis::Value> = redis::cmd("FUNCTION").arg("LIST").query(&mut con).unwrap();
    listed.len()
}

fn reads(con: &mut redis::Connection) -> u64 {
    let text: String = redis::cmd("INFO").arg("stats").query(con).unwrap();
    Info::parse(&text).get_f64("total_reads_processed").unwrap() as u64
}

/// One check of `KEY` on a fresh connection, and the requests Redis read while it was made
/// (one per round trip: the check waits for each reply).
fn attempt(server: &RedisServer, mode: Invocation) -> (Attempt, u64) {
    let mut counters = server.connection().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = redis::Client::open(server.url()).unwrap();
        let mut con = client.get_multiplexed_async_connection().await.unwrap();
        let before = reads(&mut counters);
        let attempt = bucket(mode).attempt(&mut con, KEY).await;
        // The later INFO's own read is counted by the time it answers.
        (attempt, reads(&mut counters) - before - 1)
    })
}

fn server_error(attempt: &Attempt) -> ErrorKind {
    match &attempt.outcome {
        Err(ratelab::limiter::LimiterError::Redis(e)) => e.kind(),
        other => panic!("expected a Redis error, got {other:?}"),
    }
}

#[test]
fn evalsha_loses_its_script_on_restart_and_replica_while_the_library_survives() {
    let mut primary = start(Persistence::Rdb);
    let replica = RedisServer::start_replica_of(&primary, &ServerOptions::default()).unwrap();
    load(&primary);
    for mode in [Invocation::Evalsha, Invocation::Fcall] {
        let (a, _) = attempt(&primary, mode);
        assert!(a.outcome.is_ok(), "{mode} on the primary: {:?}", a.outcome);
    }
    server::wait_caught_up(&primary, &replica, ADMIN_TIMEOUT).unwrap();

    // The replica: no script (it is not replicated), but the library is there.
    assert!(!script_exists(&replica));
    let (a, _) = attempt(&replica, Invocation::Evalsha);
    assert_eq!(
        server_error(&a),
        ErrorKind::Server(ServerErrorKind::NoScript)
    );
    assert!(a.noscript && a.round_trips == 1);
    assert_eq!(libraries(&replica), 1, "FUNCTION LOAD reaches the replica");
    // FCALL finds the function there; being a writing one, the read-only replica refuses it.
    let (a, _) = attempt(&replica, Invocation::Fcall);
    assert_eq!(
        server_error(&a),
        ErrorKind::Server(ServerErrorKind::ReadOnly),
        "{:?}",
        a.outcome
    );
    assert!(!a.noscript);
    replica.promote().unwrap();
    let (a, _) = attempt(&replica, Invocation::Fcall);
    assert!(
        a.outcome.is_ok() && a.round_trips == 1,
        "FCALL on the promoted replica: {:?}",
        a.outcome
    );
    let (a, _) = attempt(&replica, Invocation::Evalsha);
    assert_eq!(
        server_error(&a),
        ErrorKind::Server(ServerErrorKind::NoScript)
    );

    // A restart that keeps the RDB: the script cache is gone, the library is not.
    primary.restart_keeping_data().unwrap();
    assert!(!script_exists(&primary));
    assert_eq!(libraries(&primary), 1, "the library is in the RDB");
    let (a, _) = attempt(&primary, Invocation::Evalsha);
    assert_eq!(
        server_error(&a),
        ErrorKind::Server(ServerErrorKind::NoScript)
    );
    let (a, trips) = attempt(&primary, Invocation::Fcall);
    assert!(
        a.outcome.is_ok(),
        "FCALL after an RDB restart: {:?}",
        a.outcome
    );
    assert_eq!((a.round_trips, trips, a.noscript), (1, 1, false));
}

#[test]
fn each_fallback_turns_noscript_into_a_decision_at_its_stated_round_trips() {
    let mut server = start(Persistence::None);
    // (mode, round trips after a restart): EVALSHA + EVAL; EVALSHA + SCRIPT LOAD + EVALSHA;
    // FCALL + FUNCTION LOAD + FCALL.
    for (mode, trips) in [
        (Invocation::EvalshaEval, 2),
        (Invocation::EvalshaLoad, 3),
        (Invocation::FcallLoad, 3),
    ] {
        load(&server);
        server.restart().unwrap();
        let (a, counted) = attempt(&server, mode);
        let d = a
            .outcome
            .unwrap_or_else(|e| panic!("{mode} after a restart: {e}"));
        assert!(d.noscript && a.noscript, "{mode}");
        assert_eq!(
            (a.round_trips, d.redis_calls, counted),
            (trips, trips, u64::from(trips)),
            "{mode}"
        );
        // The fallback reloaded it: the next check is one round trip again.
        let (a, counted) = attempt(&server, mode);
        assert!(a.outcome.is_ok() && !a.noscript, "{mode}");
        assert_eq!((a.round_trips, counted), (1, 1), "{mode}");
    }
    // Without a fallback the same restart is the caller's error, after one round trip.
    for mode in [Invocation::Evalsha, Invocation::Fcall] {
        load(&server);
        server.restart().unwrap();
        let (a, counted) = attempt(&server, mode);
        assert!(a.outcome.is_err() && a.noscript, "{mode}: {:?}", a.outcome);
        assert_eq!((a.round_trips, counted), (1, 1), "{mode}");
    }
    // EVAL never depends on the cache.
    server.restart().unwrap();
    let (a, counted) = attempt(&server, Invocation::Eval);
    assert!(a.outcome.is_ok() && !a.noscript && a.round_trips == 1 && counted == 1);
}
