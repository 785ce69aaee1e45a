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

mod fill;
mod setting;

use super::common::{delete_keys_with_prefix, progress_bar, ExperimentError, Phase, RunRecord};
use super::params;
use crate::context::Ctx;
use crate::limiter::{unix_ms, Strategy};
use crate::server::Target;
use fill::{fill, Fill, FillSetup};
use serde::{Deserialize, Serialize};
pub use setting::ListpackSetting;
use setting::{apply_setting, LISTPACK_CONFIG};
use std::path::PathBuf;

const ID: &str = "memory";

/// Parameters; defaults in `experiments/memory.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub repeats: u32,
    pub listpack_entries: Vec<ListpackSetting>,
    pub strategies: Vec<Strategy>,
    pub log_limits: Vec<u64>,
    pub fine_below: u64,
    pub fine_above: u64,
    pub shared_limits: Vec<u64>,
    pub other_limits: Vec<u64>,
    pub checks_budget: u64,
    pub fine_checks_budget: u64,
    pub min_clients: u64,
    pub max_clients: u64,
    pub window_ms: u64,
    pub connections: usize,
    pub in_flight: usize,
}

/// One fill: `clients` clients of one strategy, each at its limit.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MemoryRow {
    pub strategy: Strategy,
    pub limit: u64,
    pub clients: u64,
    /// zset-max-listpack-entries in effect (read back from the server).
    pub listpack_entries: u64,
    /// `default` (the server's own) or `set` (CONFIG SET by this run).
    pub listpack_setting: String,
    /// limit - listpack_entries: 0 is the biggest listpack log, 1 the first skiplist.
    pub over_threshold: i64,
    pub repeat: u32,
    /// Growth of used_memory divided by clients.
    pub bytes_per_client: f64,
    /// bytes_per_client / limit: what each admitted request in the window costs.
    pub bytes_per_entry: f64,
    /// bytes_per_client x 10,000, in MB (10^6 bytes): the seed's "10,000 busy clients".
    pub mb_per_10k_clients: f64,
    pub used_memory_before: u64,
    pub used_memory_after: u64,
    /// Keys in the database after the fill (one per client).
    pub keys: u64,
    /// MEMORY USAGE <client 0's state key> SAMPLES 0.
    pub sample_key_bytes: u64,
    /// OBJECT ENCODING of that key.
    pub encoding: String,
    /// 1 when that key is a listpack (for judging where the cliff is).
    pub listpack: u8,
    /// Mean length of the log's members in bytes (0 for strategies without a log).
    pub member_len: f64,
    /// What client 0's key holds (log entries, tokens, count).
    pub sample_state: String,
    pub decisions: u64,
    pub denied: u64,
    /// Redis main-thread CPU per decision during the fill.
    pub cpu_us_per_decision: f64,
    pub decisions_per_s: f64,
    pub fill_s: f64,
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
        out.extend(limits.into_iter().map(|(limit, budget)| Fill {
            strategy,
            limit,
            clients: clients_for(budget, limit, p),
        }));
    }
    out
}

fn validate(p: &Params) -> Result<(), params::ParamError> {
    let bad = |reason: &str| {
        Err(params::ParamError::Invalid {
            experiment: ID.into(),
            reason: reason.into(),
        })
    };
    if p.repeats == 0 || p.listpack_entries.is_empty() || p.strategies.is_empty() {
        return bad("repeats must be >= 1; listpack_entries and strategies non-empty");
    }
    if p.min_clients == 0 || p.min_clients > p.max_clients {
        return bad("need 1 <= min_clients <= max_clients");
    }
    if p.window_ms < 60_000 || p.connections == 0 || p.in_flight == 0 {
        return bad(
            "window_ms must be >= 60000 (nothing may expire mid-fill); connections, in_flight >= 1",
        );
    }
    let limits = (p.log_limits.iter())
        .chain(&p.other_limits)
        .chain(&p.shared_limits);
    if limits.copied().any(|l| l == 0) {
        return bad("limits must be >= 1");
    }
    Ok(())
}

/// Runs the experiment into `ctx.out_dir/memory/`.
pub fn run(ctx: &Ctx) -> Result<PathBuf, ExperimentError> {
    let (p, table): (Params, _) = params::resolve(
        ID,
        super::Experiment::Memory.params_toml(),
        ctx.profile,
        &ctx.sets,
    )?;
    validate(&p)?;
    let mut first = ctx.target().phase(|| "starting redis-server".into())?;
    first
        .managed("it sets zset-max-listpack-entries and flushes the server between fills")
        .phase(|| "checking the server".into())?;
    let mut run = RunRecord::begin(ctx, ID, &table, &first)?;
    run.note("bytes_per_client = (used_memory after - before) / clients: each fill starts from FLUSHALL SYNC with the script loaded and only the harness connected, and is read after the filling worker has disconnected, so it counts keys, values, expiries and Redis's bookkeeping (keyspace and expiry dicts) and no client buffers.");
    run.note("Fills: one worker process, exactly `limit` EVALSHA (or INCR) checks per client over `clients` keys in turn, through the limiter itself; every check must be admitted (else the run fails), so every key ends at its limit as the strategy leaves it. Warm-up excluded: on each fresh server the first fill of each strategy runs once unrecorded (the first fill of a strategy also pays one-off allocations of tens of KB that FLUSHALL does not give back). cpu_us_per_decision is Redis main-thread CPU over the fill, whose logs grow from 0 to `limit` entries.");
    run.note(format!("Window {} ms for every strategy (buckets refill limit per window), windows starting at the fill: nothing slides out or expires while a fill runs.", p.window_ms));
    // Each setting's keys are deleted as it ends; an error leaves them on a server about to die.
    body(ctx, &p, &mut run, &mut Some(first))?;
    run.finish(ctx)
}

