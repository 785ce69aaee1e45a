//! # failover
//! Hypothesis (seed 003, "Failover" and its FAQ): promoting a replica under steady load costs
//! about one burst per active key of overshoot, because unreplicated state is lost and those keys
//! restart as idle; overshoot that grows with traffic rather than with keys means keys are being
//! recreated empty.
//!
//! Method: per case a primary and a replica that replicates through the fault proxy (so the link
//! can be cut), both managed and fresh. K keys each offered `offered` x their limit's rate, evenly
//! spaced from a seeded phase (open loop), from a full bucket; settling windows let every key
//! drain to its limit at its own phase before anything is counted. At a planned phase of a
//! window the replica is promoted (REPLICAOF NO ONE) and every client moves to it at once
//! (connections opened beforehand: a client reconnect, recorded as such). Variants: replicated
//! (caught up with the primary's offset just before), lagging (the replication link blackholed
//! `lag_ms` before), wiped (FLUSHALL on the promoted replica before clients move).
//! Invocations: EVALSHA (falling back to EVAL: the promoted replica has no script cache) and FCALL
//! (the library is replicated). Every check is recorded; admitted per key over whole windows
//! before and after the switch are compared with what the limit allows there.
//!
//! Sentinel variants (issue 35, sentinel.rs): a primary, a replica and 3 Sentinels built per
//! trial through the session; `sentinel-planned` sends SENTINEL FAILOVER (seed 003's drill),
//! `sentinel-crash` SIGKILLs the primary (at each `down_after_ms`), `sentinel-racing` SIGKILLs it
//! and starts it again with its AOF as soon as the replica is promoted (seed 003's auto-recovery
//! racing the drill). The harness moves no client: each finds the primary
//! through the Sentinels and asks again after a failed check (finder.rs), and the count after the
//! switch runs through the last client's move. A limiter process (`--limiter`) runs a
//! sentinel-crash trial of its own: its library's Sentinel client finds the promoted replica.
//! Which server decided a library's check is not seen; after a crash, a decision after the
//! promotion can only be the promoted replica's.
//!
//! Writes `failover/failover.csv` (one row per key per trial), `failover/bins.csv` (one row per
//! bin per trial, keys summed), `failover/trials.csv` (one row per trial), `failover/clients.csv`
//! (one row per client per Sentinel trial), `failover/meta.json`.

mod body;
mod charts;
pub mod finder;
mod report;
mod rows;
mod sentinel;
pub mod tally;
mod trial;

pub use rows::{BinRow, ClientRow, KeyRow, TrialRow, Variant, BINS, CLIENTS, KEYS, TRIALS};

use super::limiters::Verdicts;
use super::{Body, Definition, Render, Summarize, Validate};
use crate::limiter::{Invocation, Strategy};
use crate::record::Table;
use serde::{Deserialize, Serialize};
use trial::Case;

/// How a trial's limiter is called, as charts and REPORT.md name it: its script's invocation, or
/// `process` for a limiter process (failover takes no custom script), whose library calls Redis
/// its own way whatever the invocation column says.
fn how_called(strategy: Strategy, invocation: Invocation) -> &'static str {
    match strategy.is_custom() {
        true => "process",
        false => invocation.name(),
    }
}

/// Why the experiment refuses `--redis-url`.
const MUST_OWN: &str = "it starts a replica, cuts its link, promotes and flushes it";

/// The failover experiment.
pub struct Failover;

impl Definition for Failover {
    const ID: &'static str = "failover";
    const TOML: &'static str = include_str!("../../../experiments/failover.toml");
    const MUST_OWN_SERVER: Option<&'static str> = Some(MUST_OWN);
    const NO_MANAGED_TLS: Option<&'static str> = Some("its replica is started without TLS");
    const TOPOLOGY: crate::server::Topology = crate::server::Topology::None;
    type Params = Params;
    /// Limiter processes run sentinel-crash trials, following the promotion with their library's
    /// own Sentinel client.
    const TAKES_PROCESSES: bool = true;
    const VERDICTS: Verdicts = report::verdicts;
    const LIMITER_CLAIMS: super::limiters::Claims = report::limiter_claims;

