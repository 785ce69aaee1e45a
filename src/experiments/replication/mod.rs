//! # replication
//! Hypothesis (seed 002): a token-bucket script may read Redis's clock (TIME) and still leave a
//! replica identical to its primary, because Redis 7 replicates a script by its effects: the
//! replica receives MULTI, the HSET of the values the script computed, an absolute PEXPIREAT and
//! EXEC, never the script, so it never reads a clock of its own. After 10,000 calls over 100
//! buckets every bucket should match, expiry included.
//!
//! Method: the run's own primary and one replica of it, declared (`Topology::Replicated`) and built
//! by the frame, ready once the replica's link is up and it has caught up. For each of `strategies`
//! (seed 002's own script and ratelab's lua-bucket), `calls` calls over `buckets` buckets of its own
//! in turn from a closed loop, with MONITOR on the replica and INFO
//! commandstats sampled on both sides around the calls;
//! then `wait_caught_up`, then for every bucket HGETALL + PTTL on the primary and then on the
//! replica, timed from the first send to the last reply (the only PTTL difference allowed).
//!
//! Writes `replication/replication.csv` (one row per bucket: both sides' fields and PTTL, `match`),
//! `replication/stream.csv` (one row per command: calls on each side, what MONITOR on the replica
//! saw from the primary's link, one example), `replication/meta.json`.

mod body;
mod charts;
mod compare;
mod report;
mod rows;
mod stream;
mod ttl;

pub use rows::{BucketRow, StreamRow, TtlRow, BUCKETS, STREAM, TTLS};

use super::{Body, Concurrency, Definition, Render, Summarize, Validate};
use crate::limiter::Strategy;
use crate::record::Table;
use crate::server::Topology;
use serde::{Deserialize, Serialize};

/// Why the experiment refuses `--redis-url`.
const MUST_OWN: &str = "it starts a replica of the server and reconfigures its replication";

/// The replication experiment.
pub struct Replication;

impl Definition for Replication {
    const ID: &'static str = "replication";
    const TOML: &'static str = include_str!("../../../experiments/replication.toml");
    const MUST_OWN_SERVER: Option<&'static str> = Some(MUST_OWN);
    const NO_MANAGED_TLS: Option<&'static str> = Some("its replica is started without TLS");
    const TOPOLOGY: Topology = Topology::Replicated { replicas: 1 };
    type Params = Params;

    const BODY: Body<Params> = body::run;
    const CHARTS: Render = charts::render;
    const SUMMARY: Summarize = report::summary;

    fn tables() -> Vec<Table> {
        vec![BUCKETS.table(), STREAM.table(), TTLS.table()]
    }
}

/// Parameters; defaults in `experiments/replication.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The token bucket scripts called, each over buckets of its own: seed 002's and ratelab's.
    pub strategies: Vec<Strategy>,
    /// Calls per strategy.
    pub calls: u64,
    /// Token buckets the calls are spread over.
    pub buckets: u64,
    pub capacity: u64,
    /// Each bucket's refill rate, tokens per second.
    pub refill_per_sec: f64,
    /// `PxF`: P worker processes with F calls in flight each.
    pub load: Concurrency,
    pub catch_up_timeout_ms: u64,
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        if self.calls == 0
            || self.buckets == 0
            || self.capacity == 0
            || self.catch_up_timeout_ms == 0
        {
            return Err("calls, buckets, capacity and catch_up_timeout_ms must be >= 1".into());
        }
        let buckets = [Strategy::Seed002Bucket, Strategy::LuaBucket];
        if self.strategies.is_empty() || !self.strategies.iter().all(|s| buckets.contains(s)) {
            return Err(
                "strategies: seed002-bucket and/or lua-bucket, the token buckets whose hash is compared".into(),
            );
        }
        // Without refill a bucket never expires within the run, and no refill is computed from TIME.
        if !(self.refill_per_sec > 0.0 && self.refill_per_sec.is_finite()) {
            return Err(
                "refill_per_sec must be > 0: the script must compute a refill from TIME".into(),
            );
        }
        Ok(())
    }
}
