//! # cost
//! Hypothesis (seed 002): Redis runs commands on one thread, so the CPU that thread spends per
//! decision sets how many decisions one Redis can make. A Lua decision costs 2.5-3.5x a GET; a
//! MULTI fixed window beats the same logic in Lua; the sliding log's limit barely changes its CPU
//! (L=100 vs L=10,000 within run-to-run noise); a hot key is cheaper per decision because nearly
//! every call is a refusal.
//!
//! Method: 16 clients (connections of one single-threaded worker process on the lean raw-RESP
//! client wherever it serves the strategy, pinned away from Redis) send decisions flat out over
//! 10,000 keys for `run_seconds`, `runs` times per variant, runs interleaved across variants. Each
//! measured run follows an excluded warm-up on the same keys.
//! Redis main-thread CPU (`INFO cpu` *_main_thread) and `INFO commandstats` are sampled right
//! before the workers start and right after the last one reports.
//!
//! The sliding log runs once per limit L over `log_entries / L` keys (L=100: 10,000 keys as the
//! seed's; L=10,000: 100, since 10,000 full logs of 10,000 entries would be 13.7 GB), every log
//! filled to L entries spread over the window before each warm-up. 5 s of traffic would leave ~25
//! entries per key, the same log whatever L; full logs make the runs differ only in the log's size.
//! The clients' share per key scales with L, so both limits admit the same fraction of decisions
//! (`log_entries` per `log_window_ms` in all) and deny the rest. The rows say how many entries the
//! logs held after each run.
//!
//! Who set each run's rate: Redis when its thread idled (waiting for requests) at most
//! `redis_bound_idle_pct` of the run, the client otherwise (`rate_set_by`); the claims judge only
//! Redis's runs, and the summary lists the others with their idle share.
//!
//! Writes `cost/cost.csv` (one row per run), `cost/meta.json`.

mod body;
mod charts;
mod logs;
mod report;
mod rows;

pub use rows::{CostRow, COST};

use super::limiters::Verdicts;
use super::{Body, Definition, Render, Summarize, Validate};
use crate::limiter::{LimitSpec, Strategy};
use crate::record::Table;
use serde::{Deserialize, Serialize};

/// The cost experiment.
pub struct Cost;

impl Definition for Cost {
    const ID: &'static str = "cost";
    const TOML: &'static str = include_str!("../../../experiments/cost.toml");
    type Params = Params;
    const TAKES_LIMITERS: bool = true;
    const VERDICTS: Verdicts = report::verdicts;

    const BODY: Body<Params> = body::run;
    const CHARTS: Render = charts::render;
    const SUMMARY: Summarize = report::summary;

    fn tables() -> Vec<Table> {
        vec![COST.table()]
    }
}

/// Parameters; defaults in `experiments/cost.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Runs of every strategy, interleaved.
    pub runs: u32,
    /// Measured seconds per run, one request at a time per client (the seed's).
    pub run_seconds: f64,
    /// Unmeasured seconds before each run: keys created, script cached.
    pub warmup_seconds: f64,
    /// Connections of the run's worker.
    pub clients: usize,
    /// Keys the checks are spread over, as normal traffic.
    pub keys: u64,
    /// The limiters whose Redis CPU per decision is measured, beside `get`.
    pub strategies: Vec<Strategy>,
    /// lua-log runs once per limit L, over `log_entries` / L keys filled to L entries.
    pub log_limits: Vec<u64>,
    /// lua-log: entries over all its keys (L per key).
    pub log_entries: u64,
    /// These run once more against one key (the abusive client), labelled hot-key.
    pub hot_key_strategies: Vec<Strategy>,
    /// Limit of every strategy but lua-log, per `window_ms` (buckets refill it per second).
    pub capacity: u64,
    /// Buckets' refill rate, tokens per second.
    pub refill_per_sec: f64,
    /// Window length of the window strategies.
    pub window_ms: u64,
    /// lua-log's window: its logs stay full, so most of its decisions are denials.
    pub log_window_ms: u64,
    /// Requests in flight per connection; beyond 1 (the seed's), `depth_strategies` run again
    /// at each on the lean pipelined client, labelled `depth=<d>`.
    pub depths: Vec<usize>,
    /// The strategies run again at each depth beyond 1, on the lean pipelined client.
    pub depth_strategies: Vec<Strategy>,
    /// Seconds per run of those variants (ratelab's, not the seed's `run_seconds`).
    pub depth_run_seconds: f64,
    /// A run's rate was Redis's (`rate_set_by = redis`) when Redis idled at most this share of
    /// the wall time waiting for requests; the claims judge only those runs.
    pub redis_bound_idle_pct: f64,
}

/// A strategy as measured here: which keys, which limit, what to call it.
#[derive(Debug, Clone)]
struct Variant {
    strategy: Strategy,
    label: String,
    limit: LimitSpec,
    keys: Keys,
    /// Requests in flight per connection (1: one at a time, as the seed's clients).
    depth: usize,
}

/// The keys a variant's clients spread their decisions over.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Keys {
    /// `p.keys` keys, as normal traffic.
    Uniform(u64),
    /// This many sliding logs, each filled to its limit before every run.
    FullLogs(u64),
    /// One key: the abusive client.
    Hot,
}

impl Keys {
    fn count(self) -> u64 {
        match self {
            Keys::Uniform(n) | Keys::FullLogs(n) => n,
            Keys::Hot => 1,
        }
    }
}

