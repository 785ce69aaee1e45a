//! cluster's measurement: the phases in order on the harness's own servers (one-redis on the run's
//! server, then a cluster built through the session: cluster, bucket, reshard), or on the user's
//! server.

use super::topology::Topology;
use super::variants::{run_phase, Outcomes, Window};
use super::{bucket, BucketRow, CallRow, CustomBucketRow, NodeRow, Params, PhaseRow, SetupRow};
use super::{BUCKETS, CALLS, CUSTOM, NODES, PHASES, SETUPS};
use crate::experiments::{ExperimentError, Phase, PhaseError, Session};
use crate::record::CsvSink;
use crate::server::{Deployment, Endpoint, RedisCluster, SlotMap};
use std::time::{Duration, Instant};

/// The sinks every phase writes to.
struct Sinks {
    calls: CsvSink<CallRow>,
    nodes: CsvSink<NodeRow>,
    bucket: CsvSink<BucketRow>,
    /// Custom limiters' users, when the run has any.
    custom: Option<CsvSink<CustomBucketRow>>,
    setup: CsvSink<SetupRow>,
    phases: CsvSink<PhaseRow>,
    /// What the cluster phase's calls did, for the reshard phase to count the outcomes it flipped.
    before_reshard: Outcomes,
}

pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let mut sinks = Sinks {
        calls: CALLS.create(&s.run.staging)?,
        nodes: NODES.create(&s.run.staging)?,
        bucket: BUCKETS.create(&s.run.staging)?,
        custom: match s.ctx.limiters.is_empty() {
            true => None,
            false => Some(CUSTOM.create(&s.run.staging)?),
        },
        setup: SETUPS.create(&s.run.staging)?,
        phases: PHASES.create(&s.run.staging)?,
        before_reshard: Outcomes::new(),
    };
    let window = Window::new(p.limit, p.window_ms);
    match s.target.is_managed() {
        true => managed(s, p, &window, &mut sinks),
        false => {
            let endpoint = (s.target.endpoint()).phase(|| "reading the server's address".into())?;
            users_server(s, p, &window, &mut sinks, &endpoint)
        }
    }
}

/// The harness's own servers: every phase.
fn managed(
    s: &mut Session,
    p: &Params,
    window: &Window,
    sinks: &mut Sinks,
) -> Result<(), ExperimentError> {
    let endpoint = (s.target.endpoint()).phase(|| "reading the server's address".into())?;
    let mut single = Topology::single(&endpoint, s.ctx.timeouts);
    variants_phase(s, p, window, sinks, &mut single, "one-redis", "managed")?;

    let cluster = start_cluster(s, p).phase(|| format!("starting a {}-node cluster", p.nodes))?;
    let setup = cluster.setup();
    sinks.setup.write(&SetupRow {
        operation: "create".into(),
        nodes: p.nodes as u32,
        start_nodes_ms: ms(setup.start_nodes),
        work_ms: ms(setup.create),
        attempts: setup.attempts,
        converge_ms: ms(setup.converge),
        total_ms: ms(setup.total()),
        first_slot: None,
        last_slot: None,
        from_node: String::new(),
        to_node: String::new(),
        keys_moved: None,
    })?;
    s.note(format!(
        "Cluster set-up: {:.0} ms ({:.0} ms starting {} nodes, {:.0} ms redis-cli --cluster create in {} \
         attempt(s), {:.0} ms until every node agreed).",
        ms(setup.total()),
        ms(setup.start_nodes),
        p.nodes,
        ms(setup.create),
        setup.attempts,
        ms(setup.converge)
    ));
    let first_node = cluster.nodes()[0].endpoint();
    let mut topology =
        Topology::cluster(&first_node, s.ctx.timeouts).phase(|| "reading the slot map".into())?;
    write_map(&mut sinks.nodes, "cluster", topology.map.as_ref())?;
    variants_phase(s, p, window, sinks, &mut topology, "cluster", "managed")?;
    bucket_phase(s, p, sinks, &topology, "managed")?;

    let started = Instant::now();
    let map = topology.map.clone().unwrap_or_default();
    let from = &map.ranges[0];
    let to = (map.ranges.iter())
        .find(|r| r.port != from.port)
        .unwrap_or(from);
    let last = from.last.min(from.first + (p.reshard_slots - 1));
    let what = || {
        format!(
            "moving slots {}-{last} from {} to {}",
            from.first,
            from.node(),
            to.node()
        )
    };
    let moved = cluster
        .move_slots(from.first, last, from.port, to.port)
        .phase(what)?;
    sinks.setup.write(&SetupRow {
        operation: "reshard".into(),
        nodes: p.nodes as u32,
        start_nodes_ms: 0.0,
        work_ms: ms(moved.moved),
        attempts: 1,
        converge_ms: ms(moved.converge),
        total_ms: ms(started.elapsed()),
        first_slot: Some(from.first),
        last_slot: Some(last),
        from_node: from.node(),
        to_node: to.node(),
        keys_moved: Some(moved.keys),
    })?;
    let mut after =
        Topology::cluster(&first_node, s.ctx.timeouts).phase(|| "reading the slot map".into())?;
    write_map(&mut sinks.nodes, "reshard", after.map.as_ref())?;
    variants_phase(s, p, window, sinks, &mut after, "reshard", "managed")?;
    cluster
        .check_alive()
        .phase(|| "checking the cluster's nodes".into())?;
    Ok(())
}

/// The cluster of the later phases, built through the session like any topology.
fn start_cluster(s: &Session, p: &Params) -> Result<RedisCluster, PhaseError> {
    let topology = crate::server::Topology::Cluster {
        nodes: p.nodes,
        create_attempts: p.create_attempts,
        ready_timeout: Duration::from_millis(p.ready_timeout_ms),
    };
    match s.build(&topology)? {
        Deployment::Cluster(cluster) => Ok(cluster),
        _ => Err(PhaseError::Invalid(format!(
            "{} built as something else",
            topology.describe()
        ))),
    }
}

