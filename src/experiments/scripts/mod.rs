//! # scripts
//! Hypothesis (seeds 002, 003, 001): EVAL, EVALSHA and FCALL run the same token bucket, but EVAL
//! sends the whole script every call (seed 002: +2.5 µs Redis CPU per decision, ~11% less
//! throughput than EVALSHA; EVALSHA and FCALL the same). What differs is what survives: the
//! script cache is neither persisted nor replicated, so after a restart, on a replica and after
//! SCRIPT FLUSH EVALSHA answers NOSCRIPT, while a function library is kept in the RDB and on the
//! replica. A client that resends as EVAL on NOSCRIPT (go-redis, ioredis) pays one failed call
//! and one extra round trip; one that sends SCRIPT LOAD first (redis-rs) pays two; with either,
//! SCRIPT FLUSH under load costs no user-visible error (seed 003).
//!
//! Method, three parts on servers of our own:
//! - cost: 16 clients (connections of one worker process, pinned away from Redis) over 10,000
//!   buckets, flat out for `run_seconds` after an excluded warm-up, `runs` times per mode, runs
//!   interleaved, each run starting one mode further along the list (no mode always follows the
//!   same one). The script and the library are loaded before each run. Redis main-thread CPU,
//!   INFO commandstats and INFO stats (bytes read and written) are sampled around the run.
//! - flush: `flush_clients` clients in the harness (one single-threaded event loop) over the same
//!   keys for `flush_before_ms` + `flush_after_ms`; at t = 0 a connection of its own sends
//!   SCRIPT FLUSH (FUNCTION FLUSH for FCALL). Modes without a fallback get the script or library
//!   loaded again `reload_after_ms` later, as an operator would. Every check's end and latency
//!   is recorded and binned by `bin_ms` around the instant the flush was sent.
//! - survival: per mode and event, a fresh primary (with the persistence the event needs; a
//!   replica attached first for the replica events) gets the script cached (SCRIPT LOAD) and the
//!   library loaded (FUNCTION LOAD) and makes one decision; then the event, then SCRIPT EXISTS and
//!   FUNCTION LIST on the server the first call goes to, then that call on a connection opened
//!   beforehand: its outcome, round trips and latency.
//!
//! Writes `scripts/cost.csv` (one row per run), `scripts/flush.csv` (one row per bin),
//! `scripts/survival.csv` (one row per mode and event), `scripts/meta.json`.

mod body;
mod bucket;
mod charts;
mod cost;
mod flush;
mod report;
pub(crate) use report::limiter_claims;
mod rows;
mod survival;

pub use rows::{CostRow, CustomSurvivalRow, Event, FlushRow, SurvivalRow};
pub use rows::{COSTS, CUSTOM_SURVIVAL, FLUSH, SURVIVAL};
pub(crate) use survival::process_survival;

use super::limiters::Verdicts;
use super::{Body, Definition, Render, Summarize, Validate};
use crate::limiter::{Invocation, LimitSpec, Strategy};
use crate::record::Table;
use serde::{Deserialize, Serialize};

/// The scripts experiment.
pub struct Scripts;

impl Definition for Scripts {
    const ID: &'static str = "scripts";
    const TOML: &'static str = include_str!("../../../experiments/scripts.toml");
    const MUST_OWN_SERVER: Option<&'static str> = Some(
        "it flushes the script cache and function libraries, and restarts and replicates servers",
    );
    const NO_MANAGED_TLS: Option<&'static str> =
        Some("its replicas and restarted servers are started without TLS");
    type Params = Params;
    const TAKES_LIMITERS: bool = true;
    /// A limiter process goes through the survival events that keep its server (restarts, flushes).
    const TAKES_PROCESSES: bool = true;
    const VERDICTS: Verdicts = report::verdicts;
    const LIMITER_CLAIMS: super::limiters::Claims = report::limiter_claims;

    const BODY: Body<Params> = body::run;
    const CHARTS: Render = charts::render;
    const SUMMARY: Summarize = report::summary;

    fn tables() -> Vec<Table> {
        vec![
            COSTS.table(),
            FLUSH.table(),
            SURVIVAL.table(),
            Table::of_custom_limiters::<CustomSurvivalRow>(CUSTOM_SURVIVAL.name()),
        ]
    }
}

