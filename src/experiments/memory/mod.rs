//! # memory
//! Hypothesis (seed 002): a busy client's memory is a few hundred bytes on counter strategies and
//! grows with the limit on a sliding log, which stores one sorted-set entry per admitted request.
//! The log has a cliff: up to `zset-max-listpack-entries` (128 by default) it is a compact
//! listpack; one entry more converts it to a skiplist plus a hash table, 3.6x the memory for one
//! more request. Raising the setting moves the cliff, and costs CPU, since listpack operations
//! are linear in their size.
//!
//! Method: per `listpack_entries` setting, a fresh server (a skiplist never shrinks back to a
//! listpack, and a clean baseline matters), the setting applied with CONFIG SET (or the server's
//! default kept) and read back. Each fill starts from FLUSHALL SYNC with the strategy's script
//! already loaded and only the harness connected; `used_memory` is read, then one worker process
//! makes exactly `limit` checks per client over `clients` keys in turn (pipelined EVALSHA through
//! the limiter itself, so every key ends at its limit exactly as the strategy leaves it), the
//! worker exits, and `used_memory` is read again. The growth divided by the clients is the cost of
//! one busy client: key, value, expiry and Redis's bookkeeping. Beside it: MEMORY USAGE (SAMPLES 0)
//! and OBJECT ENCODING of client 0's key, the log's member length, and Redis main-thread CPU per
//! decision during the fill.
//!
//! Writes `memory/memory.csv` (one row per fill), `memory/meta.json`.

mod body;
mod charts;
mod derived;
mod fill;
mod report;
mod rows;
mod setting;

pub use rows::{MemoryRow, MEMORY};
pub use setting::ListpackSetting;

use super::{Body, Definition, Render, Summarize, Validate};
use crate::limiter::Strategy;
use crate::record::Table;
use fill::Fill;
use serde::{Deserialize, Serialize};

/// The memory experiment.
pub struct Memory;

impl Definition for Memory {
    const ID: &'static str = "memory";
    const TOML: &'static str = include_str!("../../../experiments/memory.toml");
    const MUST_OWN_SERVER: Option<&'static str> =
        Some("it sets zset-max-listpack-entries and flushes the server between fills");
    type Params = Params;

    const BODY: Body<Params> = body::run;
    const CHARTS: Render = charts::render;
    const SUMMARY: Summarize = report::summary;

    fn tables() -> Vec<Table> {
        vec![MEMORY.table()]
    }
}

/// Parameters; defaults in `experiments/memory.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Repetitions of every fill.
    pub repeats: u32,
    pub listpack_entries: Vec<ListpackSetting>,
    /// The limiters whose memory per client is measured (the other strategies at the first
    /// `listpack_entries` setting).
    pub strategies: Vec<Strategy>,
    pub log_limits: Vec<u64>,
    pub fine_below: u64,
    /// Every limit up to this many above the listpack threshold is filled at each setting.
    pub fine_above: u64,
    pub shared_limits: Vec<u64>,
    pub other_limits: Vec<u64>,
    pub checks_budget: u64,
    /// The checks budget of the fills around the threshold and of `shared_limits`.
    pub fine_checks_budget: u64,
    /// Clients per fill (budget / limit) are at least this many.
    pub min_clients: u64,
    /// Clients per fill (budget / limit) are at most this many.
    pub max_clients: u64,
    pub window_ms: u64,
    pub connections: usize,
    /// The filling worker's requests in flight per connection (pipelined EVALSHA).
    pub in_flight: usize,
    pub member_lens: Vec<u32>,
    /// The sliding log's limits at which members of each length in `member_lens` are tried.
    pub member_limits: Vec<u64>,
    /// Client key lengths (bytes) the sliding-window counter is tried with, at `swc_key_limit`.
    pub swc_key_lens: Vec<u64>,
    /// The sliding-window counter's limit for the key-length variation.
    pub swc_key_limit: u64,
}

/// Clients for a fill: the budget of checks shared over the limit, within the bounds.
fn clients_for(budget: u64, limit: u64, p: &Params) -> u64 {
    (budget / limit.max(1)).clamp(p.min_clients, p.max_clients)
}

