//! Managed Sentinels against real redis-server processes: ready only once they agree, a planned
//! failover (`SENTINEL FAILOVER`, seed 003's drill) and one after a crash, a dead Sentinel named
//! with its log, and nothing left running.

use crate::common;

use common::{pid_alive, wait_for};
use ratelab::server::{
    Deployment, RedisSentinels, RedisServer, SentinelOptions, ServerError, ServerOptions, Topology,
};
use std::time::{Duration, Instant};

fn primary_and_replica() -> (RedisServer, RedisServer) {
    let opts = ServerOptions::default();
    let primary = RedisServer::start(&opts).expect("primary starts");
    let replica = RedisServer::start_replica_of(&primary, &opts).expect("replica starts");
    (primary, replica)
}

fn sentinel_opts(down_after_ms: u64) -> SentinelOptions {
    SentinelOptions {
        down_after: Duration::from_millis(down_after_ms),
        failover_timeout: Duration::from_secs(5),
        ..SentinelOptions::default()
    }
}

fn role(server: &RedisServer) -> String {
    let mut con = server.connection().expect("connects");
    let info: String = redis::cmd("INFO")
        .arg("replication")
        .query(&mut con)
        .expect("INFO");
    info.lines()
        .find_map(|l| l.strip_prefix("role:"))
        .unwrap_or("?")
        .trim()
        .to_string()
}

/// Waits until the Sentinels name `port` as the primary (a failover takes seconds: generous).
fn wait_primary(sentinels: &RedisSentinels, port: u16) -> bool {
    wait_for(Duration::from_secs(30), || {
        sentinels.primary_port().ok() == Some(port)
    })
}

#[test]
fn a_planned_failover_promotes_the_replica_and_every_sentinel_stops_on_drop() {
    let (primary, replica) = primary_and_replica();
    let sentinels =
        RedisSentinels::start(&primary, 1, &sentinel_opts(1000)).expect("sentinels agree");
    assert_eq!(sentinels.ports().len(), 3);
    assert_eq!(sentinels.primary_port().unwrap(), primary.port());
    sentinels.failover().expect("SENTINEL FAILOVER is accepted");
    assert!(
        wait_primary(&sentinels, replica.port()),
        "the Sentinels never named the replica"
    );
    assert!(wait_for(Duration::from_secs(10), || role(&replica) == "master"));
    let pids = sentinels.pids();
    assert!(pids.iter().all(|&p| pid_alive(p)));
    drop(sentinels);
    assert!(
        pids.iter().all(|&p| !pid_alive(p)),
        "a Sentinel outlived its owner"
    );
}

/// After a crash no Sentinel can act before `down-after-milliseconds` has passed: the promotion
/// is measured from the kill and must come after it.
#[test]
fn a_crashed_primary_is_replaced_no_sooner_than_down_after() {
    let (mut primary, replica) = primary_and_replica();
    let down_after = Duration::from_millis(600);
    let sentinels =
        RedisSentinels::start(&primary, 1, &sentinel_opts(down_after.as_millis() as u64))
            .expect("sentinels agree");
    let killed = Instant::now();
    primary.kill().expect("the primary is killed");
    assert!(
        wait_primary(&sentinels, replica.port()),
        "no failover after the crash"
    );
    let took = killed.elapsed();
    assert!(
        took >= down_after,
        "promoted {took:?} after the crash, before down-after {down_after:?}"
    );
    assert!(wait_for(Duration::from_secs(10), || role(&replica) == "master"));
}

#[test]
fn a_dead_sentinel_is_named_with_its_log() {
    let (primary, _replica) = primary_and_replica();
    let mut sentinels =
        RedisSentinels::start(&primary, 1, &sentinel_opts(1000)).expect("sentinels agree");
    let victim = sentinels.pids()[1];
    // SAFETY: kill(2) on a Sentinel this test's RedisSentinels started and has not reaped.
    assert_eq!(unsafe { libc::kill(victim as i32, libc::SIGKILL) }, 0);
    assert!(wait_for(Duration::from_secs(5), || sentinels
        .check_alive()
        .is_err()));
    let err = sentinels.check_alive().unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ServerError::SentinelExited { .. }), "{text}");
    assert!(text.contains(&sentinels.ports()[1].to_string()), "{text}");
    assert!(text.contains("Sentinel ID is"), "no log tail: {text}");
}

