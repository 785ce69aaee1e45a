//! # cluster
//! Hypothesis (seed 002): a fixed-window script that builds its counter's key inside
//! (`KEYS[1] .. ':' .. window`) passes on one Redis and fails on a Redis Cluster exactly for the
//! users whose derived key lives on another node than their base key, with "Script attempted to
//! access a non local key in a cluster node": about (N-1)/N of them on N nodes evenly split, two
//! thirds on three. Which users fail follows slot placement, so a reshard changes it. With `#!lua`
//! an undeclared key in another slot fails even on the same node, unless the script has
//! `flags=allow-cross-slot-keys`. Declaring the counter in KEYS works for everyone, and so does a
//! hash tag on the base key (`{user:42}`), which puts the derived key in the base key's slot.
//!
//! Method: per phase, one EVAL per user and variant, sent by the harness to the node owning
//! `KEYS[1]` (`variants.rs`); every key's slot and node recorded beside the outcome and the server's
//! error text. Phases: one-redis (the run's own non-cluster server), cluster (a managed N-node
//! cluster, `server::RedisCluster`, set-up timed), reshard (a slot range moved, then the same
//! calls); then the token bucket with its key declared, through redis-rs's cluster client from
//! many clients (`bucket.rs`); a custom limiter's script the same way, and a limiter process as
//! `bucket_clients` adapters, each with its library's own cluster client. Against `--redis-url`
//! naming a cluster node: the cluster phase and the bucket only, on prefixed keys, deleted on
//! every node; the reshard skipped with its reason.
//!
//! Writes `cluster/cluster.csv` (one row per phase, variant and user), `cluster/nodes.csv` (the
//! slot map per phase), `cluster/bucket.csv` (one row per bucket user), `cluster/setup.csv` (the
//! cluster's creation and the reshard, timed), `cluster/phases.csv` (what ran, or why not),
//! `cluster/meta.json`.

mod body;
mod bucket;
mod charts;
mod report;
mod rows;
mod topology;
mod variants;

pub use rows::{BucketRow, CallRow, CustomBucketRow, NodeRow, PhaseRow, SetupRow};
pub use rows::{BUCKETS, CALLS, CUSTOM, NODES, PHASES, SETUPS};
pub use variants::Variant;

use super::limiters::Verdicts;
use super::{Body, Definition, Render, Summarize, Validate};
use crate::record::Table;
use crate::server::SLOTS;
use serde::{Deserialize, Serialize};

/// The cluster experiment.
pub struct Cluster;

impl Definition for Cluster {
    const ID: &'static str = "cluster";
    const TOML: &'static str = include_str!("../../../experiments/cluster.toml");
    const ON_CLUSTER_NODE: bool = true;
    const PERMISSIONS: &'static [crate::server::acl::Extra] =
        &[crate::server::acl::Extra::ClusterSlotMap];
    const NO_MANAGED_TLS: Option<&'static str> = Some(
        "its cluster nodes are started without TLS (redis-cli --cluster create is not given certificates)",
    );
    type Params = Params;
    const TAKES_LIMITERS: bool = true;
    // A limiter process gets one node's URL and a setup naming a cluster: its library's own
    // cluster client routes every check.
    const TAKES_PROCESSES: bool = true;
    const VERDICTS: Verdicts = report::verdicts;
    const LIMITER_CLAIMS: super::limiters::Claims = report::limiter_claims;

    const BODY: Body<Params> = body::run;
    const CHARTS: Render = charts::render;
    const SUMMARY: Summarize = report::summary;

    fn tables() -> Vec<Table> {
        vec![
            CALLS.table(),
            NODES.table(),
            BUCKETS.table(),
            SETUPS.table(),
            PHASES.table(),
            Table::of_custom_limiters::<CustomBucketRow>(CUSTOM.name()),
        ]
    }
}

/// Parameters; defaults in `experiments/cluster.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub users: u64,
    /// Primaries of the managed cluster, the slot space split evenly among them.
    pub nodes: usize,
    /// How the fixed-window script names its counter key: undeclared (built inside the script,
    /// with or without `#!lua` and `allow-cross-slot-keys`), declared in KEYS, or hash-tagged.
    pub variants: Vec<Variant>,
    /// The fixed window's limit.
    pub limit: u64,
    /// The fixed window's length.
    pub window_ms: u64,
    pub reshard_slots: u16,
    /// The token bucket phase: users, one key each, through the cluster client.
    pub bucket_users: u64,
    /// The token bucket phase: cluster clients sending at once.
    pub bucket_clients: usize,
    /// The token bucket phase: each user's bucket capacity.
    pub bucket_capacity: u64,
    /// The token bucket phase: requests per user.
    pub bucket_requests: u64,
    /// Tries of `redis-cli --cluster create` before the run fails.
    pub create_attempts: u32,
    /// How long the nodes may take to agree on the cluster before the run fails.
    pub ready_timeout_ms: u64,
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        if self.users == 0 || self.variants.is_empty() || self.limit == 0 || self.window_ms == 0 {
            return Err("users, limit and window_ms must be >= 1 and variants not empty".into());
        }
        if self.nodes < 3 {
            return Err(format!(
                "nodes = {}: redis-cli creates clusters of 3 or more",
                self.nodes
            ));
        }
        if self.reshard_slots == 0
            || u32::from(self.reshard_slots) > u32::from(SLOTS) / self.nodes as u32
        {
            return Err(
                "reshard_slots must be >= 1 and at most one node's share of the 16384 slots".into(),
            );
        }
        if self.bucket_users == 0 || self.bucket_clients == 0 || self.bucket_capacity == 0 {
            return Err("bucket_users, bucket_clients and bucket_capacity must be >= 1".into());
        }
        if self.bucket_requests <= self.bucket_capacity {
            return Err(
                "bucket_requests must exceed bucket_capacity, or no bucket is ever emptied".into(),
            );
        }
        if self.create_attempts == 0 || self.ready_timeout_ms == 0 {
            return Err("create_attempts and ready_timeout_ms must be >= 1".into());
        }
        Ok(())
    }
}