/// The fills at one setting whose threshold is `threshold`: the fine sweep around it and the
/// shared limits at every setting; coarse log limits and the other strategies at the first only.
fn plan(p: &Params, threshold: u64, first: bool) -> Vec<Fill> {
    let mut out = Vec::new();
    for &strategy in &p.strategies {
        let mut limits: Vec<(u64, u64)> = Vec::new();
        if strategy == Strategy::LuaLog {
            let lo = threshold.saturating_sub(p.fine_below).max(1);
            limits.extend((lo..=threshold + p.fine_above).map(|l| (l, p.fine_checks_budget)));
            limits.extend(p.shared_limits.iter().map(|&l| (l, p.fine_checks_budget)));
            if first {
                limits.extend(p.log_limits.iter().map(|&l| (l, p.checks_budget)));
            }
        } else if first {
            limits.extend(p.other_limits.iter().map(|&l| (l, p.checks_budget)));
        }
        limits.sort_unstable();
        limits.dedup_by_key(|l| l.0);
        out.extend(
            (limits.into_iter())
                .map(|(limit, budget)| Fill::plain(strategy, limit, clients_for(budget, limit, p))),
        );
    }
    if first {
        out.extend(sweeps(p));
    }
    out
}

/// The variations that test why sizes differ from the seed's, at the server's default setting:
/// the log at `member_limits` with members of each of `member_lens` bytes, and the
/// sliding-window counter at `swc_key_limit` with keys of each of `swc_key_lens` bytes.
fn sweeps(p: &Params) -> Vec<Fill> {
    let mut out = Vec::new();
    if p.strategies.contains(&Strategy::LuaLog) {
        for &bytes in &p.member_lens {
            out.extend(p.member_limits.iter().map(|&limit| Fill {
                member_bytes: Some(bytes),
                ..Fill::plain(
                    Strategy::LuaLog,
                    limit,
                    clients_for(p.fine_checks_budget, limit, p),
                )
            }));
        }
    }
    if p.strategies.contains(&Strategy::LuaSwc) {
        let limit = p.swc_key_limit;
        out.extend(p.swc_key_lens.iter().map(|&bytes| Fill {
            key_bytes: Some(bytes),
            ..Fill::plain(
                Strategy::LuaSwc,
                limit,
                clients_for(p.checks_budget, limit, p),
            )
        }));
    }
    out
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        let p = self;
        if p.repeats == 0 || p.listpack_entries.is_empty() || p.strategies.is_empty() {
            return Err("repeats must be >= 1; listpack_entries and strategies non-empty".into());
        }
        if p.min_clients == 0 || p.min_clients > p.max_clients {
            return Err("need 1 <= min_clients <= max_clients".into());
        }
        if p.window_ms < 60_000 || p.connections == 0 || p.in_flight == 0 {
            return Err("window_ms must be >= 60000 (nothing may expire mid-fill); connections, in_flight >= 1".into());
        }
        let limits = (p.log_limits.iter())
            .chain(&p.other_limits)
            .chain(&p.shared_limits);
        if limits.copied().any(|l| l == 0) || p.member_limits.contains(&0) || p.swc_key_limit == 0 {
            return Err("limits must be >= 1".into());
        }
        // Shorter members would leave no room for the counter that keeps them unique.
        if p.member_lens.iter().any(|&b| b < 8) {
            return Err("member_lens must be >= 8 bytes".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(
        profile: crate::context::Profile,
        sets: &[(&str, &str)],
    ) -> Result<Params, crate::experiments::params::ParamError> {
        let sets: Vec<(String, String)> = sets
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        crate::experiments::frame::resolve::<Memory>(profile, &sets)
    }

    #[test]
    fn both_profiles_are_valid_and_start_at_the_server_default() {
        for prof in [
            crate::context::Profile::Quick,
            crate::context::Profile::Full,
        ] {
            let p = profile(prof, &[]).unwrap();
            assert_eq!(p.listpack_entries[0], ListpackSetting::ServerDefault);
            p.validate().unwrap();
        }
        let err = profile(
            crate::context::Profile::Quick,
            &[("listpack_entries", r#"["dflt"]"#)],
        )
        .unwrap_err();
        assert!(
            matches!(err, crate::experiments::params::ParamError::BadValue { .. }),
            "{err}"
        );
    }

    #[test]
    fn the_quick_profile_has_every_point_the_claims_judge() {
        let p = profile(crate::context::Profile::Quick, &[]).unwrap();
        let log_limits = |t: u64, first: bool| -> Vec<u64> {
            (plan(&p, t, first).iter())
                .filter(|f| f.strategy == Strategy::LuaLog)
                .map(|f| f.limit)
                .collect()
        };
        let default = log_limits(128, true);
        for l in [32, 64, 128, 129, 512, 1000, 10_000, 100_000] {
            assert!(
                default.contains(&l),
                "{l} missing at the default: {default:?}"
            );
        }
        assert!(p.listpack_entries.contains(&ListpackSetting::Entries(512)));
        let at_512 = log_limits(512, false);
        assert!(at_512.contains(&512) && at_512.contains(&513), "{at_512:?}");
        assert!(p.other_limits.contains(&1000) && p.strategies.contains(&Strategy::LuaSwc));
        // The variations the claims judge: members of 8, 24 and 40 bytes at 128 and 129, the
        // counter's keys of 64 and 160 bytes at 1000.
        assert!([8, 24, 40].iter().all(|b| p.member_lens.contains(b)));
        assert!([128, 129].iter().all(|l| p.member_limits.contains(l)));
        assert!([64, 160].iter().all(|b| p.swc_key_lens.contains(b)) && p.swc_key_limit == 1000);
    }

    #[test]
    fn plan_sweeps_every_limit_around_the_threshold_and_the_rest_once() {
        let p = profile(crate::context::Profile::Full, &[]).unwrap();
        let first = plan(&p, 128, true);
        let log: Vec<u64> = (first.iter())
            .filter(|f| f.strategy == Strategy::LuaLog && f.member_bytes.is_none())
            .map(|f| f.limit)
            .collect();
        assert!((120..=140).all(|l| log.contains(&l)), "{log:?}");
        assert!(log.contains(&1000) && log.contains(&20000));
        assert!(log.windows(2).all(|w| w[0] < w[1]), "sorted, no duplicates");
        let swc: Vec<&Fill> = first
            .iter()
            .filter(|f| f.strategy == Strategy::LuaSwc && f.key_bytes.is_none())
            .collect();
        assert_eq!(swc.iter().map(|f| f.limit).collect::<Vec<_>>(), [100, 1000]);
        // Fewer clients for bigger limits, within the bounds.
        let clients = |l: u64| {
            first
                .iter()
                .find(|f| f.limit == l && f.strategy == Strategy::LuaLog)
                .unwrap()
                .clients
        };
        assert_eq!(clients(1), p.max_clients);
        assert!(clients(1000) < clients(100));
        assert_eq!(clients(100_000), p.min_clients);
        // Listpacks below the default threshold at more than one size, and the seed's 100,000.
        assert!(
            [32, 64, 128, 100_000].iter().all(|l| log.contains(l)),
            "{log:?}"
        );
        // The member-length sweep: every length at every limit, at the first setting only.
        let swept = |b: u32| -> Vec<u64> {
            (first.iter())
                .filter(|f| f.member_bytes == Some(b))
                .map(|f| f.limit)
                .collect()
        };
        assert!(
            p.member_lens.iter().all(|&b| swept(b) == p.member_limits),
            "{first:?}"
        );
        let keyed = first.iter().filter(|f| f.key_bytes.is_some()).count();
        assert_eq!(keyed, p.swc_key_lens.len());
        // Later settings: only the log's fine sweep around their own threshold.
        let later = plan(&p, 64, false);
        assert!(later
            .iter()
            .all(|f| f.strategy == Strategy::LuaLog && f.member_bytes.is_none()));
        let limits: Vec<u64> = later.iter().map(|f| f.limit).collect();
        assert!((56..=76).all(|l| limits.contains(&l)), "{limits:?}");
        assert!(
            p.shared_limits.iter().all(|l| limits.contains(l)),
            "{limits:?}"
        );
    }
}