/// The variants of the built-in strategies, then one per custom limiter over the same uniform
/// keys and base limit; a custom limiter whose reference has no such variant (lua-log runs only
/// on full logs) brings one of its reference, labelled `reference`, to be compared with.
fn variants(p: &Params, customs: &[Strategy]) -> Vec<Variant> {
    let mut out = builtin_variants(p);
    let base = out.iter().find(|v| v.label.is_empty()).map(|v| v.limit);
    let base = base.unwrap_or(LimitSpec {
        capacity: p.capacity,
        refill_per_sec: p.refill_per_sec,
        window_ms: p.window_ms,
        ..LimitSpec::default()
    });
    let uniform = |strategy, label: &str| Variant {
        strategy,
        label: label.into(),
        limit: base,
        keys: Keys::Uniform(p.keys),
        // One request at a time per connection, as the seed's decisions were made.
        depth: 1,
    };
    for &custom in customs {
        let reference = custom.reference();
        let compared = |v: &Variant| v.strategy == reference && v.keys == Keys::Uniform(p.keys);
        if reference != custom && !out.iter().any(compared) {
            out.push(uniform(reference, "reference"));
        }
        out.push(uniform(custom, ""));
    }
    out
}

fn builtin_variants(p: &Params) -> Vec<Variant> {
    let base = LimitSpec {
        capacity: p.capacity,
        refill_per_sec: p.refill_per_sec,
        window_ms: p.window_ms,
        ..LimitSpec::default()
    };
    let mut out = Vec::new();
    for &strategy in &p.strategies {
        if strategy == Strategy::LuaLog {
            for &l in &p.log_limits {
                let limit = LimitSpec {
                    capacity: l,
                    window_ms: p.log_window_ms,
                    ..base
                };
                out.push(Variant {
                    strategy,
                    label: format!("L={l}"),
                    limit,
                    keys: Keys::FullLogs(p.log_entries / l),
                    depth: 1,
                });
            }
        } else {
            out.push(Variant {
                strategy,
                label: String::new(),
                limit: base,
                keys: Keys::Uniform(p.keys),
                depth: 1,
            });
        }
    }
    for &strategy in &p.hot_key_strategies {
        out.push(Variant {
            strategy,
            label: "hot-key".into(),
            limit: base,
            keys: Keys::Hot,
            depth: 1,
        });
    }
    for &depth in p.depths.iter().filter(|&&d| d > 1) {
        for &strategy in &p.depth_strategies {
            out.push(Variant {
                strategy,
                label: format!("depth={depth}"),
                limit: base,
                keys: Keys::Uniform(p.keys),
                depth,
            });
        }
    }
    out
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        let positive = [self.run_seconds, self.depth_run_seconds];
        if self.runs == 0
            || positive.iter().any(|&s| s <= 0.0)
            || self.clients == 0
            || self.keys == 0
        {
            return Err("runs, run_seconds, depth_run_seconds, clients, keys must be > 0".into());
        }
        if let Some(l) = (self.log_limits.iter()).find(|&&l| l == 0 || l > self.log_entries) {
            return Err(format!(
                "every log limit must be >= 1 and <= log_entries ({}): {l} is not",
                self.log_entries
            ));
        }
        if self.depths.contains(&0) {
            return Err("every depth must be >= 1".into());
        }
        if let Some(s) = self.depth_strategies.iter().find(|s| {
            (crate::limiter::Limiter::new(**s, LimitSpec::default()).pipelined_replies()).is_none()
        }) {
            return Err(format!(
                "depth_strategies: {s} reads a reply before its next command, so it cannot be pipelined"
            ));
        }
        if !(0.0..=100.0).contains(&self.redis_bound_idle_pct) {
            return Err("redis_bound_idle_pct must be within 0-100".into());
        }
        if self.log_window_ms == 0 {
            return Err("log_window_ms must be > 0".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_expand_the_log_limits_and_hot_keys() {
        let p =
            crate::experiments::frame::resolve::<Cost>(crate::context::Profile::Full, &[]).unwrap();
        let v = variants(&p, &[]);
        let labels: Vec<String> = v
            .iter()
            .map(|v| format!("{}{}", v.strategy, v.label))
            .collect();
        assert!(labels.contains(&"lua-logL=100".to_string()));
        assert!(labels.contains(&"lua-logL=10000".to_string()));
        assert!(labels.contains(&"lua-buckethot-key".to_string()));
        let deep = p.depths.iter().filter(|&&d| d > 1).count() * p.depth_strategies.len();
        assert_eq!(
            v.len(),
            p.strategies.len() + 1 + p.hot_key_strategies.len() + deep
        );
        assert!(v.iter().any(|v| v.depth == 16 && v.label == "depth=16"));
        let log = v.iter().find(|v| v.label == "L=10000").unwrap();
        assert_eq!(
            (log.limit.capacity, log.limit.window_ms),
            (10_000, p.log_window_ms)
        );
        // Both limits hold log_entries entries in all: L=100 over the seed's 10,000 keys.
        assert_eq!(log.keys, Keys::FullLogs(100));
        let small = v.iter().find(|v| v.label == "L=100").unwrap();
        assert_eq!(small.keys, Keys::FullLogs(10_000));
        let hot = v.iter().find(|v| v.label == "hot-key").unwrap();
        assert_eq!(hot.keys.count(), 1);
    }
}