    const BODY: Body<Params> = body::run;
    const CHARTS: Render = charts::render;
    const SUMMARY: Summarize = report::summary;

    fn tables() -> Vec<Table> {
        vec![KEYS.table(), BINS.table(), TRIALS.table(), CLIENTS.table()]
    }
}

/// Parameters; defaults in `experiments/failover.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Repetitions of every case.
    pub trials: u32,
    /// What the promoted replica holds: `replicated` (caught up), `lagging` (its link cut
    /// `lag_ms` before), `wiped` (FLUSHALL before clients move); or Sentinel fails over and the
    /// clients find it themselves: `sentinel-planned` (SENTINEL FAILOVER), `sentinel-crash`
    /// (the primary SIGKILLed), `sentinel-racing` (SIGKILLed, then restarted with its data once
    /// the replica is promoted; the first Sentinel strategy and invocation only).
    pub variants: Vec<Variant>,
    /// The limiters whose state is lost or kept across the switch.
    pub strategies: Vec<Strategy>,
    /// How the script is called: EVALSHA falling back to EVAL, or FCALL (the library replicates).
    pub invocations: Vec<Invocation>,
    /// Active keys, each offered `offered` times its limit's rate.
    pub keys: Vec<u64>,
    /// The key counts FCALL runs at (the other invocations run at every count of `keys`).
    pub fcall_keys: Vec<u64>,
    /// Each key's offered rate as a multiple of its limit's rate (open loop, evenly spaced).
    pub offered: Vec<f64>,
    /// Each key's limit: this many per `window_ms` (the bucket's capacity).
    pub burst: u64,
    /// The limit's window.
    pub window_ms: u64,
    /// Whole windows before the switch over which admissions are compared with the limit.
    pub pre_windows: u64,
    /// Whole windows after the switch over which admissions are compared with the limit.
    pub post_windows: u64,
    /// Where in a window the replica is promoted, as a fraction of it.
    pub switch_phase: f64,
    /// `lagging`: how long before the switch the replication link is cut.
    pub lag_ms: u64,
    /// Width of the time bins of bins.csv (admitted and allowed per bin, keys summed).
    pub bin_ms: u64,
    /// The Sentinel variants' limiters (a Sentinel trial takes seconds more than the others:
    /// its Sentinels start and agree, then fail over, and its clients must find the new primary).
    pub sentinel_strategies: Vec<Strategy>,
    /// The Sentinel variants' active key counts (FCALL runs at these too).
    pub sentinel_keys: Vec<u64>,
    /// The Sentinel variants' offered multiples of the limit's rate.
    pub sentinel_offered: Vec<f64>,
    /// The Sentinels' `down-after-milliseconds`: how long the primary must be unreachable
    /// before it is called down (sentinel-crash waits for it). sentinel-planned runs at the
    /// first; sentinel-crash at every one, the later ones with the first Sentinel strategy and
    /// the first invocation only (the sweep asks how the window grows, not how each limiter
    /// fares: a crash trial is seconds long).
    pub down_after_ms: Vec<u64>,
    /// The Sentinels' `failover-timeout`.
    pub failover_timeout_ms: u64,
    /// Sentinels (of 3) that must agree the primary is down.
    pub quorum: usize,
}