#[test]
fn a_quorum_larger_than_the_sentinels_is_refused_before_starting_any() {
    let (primary, _replica) = primary_and_replica();
    let opts = SentinelOptions {
        quorum: 4,
        ..SentinelOptions::default()
    };
    let err = RedisSentinels::start(&primary, 1, &opts)
        .err()
        .expect("refused");
    assert!(err.to_string().contains("quorum of 4 among 3"), "{err}");
}

/// The declared topology: built whole, its writable server follows the Sentinels' failover, and
/// every process (primary, replica, Sentinels) is gone once the deployment is dropped.
#[test]
fn a_sentinel_topology_follows_its_failover_and_leaves_nothing_running() {
    let topology = Topology::Sentinel {
        replicas: 1,
        sentinels: 3,
        quorum: 2,
        down_after: Duration::from_millis(1000),
        failover_timeout: Duration::from_secs(5),
    };
    let built = topology
        .build(&ServerOptions::default())
        .expect("the topology starts");
    let Deployment::Sentinel(watched) = &built else {
        panic!("a Sentinel topology built {}", topology.describe());
    };
    let first = watched.set.primary.port();
    let replica = watched.set.replicas[0].port();
    assert_eq!(built.writable().map(RedisServer::port), Some(first));
    watched
        .sentinels
        .failover()
        .expect("SENTINEL FAILOVER is accepted");
    assert!(
        wait_for(Duration::from_secs(30), || built
            .writable()
            .map(RedisServer::port)
            == Some(replica)),
        "the writable server never became the replica"
    );
    let mut pids: Vec<u32> = built.servers().iter().map(|s| s.pid()).collect();
    pids.extend(watched.sentinels.pids());
    assert_eq!(pids.len(), 5);
    drop(built);
    assert!(
        pids.iter().all(|&p| !pid_alive(p)),
        "a process outlived its deployment"
    );
}

/// failover's Sentinel client: it connects where the Sentinels say the primary is, and after the
/// primary is killed its failed commands make it ask again until it reaches the promoted replica,
/// which it can only do once Sentinel has waited down-after and promoted it. Its move is recorded
/// with the instant it connected there.
#[tokio::test(flavor = "current_thread")]
async fn a_sentinel_client_finds_the_promoted_replica_after_a_crash_on_its_own() {
    use ratelab::experiments::failover::finder::Finder;
    let down_after = Duration::from_millis(500);
    let topology = Topology::Sentinel {
        replicas: 1,
        sentinels: 3,
        quorum: 2,
        down_after,
        failover_timeout: Duration::from_secs(5),
    };
    let mut built = topology
        .build(&ServerOptions::default())
        .expect("the topology starts");
    let Deployment::Sentinel(watched) = &mut built else {
        panic!("a Sentinel topology built {}", topology.describe());
    };
    let (first, replica) = (watched.set.primary.port(), watched.set.replicas[0].port());
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(2)))
        .set_response_timeout(Some(Duration::from_secs(2)));
    let finder = Finder::connect(&watched.sentinels.ports(), config)
        .await
        .expect("the Sentinels name a primary");
    assert_eq!(finder.port(), first);
    let killed = Instant::now();
    watched.set.primary.kill().expect("the primary is killed");
    let mut failed = 0;
    while finder.port() != replica && killed.elapsed() < Duration::from_secs(30) {
        let lease = finder.lease();
        let ok = match lease.con.clone() {
            Some(mut con) => redis::cmd("SET")
                .arg("k")
                .arg("v")
                .query_async::<()>(&mut con)
                .await
                .is_ok(),
            None => false,
        };
        if !ok {
            failed += 1;
            finder.failed(&lease).await;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (asks, moves) = finder.history();
    assert_eq!(
        finder.port(),
        replica,
        "never moved: {asks} asks, {failed} failures"
    );
    assert!(
        failed >= 1 && asks >= 1,
        "moved without a failure: {failed}, {asks}"
    );
    let arrived = moves.iter().find(|m| m.to_port == replica).expect("a move");
    assert_eq!(arrived.from_port, first);
    let took = arrived.at.duration_since(killed);
    assert!(
        took >= down_after,
        "moved {took:?} after the crash, before down-after"
    );
    let mut con = finder.lease().con.expect("connected");
    redis::cmd("SET")
        .arg("k")
        .arg("v")
        .query_async::<()>(&mut con)
        .await
        .expect("the promoted replica takes writes");
}
