//! The server manager's replica, promotion and graceful restart, against real redis-servers.

use crate::common;

use common::pid_alive;
use ratelab::server::{wait_caught_up, Persistence, RedisServer, ServerOptions};
use std::time::Duration;

const CATCH_UP: Duration = Duration::from_secs(10);
const LIBRARY: &str = "#!lua name=ratelab_replica_test\n\
    redis.register_function('one', function(keys, args) return 1 end)";

fn opts(persistence: Persistence) -> ServerOptions {
    ServerOptions {
        persistence,
        ..ServerOptions::default()
    }
}

fn primary_and_replica() -> (RedisServer, RedisServer) {
    let primary = RedisServer::start(&opts(Persistence::None)).expect("primary starts");
    let replica =
        RedisServer::start_replica_of(&primary, &opts(Persistence::None)).expect("replica starts");
    (primary, replica)
}

#[test]
fn replica_sees_a_write_once_caught_up() {
    let (primary, replica) = primary_and_replica();
    let mut on_primary = primary.connection().unwrap();
    redis::cmd("SET")
        .arg("k")
        .arg("v")
        .query::<()>(&mut on_primary)
        .unwrap();
    wait_caught_up(&primary, &replica, CATCH_UP).unwrap();
    let mut on_replica = replica.connection().unwrap();
    let seen: Option<String> = redis::cmd("GET").arg("k").query(&mut on_replica).unwrap();
    assert_eq!(seen.as_deref(), Some("v"));
}

#[test]
fn promotion_makes_the_replica_writable() {
    let (_primary, replica) = primary_and_replica();
    let mut on_replica = replica.connection().unwrap();
    let before = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .query::<()>(&mut on_replica)
        .unwrap_err();
    assert_eq!(before.code(), Some("READONLY"), "{before}");
    replica.promote().unwrap();
    redis::cmd("SET")
        .arg("k")
        .arg("v")
        .query::<()>(&mut on_replica)
        .unwrap();
}

/// Writes a key and loads a function library, restarts gracefully, and says what is left.
fn survives_restart(persistence: Persistence) -> (Option<String>, usize) {
    let mut server = RedisServer::start(&opts(persistence)).unwrap();
    let port = server.port();
    let mut con = server.connection().unwrap();
    redis::cmd("SET")
        .arg("k")
        .arg("v")
        .query::<()>(&mut con)
        .unwrap();
    redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(LIBRARY)
        .query::<String>(&mut con)
        .unwrap();
    let old_pid = server.pid();
    server.restart_keeping_data().unwrap();
    assert_eq!(server.port(), port);
    assert!(!pid_alive(old_pid), "the old process was reaped");
    let mut con = server.connection().unwrap();
    let key: Option<String> = redis::cmd("GET").arg("k").query(&mut con).unwrap();
    let libraries: Vec<redis::Value> = redis::cmd("FUNCTION").arg("LIST").query(&mut con).unwrap();
    (key, libraries.len())
}

#[test]
fn rdb_restart_keeps_keys_and_functions() {
    assert_eq!(survives_restart(Persistence::Rdb), (Some("v".into()), 1));
}

#[test]
fn aof_restart_keeps_keys_and_functions() {
    assert_eq!(survives_restart(Persistence::Aof), (Some("v".into()), 1));
}

#[test]
fn restart_without_persistence_starts_empty() {
    assert_eq!(survives_restart(Persistence::None), (None, 0));
}

#[test]
fn every_server_is_gone_after_drop() {
    let (primary, replica) = primary_and_replica();
    let pids = [primary.pid(), replica.pid()];
    assert!(pids.iter().all(|&pid| pid_alive(pid)));
    drop(replica);
    drop(primary);
    for pid in pids {
        assert!(!pid_alive(pid), "redis-server {pid} still alive after drop");
    }
    let mut restarted = RedisServer::start(&opts(Persistence::Aof)).unwrap();
    restarted.restart_keeping_data().unwrap();
    let pid = restarted.pid();
    drop(restarted);
    assert!(
        !pid_alive(pid),
        "restarted redis-server {pid} still alive after drop"
    );
}

/// The replication experiment itself, small: every bucket of both scripts (seed 002's and
/// ratelab's) matches, expiry included, the replica executed the scripts' effects, never a
/// script, and each script's TTL is the one it sets: seed 002's the refill time, lua-bucket's its
/// argument, a second longer.
#[test]
fn replication_experiment_matches_every_bucket_and_replicates_effects() {
    use ratelab::analysis::table::{number, read_rows};
    let out = tempfile::tempdir().unwrap();
    let dir = common::run_experiment(
        "replication",
        out.path(),
        &[("calls", "2000"), ("buckets", "20")],
    );
    let buckets = read_rows(&dir.join("replication.csv")).unwrap();
    assert_eq!(buckets.len(), 40, "20 buckets of each script");
    for strategy in ["seed002-bucket", "lua-bucket"] {
        assert_eq!(
            buckets.iter().filter(|b| b["strategy"] == strategy).count(),
            20
        );
    }
    for b in &buckets {
        assert_eq!(number(b, "match"), Some(1.0), "{b:?}");
        assert!(
            number(b, "replica_pttl_ms").is_some_and(|ms| ms > 0.0),
            "{b:?}"
        );
    }
    let stream = read_rows(&dir.join("stream.csv")).unwrap();
    let calls = |command: &str, side: &str| {
        (stream.iter())
            .find(|r| r["command"] == command)
            .and_then(|r| number(r, side))
            .unwrap_or(0.0)
    };
    // One script call per decision on the primary (plus a failed EVALSHA before each EVAL).
    assert!(calls("evalsha", "calls_on_primary") + calls("eval", "calls_on_primary") >= 4000.0);
    for script in ["evalsha", "eval", "fcall"] {
        assert_eq!(
            calls(script, "calls_on_replica"),
            0.0,
            "{script} ran on the replica"
        );
    }
    assert_eq!(
        calls("hset", "calls_on_replica"),
        calls("hset", "calls_on_primary")
    );
    assert!(calls("hset", "calls_on_replica") > 0.0);
    // Every call refreshes the expiry; the replica is told the absolute instant.
    assert_eq!(calls("pexpireat", "calls_on_replica"), 4000.0);
    assert_eq!(calls("pexpire", "calls_on_replica"), 0.0);
    // PTTL read right behind a call, less the bucket's refill time: 0 or -1 ms (whole ms) for seed
    // 002's script, a second more for lua-bucket, which is asked for the refill time and a second.
    for t in read_rows(&dir.join("ttl.csv")).unwrap() {
        let past_refill = number(&t, "pttl_ms").unwrap() - number(&t, "full_refill_ms").unwrap();
        let margin = if t["strategy"] == "seed002-bucket" {
            0.0
        } else {
            1000.0
        };
        assert!((-1.0..=0.0).contains(&(past_refill - margin)), "{t:?}");
    }
}