impl Params {
    /// Every case in run order; FCALL only where the library has the strategy's function.
    fn cases(&self) -> Vec<Case> {
        let mut out = Vec::new();
        for trial in 0..self.trials {
            for &variant in &self.variants {
                for (swept, &down_after_ms) in self.down_afters(variant).iter().enumerate() {
                    let mut limiters = self.limiters(variant);
                    // The sweep's later values and racing: the first limiter only (each trial is
                    // seconds of Sentinel's own timers; they ask how the failover goes, not how each
                    // limiter fares).
                    if swept > 0 || variant == Variant::SentinelRacing {
                        limiters.truncate(1);
                    }
                    for (strategy, invocation) in limiters {
                        let (counts, offers) = self.loads(variant, invocation);
                        for (&keys, &offered) in counts
                            .iter()
                            .flat_map(|k| offers.iter().map(move |o| (k, o)))
                        {
                            out.push(Case {
                                variant,
                                strategy,
                                invocation,
                                keys,
                                offered,
                                trial,
                                down_after_ms,
                            });
                        }
                    }
                }
            }
        }
        out
    }

    /// Every case, then a sentinel-crash case per trial for each limiter process in `processes`,
    /// at the first down-after, Sentinel key count and offer. A crash is the failover where every
    /// check decided after the kill was decided by the promoted replica (the old primary is gone),
    /// so a library's decisions need no server named; after a planned one the old primary takes
    /// writes until it is demoted, and which server a library asked cannot be seen from outside.
    fn cases_with(&self, processes: &[Strategy]) -> Result<Vec<Case>, String> {
        let mut out = self.cases();
        if processes.is_empty() {
            return Ok(out);
        }
        let firsts = (self.sentinel_keys.first()).zip(self.sentinel_offered.first());
        let (Some((&keys, &offered)), Some(&down_after_ms)) = (firsts, self.down_after_ms.first())
        else {
            return Err(
                "limiter processes run sentinel-crash trials at the first of sentinel_keys and \
                        sentinel_offered: list one of each"
                    .into(),
            );
        };
        for trial in 0..self.trials {
            out.extend(processes.iter().map(|&strategy| Case {
                variant: Variant::SentinelCrash,
                strategy,
                invocation: Invocation::default(),
                keys,
                offered,
                trial,
                down_after_ms,
            }));
        }
        Ok(out)
    }

    /// The Sentinels' down-after values `variant` runs at (0: no Sentinel).
    fn down_afters(&self, variant: Variant) -> &[u64] {
        match variant {
            Variant::SentinelCrash => &self.down_after_ms,
            Variant::SentinelPlanned | Variant::SentinelRacing => {
                &self.down_after_ms[..self.down_after_ms.len().min(1)]
            }
            _ => &[0],
        }
    }

    /// The strategy and invocation pairs `variant` runs, in order.
    fn limiters(&self, variant: Variant) -> Vec<(Strategy, Invocation)> {
        let strategies = match variant.is_sentinel() {
            true => &self.sentinel_strategies,
            false => &self.strategies,
        };
        (strategies.iter())
            .flat_map(|&s| self.invocations.iter().map(move |&i| (s, i)))
            .filter(|&(s, i)| !i.uses_function() || s == Strategy::LuaBucket)
            .collect()
    }

