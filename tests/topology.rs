//! The frame builds what an experiment declares and tears it down on every exit path: a body that
//! fails, a body that panics, a body that builds more servers through the session; and a body that
//! declares no server runs with none (meta.json still describes the build). Real processes,
//! checked in /proc.

use crate::common;

use ratelab::experiments::{Body, Definition, ExperimentError, PhaseError, Render, Session};
use ratelab::experiments::{Experiment, Phase, Summarize, Validate};
use ratelab::record::Table;
use ratelab::server::{Deployment, Target, Topology};
use std::sync::Mutex;

/// One test at a time: each counts this process's redis-server children.
static SERIAL: Mutex<()> = Mutex::new(());
/// The pids the last body saw alive.
static SEEN: Mutex<Vec<u32>> = Mutex::new(Vec::new());

const TOML: &str = r#"
id = "topology-probe"
seeds = ["000"]
summary = "a body that checks the servers it was given"
[quick]
replicas = 1
[full]
replicas = 1
"#;

#[derive(serde::Deserialize)]
struct Params {
    #[allow(dead_code)]
    replicas: usize,
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

fn no_charts(_: &std::path::Path) -> Result<Vec<std::path::PathBuf>, ratelab::charts::ChartError> {
    Ok(Vec::new())
}

fn no_summary(_: &std::path::Path) -> Result<String, ratelab::analysis::AnalysisError> {
    Ok(String::new())
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Row {
    n: u32,
}

/// Records every pid of the declared topology and of one more built through the session, checks
/// they run, then fails while holding them.
fn failing_body(s: &mut Session, _: &Params) -> Result<(), ExperimentError> {
    let extra = s
        .build(&Topology::Replicated { replicas: 1 })
        .phase(|| "building".into())?;
    let primary = s.target.owned("test").phase(|| "primary".into())?;
    let mut pids = vec![primary.pid()];
    pids.extend(s.replicas.iter().map(|r| r.pid()));
    pids.extend(extra.servers().iter().map(|r| r.pid()));
    assert!(pids.iter().all(|&p| common::pid_alive(p)), "{pids:?}");
    *SEEN.lock().unwrap() = pids;
    Err(PhaseError::Invalid("the body failed on purpose".into())).phase(|| "the body".into())
}

fn panicking_body(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let _ = failing_body(s, p);
    panic!("the body panicked on purpose");
}

/// Declares no server: none may run while it does.
fn serverless_body(s: &mut Session, _: &Params) -> Result<(), ExperimentError> {
    assert!(matches!(s.target, Target::NoServer));
    assert!(s.target.connection().is_err());
    let children = common::redis_children(std::process::id());
    assert!(
        children.is_empty(),
        "servers while the body runs: {children:?}"
    );
    let built = s
        .build(&Topology::Standalone)
        .phase(|| "a trial's server".into())?;
    assert!(matches!(built, Deployment::Standalone(_)));
    let endpoint = built
        .endpoint()
        .expect("a standalone server has an endpoint");
    let mut con = endpoint.connection().phase(|| "connecting".into())?;
    let pong: String = redis::cmd("PING").query(&mut con).phase(|| "PING".into())?;
    assert_eq!(pong, "PONG");
    *SEEN.lock().unwrap() = built.servers().iter().map(|s| s.pid()).collect();
    let mut rows = s.run.staging.csv::<Row>("probe.csv")?;
    rows.write(&Row { n: 1 })?;
    Ok(())
}

/// Declares a 3-node cluster: the frame hands it over whole, clients reach it by its nodes.
fn cluster_body(s: &mut Session, _: &Params) -> Result<(), ExperimentError> {
    assert!(matches!(s.target, Target::NoServer));
    let cluster = s.cluster.as_ref().expect("the declared cluster");
    assert_eq!(cluster.nodes().len(), 3);
    let mut con = (cluster.nodes()[0].endpoint().connection()).phase(|| "connecting".into())?;
    let info: String = redis::cmd("CLUSTER")
        .arg("INFO")
        .query(&mut con)
        .phase(|| "INFO".into())?;
    assert!(info.contains("cluster_state:ok"), "{info}");
    *SEEN.lock().unwrap() = cluster.nodes().iter().map(|n| n.pid()).collect();
    Err(PhaseError::Invalid("the body failed on purpose".into())).phase(|| "the body".into())
}

macro_rules! probe {
    ($name:ident, $topology:expr, $body:expr) => {
        struct $name;
        impl Definition for $name {
            const ID: &'static str = "topology-probe";
            const TOML: &'static str = TOML;
            const TOPOLOGY: Topology = $topology;
            type Params = Params;
            const BODY: Body<Params> = $body;
            const CHARTS: Render = no_charts;
            const SUMMARY: Summarize = no_summary;
            fn tables() -> Vec<Table> {
                vec![Table::of::<Row>("probe.csv")]
            }
        }
    };
}

probe!(Failing, Topology::Replicated { replicas: 1 }, failing_body);
probe!(
    Panicking,
    Topology::Replicated { replicas: 1 },
    panicking_body
);
probe!(Serverless, Topology::None, serverless_body);
probe!(
    Clustered,
    Topology::Cluster {
        nodes: 3,
        create_attempts: 3,
        ready_timeout: std::time::Duration::from_secs(30),
    },
    cluster_body
);

fn assert_all_gone(servers: usize) {
    let seen = SEEN.lock().unwrap().clone();
    assert_eq!(seen.len(), servers, "every server the body saw: {seen:?}");
    let alive: Vec<u32> = seen.into_iter().filter(|&p| common::pid_alive(p)).collect();
    assert!(alive.is_empty(), "left running: {alive:?}");
    let children = common::redis_children(std::process::id());
    assert!(children.is_empty(), "left running: {children:?}");
}

#[test]
fn a_failing_body_leaves_no_server_of_its_topology_or_its_own() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let out = tempfile::tempdir().unwrap();
    let err = Failing.run(&common::ctx(out.path())).unwrap_err();
    assert!(format!("{err:#}").contains("the body"), "{err:#}");
    // The primary, its replica, and the primary and replica the body built through the session.
    assert_all_gone(4);
}

#[test]
fn a_declared_cluster_is_handed_over_whole_and_torn_down_after_a_failing_body() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let out = tempfile::tempdir().unwrap();
    let err = Clustered.run(&common::ctx(out.path())).unwrap_err();
    assert!(format!("{err:#}").contains("the body"), "{err:#}");
    assert_all_gone(3);
}

