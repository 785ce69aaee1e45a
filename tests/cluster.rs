//! The managed Redis Cluster and the cluster experiment, against real redis-server nodes: set-up,
//! slot placement, a reshard, teardown on every exit path, and what undeclared keys do.

use crate::common;

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

/// The experiment's rows, read back as the CSV's own columns.
fn rows_of(dir: &std::path::Path, file: &str) -> Vec<ratelab::analysis::table::Row> {
    ratelab::analysis::table::read_rows(&dir.join(file)).unwrap()
}

/// Small enough for a few seconds, large enough that every node pair holds users.
const SMALL: &[(&str, &str)] = &[
    ("users", "300"),
    ("reshard_slots", "2048"),
    ("bucket_users", "20"),
    ("bucket_requests", "30"),
];

#[test]
fn failures_are_exactly_the_cross_node_users_and_declared_keys_hash_tags_and_one_redis_never_fail()
{
    let out = tempfile::tempdir().unwrap();
    let mut ctx = common::ctx(out.path());
    ctx.sets = common::sets(SMALL);
    let dir = ratelab::experiments::find("cluster")
        .unwrap()
        .run(&ctx)
        .expect("cluster runs");
    let rows = rows_of(&dir, "cluster.csv");
    let count = |phase: &str| rows.iter().filter(|r| r["phase"] == phase).count();
    assert_eq!(
        (count("one-redis"), count("cluster"), count("reshard")),
        (1500, 1500, 1500)
    );
    let (mut cross_node, mut same_node) = (0, 0);
    for r in &rows {
        let (phase, variant) = (r["phase"].as_str(), r["variant"].as_str());
        let ok = r["ok"] == "1";
        let shared_node = r["base_node"] == r["derived_node"];
        let shared_slot = r["base_slot"] == r["derived_slot"];
        let error = r["error"].as_str();
        match (phase, variant) {
            ("one-redis", _) | (_, "declared" | "hashtag") => assert!(ok, "{r:?}"),
            (_, "undeclared" | "undeclared-shebang-allow-cross-slot") => {
                // Exactly the users whose derived key lives on another node, with seed 002's text.
                assert_eq!(ok, shared_node, "{r:?}");
                if !ok {
                    assert!(
                        error.contains(
                            "Script attempted to access a non local key in a cluster node"
                        ),
                        "{r:?}"
                    );
                }
                if variant == "undeclared" {
                    (cross_node, same_node) =
                        (cross_node + usize::from(!ok), same_node + usize::from(ok));
                }
            }
            (_, "undeclared-shebang") => {
                assert_eq!(ok, shared_slot, "{r:?}");
                if !ok && shared_node {
                    assert!(error.contains("do not hash to the same slot"), "{r:?}");
                }
            }
            other => panic!("unexpected row {other:?}"),
        }
        assert_eq!(r["as_predicted"], "1", "{r:?}");
    }
    // Both kinds of user exist in both cluster phases, so the exactness above is not vacuous.
    assert!(
        cross_node > 0 && same_node > 0,
        "{cross_node} cross-node, {same_node} same-node"
    );
    // The reshard moved slots, and some users' placement with them.
    let moved = |r: &ratelab::analysis::table::Row| {
        (r["variant"].clone(), r["user"].clone(), r["ok"].clone())
    };
    let before: std::collections::BTreeSet<_> = rows
        .iter()
        .filter(|r| r["phase"] == "cluster")
        .map(moved)
        .collect();
    let after: std::collections::BTreeSet<_> = rows
        .iter()
        .filter(|r| r["phase"] == "reshard")
        .map(moved)
        .collect();
    assert_ne!(before, after, "no user changed at the reshard");
    for b in rows_of(&dir, "bucket.csv") {
        assert_eq!(b["admitted"], b["capacity"], "{b:?}");
        assert_eq!(b["errors"], "0", "{b:?}");
    }
    let nodes = rows_of(&dir, "nodes.csv");
    for phase in ["cluster", "reshard"] {
        let slots: u32 = (nodes.iter().filter(|n| n["phase"] == phase))
            .map(|n| n["slots"].parse::<u32>().unwrap())
            .sum();
        assert_eq!(slots, 16384, "{phase}");
    }
}