/// A server the user runs: a cluster node (cluster and bucket) or one Redis (one-redis).
fn users_server(
    s: &mut Session,
    p: &Params,
    window: &Window,
    sinks: &mut Sinks,
    endpoint: &Endpoint,
) -> Result<(), ExperimentError> {
    let cluster_node =
        (s.target.is_users_cluster_node()).phase(|| "reading INFO cluster".into())?;
    if !cluster_node {
        let mut single = Topology::single(endpoint, s.ctx.timeouts);
        variants_phase(s, p, window, sinks, &mut single, "one-redis", "user")?;
        let why = "--redis-url names a server without cluster mode";
        for phase in ["cluster", "bucket", "reshard"] {
            skipped(sinks, phase, why)?;
        }
        return Ok(());
    }
    skipped(
        sinks,
        "one-redis",
        "--redis-url names a cluster node, not one Redis without cluster mode",
    )?;
    let mut topology =
        Topology::cluster(endpoint, s.ctx.timeouts).phase(|| "reading the slot map".into())?;
    write_map(&mut sinks.nodes, "cluster", topology.map.as_ref())?;
    // The frame deletes this run's keys on every node afterwards, whatever happened.
    variants_phase(s, p, window, sinks, &mut topology, "cluster", "user")?;
    bucket_phase(s, p, sinks, &topology, "user")?;
    skipped(
        sinks,
        "reshard",
        "a reshard reconfigures the cluster, and --redis-url names the user's",
    )?;
    Ok(())
}

fn variants_phase(
    s: &mut Session,
    p: &Params,
    window: &Window,
    sinks: &mut Sinks,
    topology: &mut Topology,
    phase: &str,
    servers: &str,
) -> Result<(), ExperimentError> {
    let started = Instant::now();
    let what = || format!("the {phase} phase");
    let done = run_phase(
        topology,
        phase,
        &p.variants,
        p.users,
        &s.prefix,
        window,
        &mut sinks.calls,
    )
    .phase(what)?;
    let flips = (phase == "reshard").then(|| flips(&sinks.before_reshard, &done.outcomes));
    sinks.phases.write(&PhaseRow {
        phase: phase.into(),
        ran: 1,
        reason: String::new(),
        servers: servers.into(),
        nodes: topology.nodes(),
        calls: done.calls,
        took_ms: ms(started.elapsed()),
        outcome_flips: flips.map(|f| f.0),
        placement_flips: flips.map(|f| f.1),
    })?;
    if phase == "cluster" {
        sinks.before_reshard = done.outcomes;
    }
    Ok(())
}

/// Calls made in both phases whose outcome differs, and those whose placement's prediction does.
fn flips(before: &Outcomes, after: &Outcomes) -> (u64, u64) {
    let both = || (after.iter()).filter_map(|(call, now)| Some((before.get(call)?, now)));
    let outcome = both().filter(|(was, now)| was.0 != now.0).count() as u64;
    let placement = both().filter(|(was, now)| was.1 != now.1).count() as u64;
    (outcome, placement)
}

fn bucket_phase(
    s: &mut Session,
    p: &Params,
    sinks: &mut Sinks,
    topology: &Topology,
    servers: &str,
) -> Result<(), ExperimentError> {
    let started = Instant::now();
    let what = || {
        format!(
            "{} clients on {} buckets through the cluster",
            p.bucket_clients, p.bucket_users
        )
    };
    let rows = bucket::run(topology, p, &s.prefix, s.ctx.timeouts).phase(what)?;
    for row in &rows {
        sinks.bucket.write(row)?;
    }
    sinks.phases.write(&PhaseRow {
        phase: "bucket".into(),
        ran: 1,
        reason: String::new(),
        servers: servers.into(),
        nodes: topology.nodes(),
        calls: rows.iter().map(|r| r.requests).sum(),
        took_ms: ms(started.elapsed()),
        outcome_flips: None,
        placement_flips: None,
    })?;
    // Custom limiters the same way: every user's key where its manifest declares it.
    for &strategy in &s.ctx.limiters {
        let what = || {
            format!(
                "custom limiter {strategy} on {} users through the cluster",
                p.bucket_users
            )
        };
        let prefix = format!("{}{strategy}:", s.prefix);
        let rows =
            bucket::run_strategy(topology, p, &prefix, s.ctx.timeouts, strategy).phase(what)?;
        if let Some(sink) = sinks.custom.as_mut() {
            for row in &rows {
                sink.write(&CustomBucketRow::of(strategy, row))?;
            }
        }
    }
    Ok(())
}

fn skipped(sinks: &mut Sinks, phase: &str, reason: &str) -> Result<(), ExperimentError> {
    sinks.phases.write(&PhaseRow {
        phase: phase.into(),
        ran: 0,
        reason: reason.into(),
        servers: "user".into(),
        nodes: 0,
        calls: 0,
        took_ms: 0.0,
        outcome_flips: None,
        placement_flips: None,
    })?;
    Ok(())
}

fn write_map(
    sink: &mut CsvSink<NodeRow>,
    phase: &str,
    map: Option<&SlotMap>,
) -> Result<(), ExperimentError> {
    for range in map.map(|m| m.ranges.as_slice()).unwrap_or_default() {
        sink.write(&NodeRow {
            phase: phase.into(),
            first_slot: range.first,
            last_slot: range.last,
            slots: u32::from(range.last) - u32::from(range.first) + 1,
            node: range.node(),
            node_id: range.id.clone(),
        })?;
    }
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
