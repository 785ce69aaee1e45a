//! cluster's CSV schemas.

use super::Variant;
use crate::record::CsvFile;
use serde::{Deserialize, Serialize};

/// `cluster.csv`: One row per user's call of one variant in one phase.
pub const CALLS: CsvFile<CallRow> = CsvFile::new("cluster.csv");

/// `nodes.csv`: One row per slot range of the agreed map, per phase.
pub const NODES: CsvFile<NodeRow> = CsvFile::new("nodes.csv");

/// `bucket.csv`: One row per user's token bucket.
pub const BUCKETS: CsvFile<BucketRow> = CsvFile::new("bucket.csv");

/// `setup.csv`: One row per cluster creation or reshard.
pub const SETUPS: CsvFile<SetupRow> = CsvFile::new("setup.csv");

/// `phases.csv`: One row per phase.
pub const PHASES: CsvFile<PhaseRow> =
    CsvFile::new("phases.csv").added(&["outcome_flips", "placement_flips"]);

/// `custom.csv`: One row per user of a custom limiter.
pub const CUSTOM: CsvFile<CustomBucketRow> = CsvFile::new("custom.csv");

/// One user's call of one variant in one phase.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CallRow {
    /// one-redis | cluster | reshard.
    pub phase: String,
    /// How the script finds its counter: `undeclared`, `undeclared-shebang`,
    /// `undeclared-shebang-allow-cross-slot`, `declared` or `hashtag`.
    pub variant: Variant,
    /// The user's number.
    pub user: u64,
    /// Primaries serving slots (1 for one-redis).
    pub nodes: u32,
    /// (nodes - 1) / nodes: the share of users whose derived key an even split puts on another
    /// node than the base key.
    pub expected_fail_fraction: f64,
    /// Which key `KEYS[1]` held: `base` (the script derives the counter) or `derived` (declared).
    pub declared: String,
    /// The user's key, from which the window's counter is derived.
    pub base_key: String,
    /// Its hash slot.
    pub base_slot: u16,
    /// `host:port` of the primary owning the slot.
    pub base_node: String,
    /// The window's counter: `base_key:w<index>`.
    pub derived_key: String,
    /// Its hash slot.
    pub derived_slot: u16,
    /// `host:port` of the primary owning that slot.
    pub derived_node: String,
    /// 1 when base and derived key live on the same node.
    pub same_node: u8,
    /// 1 when they hash to the same slot.
    pub same_slot: u8,
    /// The node the EVAL went to: the owner of `KEYS[1]`.
    pub sent_to: String,
    /// 1 when the script ran and replied.
    pub ok: u8,
    /// The script's decision when it ran (1 allowed, 0 denied).
    pub allowed: Option<u8>,
    /// `` | non-local-key | cross-slot | moved | other.
    pub error_kind: String,
    /// 1 when the error is "Script attempted to access a non local key in a cluster node".
    pub non_local_key: u8,
    /// The server's reply as sent (code and message), empty when ok.
    pub error: String,
    /// 1 when placement says the call must fail: on a cluster, an undeclared derived key on
    /// another node (any script), or in another slot (`#!lua` without allow-cross-slot-keys).
    pub predicted_fail: u8,
    /// 1 when the outcome is what placement predicts.
    pub as_predicted: u8,
}

/// One slot range of the map every node agreed on, per phase.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NodeRow {
    /// cluster | reshard.
    pub phase: String,
    /// The range's first slot.
    pub first_slot: u16,
    /// Its last slot, inclusive.
    pub last_slot: u16,
    /// Slots in the range.
    pub slots: u32,
    /// `host:port` of the primary serving it.
    pub node: String,
    /// That node's cluster id (CLUSTER MYID).
    pub node_id: String,
}

