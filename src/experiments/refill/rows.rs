//! refill's CSV schema.

use crate::record::CsvFile;
use serde::{Deserialize, Serialize};

/// `refill.csv`: One row per trial of each configuration.
pub const TRIALS: CsvFile<RefillRow> = CsvFile::new("refill.csv");

/// One client hammering one fresh bucket for `run_ms`: what it was admitted beside what a bucket
/// refilling at its rate allows over the same time.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RefillRow {
    /// `expiry` (does a denial have to refresh the expiry?) or `clock` (whose clock refills it?).
    pub drill: String,
    /// `refresh`: ratelab's bucket, whose denial refreshes the expiry; `no-refresh`: the same
    /// without that line; `seed`: seed 000's bucket, refilled by the clock in `clock`.
    pub script: String,
    /// Whose clock refills the bucket: `redis` (TIME inside the script) or `caller` (passed in).
    pub clock: String,
    /// Who calls: `one` client (the expiry drill), two alternating on the `same-clock`, or two
    /// alternating whose clocks are `skewed` by `skew_ms`.
    pub callers: String,
    /// How far apart the two alternating callers' clocks are, ms (0: one clock).
    pub skew_ms: u64,
    /// Which expiry: `short` (under one token's refill) or `full-refill` (capacity / rate or more).
    pub expiry: String,
    /// The expiry every call sets (every admission; every denial too, but for `no-refresh`), ms.
    pub ttl_ms: u64,
    /// The bucket's capacity, tokens.
    pub capacity: u64,
    /// Its refill rate, tokens per second.
    pub refill_per_sec: f64,
    /// The trial's index within its configuration.
    pub trial: u32,
    /// Calls made.
    pub calls: u64,
    /// Calls the script allowed.
    pub admitted: u64,
    /// From the first call's send to the last call's reply, ms.
    pub elapsed_ms: f64,
    /// The most a bucket that starts full can allow over `elapsed_ms`: capacity + floor(rate x
    /// elapsed). Redis's clock runs within the harness's span, so a correct bucket stays at or under it.
    pub limit_admits: u64,
    /// Allowed calls after the first that found the bucket full (capacity - 1 left): a fresh
    /// bucket, or one refilled faster than its rate.
    pub found_full: u64,
}