    /// The key counts and offered rates `variant` runs at by `invocation`.
    fn loads(&self, variant: Variant, invocation: Invocation) -> (&[u64], &[f64]) {
        match (variant.is_sentinel(), invocation.uses_function()) {
            (true, _) => (&self.sentinel_keys, &self.sentinel_offered),
            (false, true) => (&self.fcall_keys, &self.offered),
            (false, false) => (&self.keys, &self.offered),
        }
    }
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        let p = self;
        let scripted = [Strategy::LuaBucket, Strategy::LuaWindow];
        let bad = [
            (
                p.trials == 0 || p.variants.is_empty() || p.invocations.is_empty(),
                "trials must be >= 1; variants and invocations non-empty",
            ),
            (
                p.strategies.is_empty() || p.strategies.iter().any(|s| !scripted.contains(s)),
                "strategies must list lua-bucket and/or lua-window",
            ),
            (
                p.keys.is_empty() || p.keys.contains(&0) || p.fcall_keys.contains(&0),
                "keys must list counts >= 1 (fcall_keys too)",
            ),
            (
                p.fcall_keys.is_empty() && p.invocations.iter().any(|i| i.uses_function()),
                "fcall_keys must list a count when invocations has fcall",
            ),
            (
                p.offered.is_empty() || p.offered.iter().any(|o| !(*o > 1.0 && o.is_finite())),
                "offered must list multiples > 1 of the limit (every key at its limit)",
            ),
            (
                p.burst == 0 || p.window_ms < 10,
                "burst must be >= 1 and window_ms >= 10",
            ),
            (
                p.pre_windows == 0 || p.post_windows == 0,
                "pre_windows and post_windows must be >= 1",
            ),
            (
                !(0.05..=0.9).contains(&p.switch_phase),
                "switch_phase must be within [0.05, 0.9] of a window",
            ),
            (
                p.lag_ms as f64
                    >= p.switch_phase * p.window_ms as f64 + (p.pre_windows * p.window_ms) as f64,
                "lag_ms must end after the first counted window starts",
            ),
            (p.bin_ms == 0, "bin_ms must be >= 1"),
            (
                (p.sentinel_strategies.iter()).any(|s| !scripted.contains(s))
                    || p.sentinel_keys.contains(&0)
                    || p.sentinel_offered.iter().any(|o| !(*o > 1.0 && o.is_finite())),
                "sentinel_strategies must be lua-bucket and/or lua-window, sentinel_keys >= 1, \
                 sentinel_offered > 1",
            ),
            (
                p.variants.iter().any(|v| v.is_sentinel())
                    && (p.sentinel_strategies.is_empty()
                        || p.sentinel_keys.is_empty()
                        || p.sentinel_offered.is_empty()),
                "the Sentinel variants need sentinel_strategies, sentinel_keys and sentinel_offered",
            ),
            (
                p.down_after_ms.is_empty()
                    || p.down_after_ms.iter().any(|&d| d < 100)
                    || p.failover_timeout_ms < 1000
                    || !(1..=3).contains(&p.quorum),
                "down_after_ms must list values >= 100, failover_timeout_ms be >= 1000, quorum 1..=3 \
                 (of 3 Sentinels)",
            ),
        ];
        match bad.iter().find(|(is_bad, _)| *is_bad) {
            Some((_, reason)) => Err((*reason).to_string()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Profile;
    use crate::experiments::frame::resolve;
    use std::collections::BTreeSet;

    #[test]
    fn both_profiles_are_valid_and_fcall_runs_only_the_bucket() {
        for profile in [Profile::Quick, Profile::Full] {
            let p = resolve::<Failover>(profile, &[]).unwrap();
            p.validate().unwrap();
            let cases = p.cases();
            assert!(!cases.is_empty());
            assert!(cases
                .iter()
                .all(|c| !c.invocation.uses_function() || c.strategy == Strategy::LuaBucket));
        }
        let full = resolve::<Failover>(Profile::Full, &[]).unwrap();
        assert_eq!(full.keys, [10, 100, 1000]);
        let counts = |fcall: bool, sentinel: bool| -> BTreeSet<u64> {
            let cases = full.cases().into_iter();
            cases
                .filter(|c| c.invocation.uses_function() == fcall)
                .filter(|c| c.variant.is_sentinel() == sentinel)
                .map(|c| c.keys)
                .collect()
        };
        assert_eq!(counts(false, false), full.keys.iter().copied().collect());
        assert_eq!(
            counts(true, false),
            full.fcall_keys.iter().copied().collect()
        );
        let sentinel_keys: BTreeSet<u64> = full.sentinel_keys.iter().copied().collect();
        assert_eq!(counts(false, true), sentinel_keys);
        assert_eq!(counts(true, true), sentinel_keys);
    }

    #[test]
    fn an_offer_at_or_under_the_limit_is_refused() {
        let sets = [("offered".to_string(), "[1.0]".to_string())];
        let p = resolve::<Failover>(Profile::Quick, &sets).unwrap();
        assert!(p.validate().unwrap_err().contains("offered"));
    }
}
