//! # eviction
//! Hypothesis (seed 003, "Memory pressure" and its gotcha): under memory pressure a shared store
//! with `allkeys-lru` deletes live limiter keys, and a deleted bucket is a full bucket, so it
//! looks exactly like failing open; a dedicated store with `volatile-ttl` keeps them. Under
//! `noeviction` nothing is deleted, but the limiter's writes are refused with an OOM error and
//! the store's policy decides.
//!
//! Method: per trial, layout and policy, the limiter's server is flushed and reset (maxmemory 0).
//! `users` token buckets are emptied through the resilient store (each user `capacity` checks,
//! all admitted), then nothing touches them for `idle_ms` (Redis's LRU clock ticks once a
//! second: without the pause limiter and cache keys would look equally recent). maxmemory is set
//! to the cache's server's used_memory plus `headroom_bytes` with the policy, and cache data of
//! `pressure` x headroom is written (a share with a long expiry, the rest without). Then every
//! bucket is looked up (EXISTS), one limiter check shows what Redis answers, and each user sends
//! `capacity` checks again: an exact bucket would admit only its refill since its first check;
//! what gets through beyond that is over-admission. `new_users` arrive only then, with twice
//! the capacity in checks: their first check creates a bucket, a write that needs memory.
//! The dedicated-growth layout fills the limiter's own server too: after the cache data, new
//! users with one check each add `pressure` x `growth_headroom_bytes` of buckets over its
//! maxmemory (its used memory plus that headroom), so its policy must choose among limiter keys.
//!
//! Writes `eviction/eviction.csv` (one row per user and cell), `eviction/keys.csv` (one row per
//! cell: memory, evictions, survivors per key class, the limiter's answer), `eviction/meta.json`.

mod body;
mod cache;
mod charts;
mod checks;
mod report;
mod rows;

pub use rows::{CellRow, EvictionPolicy, Layout, UserClass, UserRow, CELLS, USERS};

use super::{Body, Definition, Render, Summarize, Validate};
use crate::record::Table;
use crate::store::Policy;
use serde::{Deserialize, Serialize};

/// Why the experiment refuses `--redis-url`.
const MUST_OWN: &str =
    "it sets maxmemory and the eviction policy, fills the server past it and flushes it";

/// Redis's LRU clock resolution (LRU_CLOCK_RESOLUTION): keys touched within one tick look alike.
const LRU_TICK_MS: u64 = 1000;

/// The eviction experiment.
pub struct Eviction;

impl Definition for Eviction {
    const ID: &'static str = "eviction";
    const TOML: &'static str = include_str!("../../../experiments/eviction.toml");
    const MUST_OWN_SERVER: Option<&'static str> = Some(MUST_OWN);
    type Params = Params;

    const BODY: Body<Params> = body::run;
    const CHARTS: Render = charts::render;
    const SUMMARY: Summarize = report::summary;

    fn tables() -> Vec<Table> {
        vec![USERS.table(), CELLS.table()]
    }
}

/// Parameters; defaults in `experiments/eviction.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Repetitions of every layout x policy.
    pub trials: u32,
    /// Where the limiter's keys live beside the cache: `shared` (one database), `shared-db`
    /// (database 1 of the same server), `dedicated` (a server of its own), `dedicated-growth`
    /// (a server of its own, filled past its maxmemory by the limiter's own new buckets).
    pub layouts: Vec<Layout>,
    /// maxmemory-policy of the servers, or `unlimited` (no maxmemory: the control).
    pub policies: Vec<EvictionPolicy>,
    /// Token buckets emptied before the memory pressure.
    pub users: u64,
    /// Users who arrive only under pressure: their first check creates a bucket.
    pub new_users: u64,
    /// Each bucket's capacity: each user sends this many checks, all admitted, then as many again.
    pub capacity: u64,
    /// Each bucket's refill rate, tokens per second (slow: an hour to refill).
    pub refill_per_sec: f64,
    /// maxmemory is the cache server's used memory plus this.
    pub headroom_bytes: u64,
    /// dedicated-growth: the limiter's server's maxmemory is its used memory plus this, and
    /// `pressure` x this much of new buckets (measured per bucket on the emptied ones) arrive.
    pub growth_headroom_bytes: u64,
    /// Cache data written, as a multiple of `headroom_bytes`.
    pub pressure: f64,
    /// Size of each cache value.
    pub value_bytes: usize,
    /// Share of the cache written with an expiry (`cache_ttl_s`); the rest has none.
    pub cache_ttl_fraction: f64,
    /// The expiry of that share.
    pub cache_ttl_s: u64,
    /// Pause after the buckets are emptied, so Redis's LRU clock (one tick a second) tells
    /// limiter keys from cache keys.
    pub idle_ms: u64,
    /// Checks in flight at once through the resilient store.
    pub in_flight: usize,
    /// What the store answers when Redis refuses or fails: `fail-open` or `fail-closed`.
    pub store_policy: Policy,
    /// The store's budget for one check.
    pub budget_ms: u64,
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        let p = self;
        if p.trials == 0 || p.layouts.is_empty() || p.policies.is_empty() {
            return Err("trials must be >= 1; layouts and policies non-empty".into());
        }
        if p.users == 0
            || p.capacity == 0
            || p.in_flight == 0
            || p.value_bytes == 0
            || p.budget_ms == 0
        {
            return Err(
                "users, capacity, in_flight, value_bytes and budget_ms must be >= 1".into(),
            );
        }
        if !(p.refill_per_sec > 0.0 && p.refill_per_sec.is_finite()) {
            return Err(
                "refill_per_sec must be > 0 (a bucket's expiry is its time to refill)".into(),
            );
        }
        if !(p.pressure > 1.0 && p.pressure.is_finite()) || p.headroom_bytes < 1 << 20 {
            return Err(
                "pressure must be > 1 (more cache than room) and headroom_bytes >= 1 MiB".into(),
            );
        }
        if p.growth_headroom_bytes < 1 << 16 {
            return Err("growth_headroom_bytes must be >= 64 KiB".into());
        }
        if !(0.0..=1.0).contains(&p.cache_ttl_fraction) || p.cache_ttl_s == 0 {
            return Err("cache_ttl_fraction must be within [0, 1] and cache_ttl_s >= 1".into());
        }
        if p.idle_ms <= LRU_TICK_MS {
            return Err(format!(
                "idle_ms must exceed Redis's LRU clock tick ({LRU_TICK_MS} ms), \
                 or buckets and cache look equally recent"
            ));
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
    fn both_profiles_are_valid() {
        for profile in [Profile::Quick, Profile::Full] {
            let p = resolve::<Eviction>(profile, &[]).unwrap();
            p.validate().unwrap();
        }
    }

    #[test]
    fn a_pause_within_one_lru_tick_is_refused() {
        let sets = [("idle_ms".to_string(), "500".to_string())];
        let p = resolve::<Eviction>(Profile::Quick, &sets).unwrap();
        assert!(p.validate().unwrap_err().contains("LRU clock"));
    }

    #[test]
    fn unknown_policy_is_a_clear_error() {
        let sets = [("policies".to_string(), "[\"allkeys-random\"]".to_string())];
        let err = resolve::<Eviction>(Profile::Quick, &sets)
            .unwrap_err()
            .to_string();
        assert!(err.contains("allkeys-random"), "{err}");
    }
}