#[test]
fn a_users_cluster_gets_the_non_destructive_phases_on_prefixed_keys_and_no_reshard() {
    let cluster = cluster();
    let mut con = cluster.nodes()[0].connection().unwrap();
    let map_before = SlotMap::read(&mut con, "127.0.0.1").unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut ctx = common::ctx(out.path());
    ctx.sets = common::sets(SMALL);
    ctx.redis_url = Some(cluster.nodes()[1].url());
    let dir = ratelab::experiments::find("cluster")
        .unwrap()
        .run(&ctx)
        .expect("runs against --redis-url");
    let phases = rows_of(&dir, "phases.csv");
    let ran = |phase: &str| {
        phases
            .iter()
            .find(|p| p["phase"] == phase)
            .map(|p| p["ran"].clone())
    };
    assert_eq!(ran("cluster").as_deref(), Some("1"));
    assert_eq!(ran("bucket").as_deref(), Some("1"));
    assert_eq!(ran("reshard").as_deref(), Some("0"));
    assert_eq!(ran("one-redis").as_deref(), Some("0"));
    assert!(phases
        .iter()
        .all(|p| p["ran"] == "1" || !p["reason"].is_empty()));
    let rows = rows_of(&dir, "cluster.csv");
    assert!(rows.iter().all(|r| r["phase"] == "cluster") && rows.len() == 1500);
    assert!(
        rows.iter().any(|r| r["ok"] == "0"),
        "no cross-node user failed on the user's cluster"
    );
    // Left as found: the same slot map, and not one key of the run on any node.
    assert_eq!(SlotMap::read(&mut con, "127.0.0.1").unwrap(), map_before);
    for node in cluster.nodes() {
        let mut con = node.connection().unwrap();
        let keys: u64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
        assert_eq!(keys, 0, "node {} keeps {keys} keys", node.port());
    }
}

#[test]
fn a_users_single_server_gets_the_one_redis_phase_only() {
    let server = common::start_server();
    let out = tempfile::tempdir().unwrap();
    let mut ctx = common::ctx(out.path());
    ctx.sets = common::sets(SMALL);
    ctx.redis_url = Some(server.url());
    let dir = ratelab::experiments::find("cluster")
        .unwrap()
        .run(&ctx)
        .expect("runs against one Redis");
    let rows = rows_of(&dir, "cluster.csv");
    assert!(
        rows.len() == 1500
            && rows
                .iter()
                .all(|r| r["phase"] == "one-redis" && r["ok"] == "1")
    );
    let phases = rows_of(&dir, "phases.csv");
    assert_eq!(
        phases.iter().filter(|p| p["ran"] == "0").count(),
        3,
        "{phases:?}"
    );
    let mut con = server.connection().unwrap();
    assert_eq!(redis::cmd("DBSIZE").query::<u64>(&mut con).unwrap(), 0);
}

/// Starts `ratelab run cluster` and collects the redis-servers it starts until `enough` are
/// alive at once (or it exits); returns the child and every pid seen.
fn run_watching(
    out: &std::path::Path,
    enough: usize,
    extra: &[&str],
) -> (std::process::Child, Vec<u32>) {
    let mut child = std::process::Command::new(common::ratelab_exe())
        .args(["run", "cluster", "--profile", "quick", "--quiet", "--out"])
        .arg(out)
        .args(extra)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen: Vec<u32> = Vec::new();
    common::wait_for(std::time::Duration::from_secs(60), || {
        let now = common::redis_children(child.id());
        for pid in &now {
            if !seen.contains(pid) {
                seen.push(*pid);
            }
        }
        now.len() >= enough || child.try_wait().ok().flatten().is_some()
    });
    (child, seen)
}

fn assert_all_gone(seen: &[u32]) {
    for &pid in seen {
        assert!(
            common::wait_for(std::time::Duration::from_secs(5), || !common::pid_alive(
                pid
            )),
            "redis-server {pid} left running"
        );
    }
}

#[test]
fn no_node_is_left_after_success_error_or_sigint() {
    // Success: the run's own server and three nodes, all gone when it exits.
    let out = tempfile::tempdir().unwrap();
    let (child, mut seen) = run_watching(out.path(), usize::MAX, &["--set", "users=200"]);
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    seen.dedup();
    assert!(seen.len() >= 4, "saw only {seen:?}");
    assert_all_gone(&seen);

    // Error: one node killed under the run; the run fails and takes the others down. The victim
    // is a cluster node: the run's standalone server may already have served its phase.
    let (mut child, seen) = run_watching(out.path(), 4, &["--set", "users=20000"]);
    let is_node = |pid: &&u32| {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        // Redis rewrites its title to "redis-server 127.0.0.1:PORT [cluster]" on a cluster node.
        let cmdline = String::from_utf8_lossy(&cmdline);
        cmdline.contains("[cluster]") || cmdline.contains("cluster-enabled")
    };
    let victim = *seen
        .iter()
        .rev()
        .find(is_node)
        .expect("a cluster node among the servers");
    // SAFETY: a signal to a process this test's child started.
    unsafe { libc::kill(victim as i32, libc::SIGKILL) };
    let status = child.wait().unwrap();
    assert!(!status.success(), "the run survived a dead node");
    assert_all_gone(&seen);

    // SIGINT mid-run: the interrupt handler stops every node.
    let (mut child, seen) = run_watching(out.path(), 4, &["--set", "users=20000"]);
    assert!(seen.len() >= 4, "saw only {seen:?}");
    // SAFETY: a signal to a child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status}");
    assert_all_gone(&seen);
}