/// Parameters; defaults in `experiments/scripts.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The token bucket script every part runs: seed 002's own (seed002-bucket) or ratelab's
    /// (lua-bucket), the two with a function in the library for FCALL.
    pub strategy: Strategy,
    /// cost: the ways the token bucket is invoked (EVAL, EVALSHA with or without a fallback, FCALL).
    pub modes: Vec<Invocation>,
    /// cost: runs per mode, interleaved.
    pub runs: u32,
    /// cost: measured seconds per run, flat out.
    pub run_seconds: f64,
    /// cost: unmeasured seconds before each run.
    pub warmup_seconds: f64,
    /// cost: connections of the run's worker process.
    pub clients: usize,
    /// Buckets the checks are spread over (cost and flush).
    pub keys: u64,
    /// Each bucket's capacity.
    pub capacity: u64,
    /// Each bucket's refill rate, tokens per second.
    pub refill_per_sec: f64,
    /// flush: the ways tried (fcall-load: FCALL falling back to FUNCTION LOAD).
    pub flush_modes: Vec<Invocation>,
    /// flush: runs per mode.
    pub flush_runs: u32,
    /// flush: clients in the harness's one event loop.
    pub flush_clients: usize,
    /// flush: checks run this long before SCRIPT FLUSH (FUNCTION FLUSH for FCALL).
    pub flush_before_ms: u64,
    /// flush: and this long after it.
    pub flush_after_ms: u64,
    /// flush: modes without a fallback get the script or library loaded again this long after
    /// the flush, as an operator would.
    pub reload_after_ms: u64,
    /// flush: width of the time bins of flush.csv around the flush.
    pub bin_ms: u64,
    /// survival: the ways tried after each event.
    pub survival_modes: Vec<Invocation>,
    /// survival: what happens between the first call and the next (a restart with each
    /// persistence, a replica, its promotion, SCRIPT FLUSH, FUNCTION FLUSH).
    pub events: Vec<Event>,
}

impl Params {
    /// The token bucket every part runs.
    fn limit(&self) -> LimitSpec {
        LimitSpec {
            capacity: self.capacity,
            refill_per_sec: self.refill_per_sec,
            ..LimitSpec::default()
        }
    }
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        if ![Strategy::Seed002Bucket, Strategy::LuaBucket].contains(&self.strategy) {
            return Err(
                "strategy: seed002-bucket or lua-bucket, the scripts FCALL can call too".into(),
            );
        }
        if self.strategy == Strategy::Seed002Bucket && self.refill_per_sec <= 0.0 {
            return Err(
                "refill_per_sec must be > 0 for seed002-bucket: its expiry divides by the rate"
                    .into(),
            );
        }
        if self.runs == 0 || self.run_seconds <= 0.0 || self.clients == 0 || self.keys == 0 {
            return Err("runs, run_seconds, clients, keys must be > 0".into());
        }
        if self.warmup_seconds < 0.0 {
            return Err("warmup_seconds must be >= 0".into());
        }
        if self.flush_clients == 0 || self.bin_ms == 0 || self.flush_after_ms == 0 {
            return Err("flush_clients, flush_after_ms and bin_ms must be > 0".into());
        }
        if self.reload_after_ms >= self.flush_after_ms {
            return Err(format!(
                "reload_after_ms ({}) must fall inside flush_after_ms ({})",
                self.reload_after_ms, self.flush_after_ms
            ));
        }
        if self.modes.is_empty() && self.flush_modes.is_empty() && self.survival_modes.is_empty() {
            return Err(
                "modes, flush_modes and survival_modes are all empty: nothing to run".into(),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Profile;
    use crate::experiments::frame::resolve;

    #[test]
    fn both_profiles_run_every_way_and_every_event() {
        for profile in [Profile::Quick, Profile::Full] {
            let p = resolve::<Scripts>(profile, &[]).unwrap();
            assert!(p.validate().is_ok());
            assert_eq!(p.flush_modes, Invocation::ALL, "{profile:?}");
            assert_eq!(p.survival_modes, Invocation::ALL, "{profile:?}");
            assert_eq!(p.events.len(), 7, "{profile:?}");
            assert_eq!(p.modes.len(), 5, "{profile:?}: the issue's five ways");
        }
        let bad = [("reload_after_ms".to_string(), "100000".to_string())];
        assert!(resolve::<Scripts>(Profile::Quick, &bad)
            .unwrap()
            .validate()
            .is_err());
        // Seed 002's script divides by the rate; ratelab's takes a bucket that never refills.
        let still = |strategy: &str| {
            let sets = [("refill_per_sec", "0"), ("strategy", strategy)];
            let sets = sets.map(|(k, v)| (k.to_string(), v.to_string()));
            resolve::<Scripts>(Profile::Quick, &sets)
                .unwrap()
                .validate()
        };
        assert!(still("\"seed002-bucket\"").is_err_and(|e| e.contains("divides by the rate")));
        assert!(still("\"lua-bucket\"").is_ok());
    }
}
