//! # refill
//! Hypothesis (seed 000): two details of the seed's token bucket keep it at its rate. Its clock is
//! Redis's TIME, "because servers' clocks disagree, and a shared bucket refilled by skewed clocks
//! refills at the wrong rate"; and a denial refreshes the key's expiry, "otherwise a client that
//! keeps hammering a full bucket would eventually let its own bucket expire, and get handed a
//! fresh, full one".
//!
//! Method: one client per configuration hammers one fresh bucket, a call every `interval_us`, for
//! `run_ms`, all configurations of a trial at once (separate keys and connections), and counts what
//! it was allowed against capacity + rate x elapsed, the most a bucket refilling at its rate allows.
//! - expiry: ratelab's bucket (`refresh`) and the same without the denial's PEXPIRE
//!   (`no-refresh`), each with an expiry shorter than one token's refill (`short_ttl_ms`) and with
//!   the expiry that covers a full refill (capacity / rate).
//! - clock: seed 000's bucket on the caller's clock, two callers alternating whose clocks are
//!   `skew_ms` apart, beside the same callers with one clock and beside the script on Redis's TIME.
//!
//! Writes `refill/refill.csv` (one row per trial of each configuration), `refill/meta.json`.

mod body;
mod charts;
mod report;
mod rows;

pub use rows::{RefillRow, TRIALS};

use super::{Body, Definition, Render, Summarize, Validate};
use crate::record::Table;
use serde::{Deserialize, Serialize};

/// The refill experiment.
pub struct Refill;

impl Definition for Refill {
    const ID: &'static str = "refill";
    const TOML: &'static str = include_str!("../../../experiments/refill.toml");
    type Params = Params;

    const BODY: Body<Params> = body::run;
    const CHARTS: Render = charts::render;
    const SUMMARY: Summarize = report::summary;

    fn tables() -> Vec<Table> {
        vec![TRIALS.table()]
    }
}

/// Parameters; defaults in `experiments/refill.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Trials of every configuration, each on a fresh key.
    pub trials: u32,
    /// How long one trial's client hammers its bucket, ms.
    pub run_ms: u64,
    /// One call every this many µs; a call that runs over starts the next at once.
    pub interval_us: u64,
    /// The expiry drill's bucket capacity, tokens.
    pub expiry_capacity: u64,
    /// The expiry drill's refill rate, tokens per second.
    pub expiry_refill_per_sec: f64,
    /// The expiry drill's short expiry, ms: under one token's refill (1000 / rate ms), so an
    /// empty bucket hammered by denials outlives it only if a denial refreshes it.
    pub short_ttl_ms: u64,
    /// The clock drill's bucket capacity, tokens.
    pub clock_capacity: u64,
    /// The clock drill's refill rate, tokens per second.
    pub clock_refill_per_sec: f64,
    /// How far apart the clock drill's two callers' clocks are, ms: one ahead by half, one behind.
    pub skew_ms: u64,
}

impl Params {
    /// The expiry that covers a full refill, ms (seed 002's capacity / rate).
    fn full_ttl_ms(&self) -> u64 {
        (self.expiry_capacity as f64 / self.expiry_refill_per_sec * 1000.0).ceil() as u64
    }
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        let counts = [self.trials as u64, self.run_ms, self.interval_us];
        if counts.contains(&0) || self.expiry_capacity == 0 || self.clock_capacity == 0 {
            return Err(
                "trials, run_ms, interval_us, expiry_capacity and clock_capacity must be >= 1"
                    .into(),
            );
        }
        let rate = |r: f64| r > 0.0 && r.is_finite();
        if !rate(self.expiry_refill_per_sec) || !rate(self.clock_refill_per_sec) {
            return Err("expiry_refill_per_sec and clock_refill_per_sec must be > 0".into());
        }
        // An expiry as long as a token's refill is always refreshed by the next admission.
        if self.short_ttl_ms == 0 || self.short_ttl_ms as f64 >= 1000.0 / self.expiry_refill_per_sec
        {
            return Err(
                "short_ttl_ms must be >= 1 and under one token's refill (1000 / expiry_refill_per_sec ms)"
                    .into(),
            );
        }
        Ok(())
    }
}