#[test]
fn a_create_that_keeps_failing_is_retried_reports_every_nodes_log_and_stops_every_node() {
    use ratelab::server::{ServerError, ServerOptions};
    use std::os::unix::fs::PermissionsExt;
    // The real redis-server beside a redis-cli that always fails: cli_for takes the sibling.
    let bin = tempfile::tempdir().unwrap();
    let real = which("redis-server");
    std::os::unix::fs::symlink(&real, bin.path().join("redis-server")).unwrap();
    let cli = bin.path().join("redis-cli");
    std::fs::write(
        &cli,
        "#!/bin/sh\necho '[ERR] refused by the test'\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&cli, std::fs::Permissions::from_mode(0o755)).unwrap();
    let opts = ClusterOptions {
        server: ServerOptions {
            binary: bin.path().join("redis-server"),
            ..ServerOptions::default()
        },
        create_attempts: 2,
        ..ClusterOptions::default()
    };
    let Err(err) = RedisCluster::start(&opts) else {
        panic!("a cluster started without redis-cli");
    };
    let ServerError::ClusterCreate {
        attempts,
        output,
        log_tails,
    } = &err
    else {
        panic!("{err}");
    };
    assert_eq!(*attempts, 2);
    assert!(output.contains("refused by the test"), "{output}");
    let ports: Vec<u16> = (log_tails.lines())
        .filter_map(|l| {
            l.strip_prefix("--- node on port ")?
                .strip_suffix(" ---")?
                .parse()
                .ok()
        })
        .collect();
    assert_eq!(ports.len(), 3, "{log_tails}");
    assert!(
        log_tails.contains("Ready to accept connections"),
        "{log_tails}"
    );
    for port in ports {
        let gone = common::wait_for(std::time::Duration::from_secs(5), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err()
        });
        assert!(gone, "a node still listens on {port}");
    }
}

fn which(name: &str) -> std::path::PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    (std::env::split_paths(&path).map(|d| d.join(name)))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} not on PATH"))
}

/// A run's cleanup on a node of a user's cluster reaches every node: a cluster client puts the
/// run's keys wherever their slots live, and one node's SCAN sees only its own (a probe's key, or
/// a run that failed before its body's end, would otherwise stay). Keys outside the prefix stay.
#[test]
fn the_cleanup_on_a_users_cluster_node_deletes_the_runs_keys_on_every_node() {
    let cluster = cluster();
    let mut con = cluster.nodes()[0].connection().unwrap();
    let map = SlotMap::read(&mut con, "127.0.0.1").unwrap();
    let prefix = "ratelab:cleanup-test:1:";
    let mut keys_by_node = std::collections::BTreeMap::<String, u64>::new();
    for i in 0..60 {
        for key in [format!("{prefix}{i}"), format!("someone-else:{i}")] {
            let owner = map.owner(key_slot(key.as_bytes())).unwrap().node();
            let node = cluster
                .nodes()
                .iter()
                .find(|n| owner.ends_with(&format!(":{}", n.port())));
            let mut con = node.unwrap().connection().unwrap();
            let () = redis::cmd("SET").arg(&key).arg(1).query(&mut con).unwrap();
            *keys_by_node.entry(owner).or_default() += u64::from(key.starts_with(prefix));
        }
    }
    assert_eq!(
        keys_by_node.len(),
        3,
        "the run's keys live on every node: {keys_by_node:?}"
    );
    let endpoint = ratelab::server::Endpoint::from_url(&cluster.nodes()[1].url()).unwrap();
    let target = ratelab::server::Target::External { endpoint };
    assert_eq!(target.delete_keys_with_prefix(prefix).unwrap(), 60);
    for node in cluster.nodes() {
        let keys: u64 = redis::cmd("DBSIZE")
            .query(&mut node.connection().unwrap())
            .unwrap();
        let mine: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{prefix}*"))
            .query(&mut node.connection().unwrap())
            .unwrap();
        assert!(
            mine.is_empty() && keys > 0,
            "node {}: {mine:?} left, {keys} keys",
            node.port()
        );
    }
}
