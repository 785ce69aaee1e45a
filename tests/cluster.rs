//! The managed Redis Cluster and the cluster experiment, against real redis-server nodes: set-up,
//! slot placement, a reshard, teardown on every exit path, and what undeclared keys do.

mod common;

use ratelab::server::{key_slot, ClusterOptions, RedisCluster, SlotMap};

fn cluster() -> RedisCluster {
    RedisCluster::start(&ClusterOptions::default()).expect("a 3-node cluster starts")
}

#[test]
fn a_cluster_serves_every_slot_agrees_and_is_gone_after_drop() {
    let cluster = cluster();
    let setup = cluster.setup();
    assert!(setup.attempts >= 1 && setup.total() > setup.create);
    let pids: Vec<u32> = cluster.nodes().iter().map(|n| n.pid()).collect();
    assert_eq!(pids.len(), 3);
    for node in cluster.nodes() {
        assert!(
            node.port() < 55535,
            "bus port of {} out of range",
            node.port()
        );
        let mut con = node.connection().unwrap();
        let map = SlotMap::read(&mut con, "127.0.0.1").unwrap();
        assert_eq!(map.covered(), 16384);
        assert_eq!(map.nodes().len(), 3);
        // The server's own slot function is ours.
        for key in ["user:1", "ratelab:{user:42}:w7", "x"] {
            let slot: u16 = redis::cmd("CLUSTER")
                .arg("KEYSLOT")
                .arg(key)
                .query(&mut con)
                .unwrap();
            assert_eq!(slot, key_slot(key.as_bytes()), "{key}");
        }
    }
    drop(cluster);
    for pid in pids {
        assert!(
            !common::pid_alive(pid),
            "cluster node {pid} still alive after drop"
        );
    }
}

#[test]
fn moved_slots_change_owner_on_every_node_and_take_their_keys() {
    let cluster = cluster();
    let mut con = cluster.nodes()[0].connection().unwrap();
    let before = SlotMap::read(&mut con, "127.0.0.1").unwrap();
    let from = &before.ranges[0];
    let to = before.ranges.iter().find(|r| r.port != from.port).unwrap();
    // A key in the first slots of the source, written on its owner.
    let key = (0..)
        .map(|i| format!("k{i}"))
        .find(|k| key_slot(k.as_bytes()) <= from.first + 9)
        .unwrap();
    let mut on_source = cluster.node_on(from.port).unwrap().connection().unwrap();
    redis::cmd("SET")
        .arg(&key)
        .arg("v")
        .query::<()>(&mut on_source)
        .unwrap();
    let moved = cluster
        .move_slots(from.first, from.first + 9, from.port, to.port)
        .unwrap();
    assert_eq!((moved.slots, moved.keys), (10, 1));
    for node in cluster.nodes() {
        let mut con = node.connection().unwrap();
        let map = SlotMap::read(&mut con, "127.0.0.1").unwrap();
        assert_eq!(map.owner(from.first).unwrap().port, to.port);
        assert_eq!(map.owner(from.first + 10).unwrap().port, from.port);
    }
    let mut on_target = cluster.node_on(to.port).unwrap().connection().unwrap();
    let value: Option<String> = redis::cmd("GET").arg(&key).query(&mut on_target).unwrap();
    assert_eq!(value.as_deref(), Some("v"));
}