#[test]
fn a_panicking_body_leaves_no_server_behind() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let out = tempfile::tempdir().unwrap();
    let ctx = common::ctx(out.path());
    let panicked = std::panic::catch_unwind(|| Panicking.run(&ctx));
    assert!(panicked.is_err());
    assert_all_gone(4);
}

#[test]
fn a_body_that_declares_no_server_runs_with_none_and_meta_describes_the_build() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let out = tempfile::tempdir().unwrap();
    let dir = Serverless.run(&common::ctx(out.path())).unwrap();
    let seen = SEEN.lock().unwrap().clone();
    assert!(seen.iter().all(|&p| !common::pid_alive(p)), "{seen:?}");
    assert!(common::redis_children(std::process::id()).is_empty());
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["redis"]["managed"], true);
    assert!(!meta["redis"]["version"].as_str().unwrap().is_empty());
    assert!(!meta["redis"]["config"]["hz"]
        .as_str()
        .unwrap_or("")
        .is_empty());
}

#[test]
fn a_declared_topology_other_than_one_server_refuses_the_users_server() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let out = tempfile::tempdir().unwrap();
    let mut ctx = common::ctx(out.path());
    ctx.redis_url = Some("redis://127.0.0.1:1/".into());
    let err = Failing.prepare(&ctx).unwrap_err();
    assert!(
        matches!(err, ExperimentError::NeedsOwnTopology { .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("a primary and 1 replica(s)"),
        "{err}"
    );
}