/// One user's token bucket, checked from every client through the cluster.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BucketRow {
    /// The user's number.
    pub user: u64,
    /// The bucket's key.
    pub key: String,
    /// Its hash slot.
    pub slot: u16,
    /// `host:port` of the primary owning that slot.
    pub node: String,
    pub clients: u64,
    /// Checks sent for this bucket, over all clients.
    pub requests: u64,
    pub admitted: u64,
    pub denied: u64,
    pub errors: u64,
    /// The bucket's capacity; it never refills, so exactly this many must be admitted.
    pub capacity: u64,
    /// The first error's text, empty when none.
    pub first_error: String,
}

/// The cluster's creation, or a reshard, with how long each step took.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SetupRow {
    /// create | reshard.
    pub operation: String,
    /// Primaries in the cluster.
    pub nodes: u32,
    /// create: starting every node until it answered PING.
    pub start_nodes_ms: f64,
    /// create: redis-cli --cluster create, every attempt; reshard: moving the slots and keys.
    pub work_ms: f64,
    /// create: redis-cli runs it took.
    pub attempts: u32,
    /// From the end of the work until every node reported the same slot map and cluster_state:ok.
    pub converge_ms: f64,
    /// The whole operation, start to converged.
    pub total_ms: f64,
    /// reshard: the slots moved and from which node to which.
    pub first_slot: Option<u16>,
    /// reshard: the last slot moved, inclusive.
    pub last_slot: Option<u16>,
    /// reshard: `host:port` of the node the slots left.
    pub from_node: String,
    /// reshard: `host:port` of the node they went to.
    pub to_node: String,
    /// reshard: keys migrated with the slots.
    pub keys_moved: Option<u64>,
}

/// What each phase did, or why it was skipped.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PhaseRow {
    /// one-redis | cluster | bucket | reshard.
    pub phase: String,
    /// 1 when it ran.
    pub ran: u8,
    /// Why not, when it did not.
    pub reason: String,
    /// managed (the harness's own servers) or user (--redis-url).
    pub servers: String,
    /// Primaries serving slots (1 for one-redis).
    pub nodes: u32,
    /// Calls (or checks) made.
    pub calls: u64,
    /// How long the phase took.
    pub took_ms: f64,
    /// reshard only: calls (variant x user) whose outcome, ran or refused, differs from the same
    /// call before the reshard; empty in the other phases.
    #[serde(default)]
    pub outcome_flips: Option<u64>,
    /// reshard only: of the same calls, those whose placement's prediction changed (the reshard
    /// moved one of the user's keys onto or off the other's node); empty in the other phases.
    #[serde(default)]
    pub placement_flips: Option<u64>,
}

/// One user of a custom limiter (`--limiter`) through the cluster, checked as the bucket is.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CustomBucketRow {
    /// The manifest's name.
    pub strategy: crate::limiter::Strategy,
    /// The user's number.
    pub user: u64,
    /// The bucket's key.
    pub key: String,
    /// Its hash slot.
    pub slot: u16,
    /// `host:port` of the primary owning that slot.
    pub node: String,
    pub requests: u64,
    pub admitted: u64,
    pub denied: u64,
    pub errors: u64,
    /// The limit; it never refills or rolls over, so at most this many may be admitted.
    pub limit: u64,
    /// 1 when the first error was "Script attempted to access a non local key in a cluster node".
    pub non_local_key: u8,
    /// The first error's text, empty when none.
    pub first_error: String,
}

impl CustomBucketRow {
    /// The row of `strategy` from the bucket phase's row of the same checks.
    pub fn of(strategy: crate::limiter::Strategy, r: &BucketRow) -> Self {
        CustomBucketRow {
            strategy,
            user: r.user,
            key: r.key.clone(),
            slot: r.slot,
            node: r.node.clone(),
            requests: r.requests,
            admitted: r.admitted,
            denied: r.denied,
            errors: r.errors,
            limit: r.capacity,
            non_local_key: u8::from(r.first_error.contains(super::variants::NON_LOCAL)),
            first_error: r.first_error.clone(),
        }
    }
}
