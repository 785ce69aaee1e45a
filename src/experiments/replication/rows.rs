//! replication's CSV schemas.

use crate::limiter::Strategy;
use crate::record::CsvFile;
use serde::{Deserialize, Serialize};

/// Runs before strategies were a parameter called lua-bucket alone.
fn lua_bucket() -> Strategy {
    Strategy::LuaBucket
}

/// `replication.csv`: One row per bucket, read on both sides.
pub const BUCKETS: CsvFile<BucketRow> = CsvFile::new("replication.csv");

/// `ttl.csv`: One row per bucket, called once more on the primary with its PTTL read right after.
pub const TTLS: CsvFile<TtlRow> = CsvFile::new("ttl.csv");

/// `stream.csv`: One row per command either side executed.
pub const STREAM: CsvFile<StreamRow> = CsvFile::new("stream.csv");

/// One bucket, read on the primary and then on the replica once the replica had caught up.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BucketRow {
    /// The script that wrote it.
    #[serde(default = "lua_bucket")]
    pub strategy: Strategy,
    /// Its index among the run's buckets.
    pub bucket: u64,
    /// The bucket's key.
    pub key: String,
    /// The hash's `tokens` field (as the script's HSET wrote it), empty when absent.
    pub primary_tokens: Option<String>,
    /// The same field read on the replica.
    pub replica_tokens: Option<String>,
    /// The hash's `ts` field: the TIME the script last read on the primary, in ms.
    pub primary_ts: Option<String>,
    /// The same field read on the replica.
    pub replica_ts: Option<String>,
    /// 1 when the whole hash (every field, not only these two) is equal on both sides, else 0.
    pub fields_equal: u8,
    /// PTTL on each side (-1: no expiry, -2: no key).
    pub primary_pttl_ms: i64,
    /// PTTL on the replica (-1: no expiry, -2: no key).
    pub replica_pttl_ms: i64,
    /// primary - replica: the replica is read later, so its PTTL is expected lower by that gap.
    pub pttl_diff_ms: i64,
    /// From sending the primary's read to the replica's reply: the most the PTTLs may differ by.
    pub read_gap_ms: f64,
    /// 1 when the key exists with an expiry, `fields_equal`, and |pttl_diff_ms| <= read_gap_ms + 1.
    #[serde(rename = "match")]
    pub matched: u8,
    /// How long the replica took to reach the primary's offset after the last call (same every row).
    pub catch_up_ms: f64,
}

/// One command either side executed over the calls and the catch-up.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StreamRow {
    /// As INFO commandstats names it (lower case, `container|subcommand`).
    pub command: String,
    /// Calls INFO commandstats counted on the primary (a script's own commands included).
    pub calls_on_primary: u64,
    /// Calls INFO commandstats counted on the replica.
    pub calls_on_replica: u64,
    /// Lines MONITOR on the replica showed from its link to the primary.
    pub monitor_on_replica: u64,
    /// The arguments of the first such line: what the replica was told to do.
    pub example_on_replica: String,
}

/// One bucket called once more on the primary after the comparison, its PTTL read right behind
/// the call: the expiry the script had just set, beside the bucket's time to refill completely.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TtlRow {
    /// The script called.
    #[serde(default = "lua_bucket")]
    pub strategy: Strategy,
    /// Its index among the run's buckets.
    pub bucket: u64,
    /// The bucket's key.
    pub key: String,
    /// The bucket's capacity, tokens.
    pub capacity: u64,
    /// Its refill rate, tokens per second.
    pub refill_per_sec: f64,
    /// capacity / rate, ms: how long an emptied bucket takes to be full again (seed 002: its TTL).
    pub full_refill_ms: f64,
    /// The expiry the script sets: the one ratelab's lua-bucket is passed (its ARGV), or the one
    /// seed 002's script computes, ceil(capacity / rate * 1000), ms.
    pub ttl_asked_ms: u64,
    /// PTTL read right after the call, queued behind it on the same connection, ms.
    pub pttl_ms: i64,
}