fn body(
    ctx: &Ctx,
    p: &Params,
    run: &mut RunRecord,
    reuse: &mut Option<Target>,
) -> Result<(), ExperimentError> {
    let mut rows = run
        .staging
        .csv::<MemoryRow>("memory.csv")
        .phase(|| "opening memory.csv".into())?;
    let bar = progress_bar(ctx, ID, p.listpack_entries.len() as u64);
    for (i, &setting) in p.listpack_entries.iter().enumerate() {
        let what = || format!("listpack_entries {}", setting.label());
        // A fresh server per setting: a skiplist stays one until a reload, and a clean baseline.
        let target = match reuse.take() {
            Some(t) => t,
            None => ctx.target().phase(what)?,
        };
        let (threshold, label, value_limit) = apply_setting(&target, setting).phase(what)?;
        run.note(format!("Setting {i} ({label}): {LISTPACK_CONFIG} = {threshold}, zset-max-listpack-value = {value_limit}, on a fresh server."));
        let prefix = format!("ratelab:memory:{:x}:", unix_ms());
        let setup = FillSetup {
            ctx,
            target: &target,
            window_ms: p.window_ms,
            connections: p.connections,
            in_flight: p.in_flight,
            prefix: &prefix,
            threshold,
        };
        let fills = plan(p, threshold, i == 0);
        // Excluded warm-up: the first fill of each strategy on a server also pays one-off
        // allocations (measured: tens of KB that FLUSHALL does not give back).
        for strategy in &p.strategies {
            if let Some(f) = fills.iter().find(|f| f.strategy == *strategy) {
                fill(&setup, f)?;
            }
        }
        for repeat in 0..p.repeats {
            for f in &fills {
                let m = fill(&setup, f)?;
                let row = m.row(f, threshold, label, repeat);
                rows.write(&row).phase(|| "writing memory.csv".into())?;
            }
        }
        delete_keys_with_prefix(&target, &prefix).phase(|| "deleting this run's keys".into())?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(())
}

impl super::Validate for Params {
    fn validate(&self) -> Result<(), String> {
        match validate(self) {
            Err(params::ParamError::Invalid { reason, .. }) => Err(reason),
            Err(other) => Err(other.to_string()),
            Ok(()) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(
        profile: params::Profile,
        sets: &[(&str, &str)],
    ) -> Result<Params, params::ParamError> {
        let sets: Vec<(String, String)> = sets
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        let toml = super::super::Experiment::Memory.params_toml();
        params::resolve(ID, toml, profile, &sets).map(|(p, _)| p)
    }

    #[test]
    fn both_profiles_are_valid_and_start_at_the_server_default() {
        for prof in [params::Profile::Quick, params::Profile::Full] {
            let p = profile(prof, &[]).unwrap();
            assert_eq!(p.listpack_entries[0], ListpackSetting::ServerDefault);
            validate(&p).unwrap();
        }
        let err = profile(
            params::Profile::Quick,
            &[("listpack_entries", r#"["dflt"]"#)],
        )
        .unwrap_err();
        assert!(matches!(err, params::ParamError::BadValue { .. }), "{err}");
    }

    #[test]
    fn plan_sweeps_every_limit_around_the_threshold_and_the_rest_once() {
        let p = profile(params::Profile::Full, &[]).unwrap();
        let first = plan(&p, 128, true);
        let log: Vec<u64> = (first.iter())
            .filter(|f| f.strategy == Strategy::LuaLog)
            .map(|f| f.limit)
            .collect();
        assert!((120..=140).all(|l| log.contains(&l)), "{log:?}");
        assert!(log.contains(&1000) && log.contains(&20000));
        assert!(log.windows(2).all(|w| w[0] < w[1]), "sorted, no duplicates");
        let swc: Vec<&Fill> = first
            .iter()
            .filter(|f| f.strategy == Strategy::LuaSwc)
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
        assert_eq!(clients(20000), p.min_clients);
        // Later settings: only the log's fine sweep around their own threshold.
        let later = plan(&p, 64, false);
        assert!(later.iter().all(|f| f.strategy == Strategy::LuaLog));
        let limits: Vec<u64> = later.iter().map(|f| f.limit).collect();
        assert!((56..=76).all(|l| limits.contains(&l)), "{limits:?}");
        assert!(
            p.shared_limits.iter().all(|l| limits.contains(l)),
            "{limits:?}"
        );
    }
}
