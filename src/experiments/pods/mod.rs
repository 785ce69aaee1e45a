//! # pods
//! Hypothesis (seed 001): pods that GET a fixed window's counter, decide in the client, then
//! MULTI INCR EXPIRE let through far more than the limit (180-290 per second on a limit of 100 at
//! 4 pods and 400 offered; ~100 with one pod), while their own "allowed" metric looks fine; a Lua
//! token bucket holds 99-101 per second at 4 and 12 pods; an in-memory per-pod limiter allows
//! limit x pods. Physics says more: every request whose GET runs within one round trip of the
//! 100th admitted one also reads a count below the limit, so the excess per window is about
//! offered rate x (GET-to-INCR time), whatever the number of pods. On loopback that time is a
//! fraction of a ms; the round trip is therefore a parameter, added by the fault proxy.
//!
//! Method: per run, a fresh tenant key; N pod processes (crate::load::pod: open-loop workers, one
//! event loop and one Redis connection each) share one seeded Poisson schedule for `duration_s`
//! and send every admitted request to a loopback TCP sink (crate::load::sink), which counts what
//! arrived per second on its own clock. Pods count their decisions per second beside it. Redis CPU
//! and commandstats are sampled around each run. A main grid on plain loopback (strategies x pods x
//! offered), then a round-trip sweep through the proxy's delay line.
//!
//! Writes `pods/pods.csv` (one row per run per second), `pods/runs.csv` (one row per run: totals,
//! the per-second statistics of the measured seconds, Redis's cost), `pods/meta.json`.

mod body;
mod charts;
mod report;
mod rows;
mod run;
mod strategy;

pub use rows::{PodsRunRow, PodsSecondRow, SecondPhase, RUNS, SECONDS};
pub use strategy::PodStrategy;

use super::limiters::Verdicts;
use super::{Body, Definition, Render, Summarize, Validate};
use crate::limiter::Strategy;
use crate::record::Table;
use serde::{Deserialize, Serialize};

/// The pods experiment.
pub struct Pods;

impl Definition for Pods {
    const ID: &'static str = "pods";
    const TOML: &'static str = include_str!("../../../experiments/pods.toml");
    type Params = Params;

    /// A custom limiter decides in every pod like a built-in one, in the main grid and the
    /// round-trip sweep; a limiter process runs in each pod, its client through the proxy.
    const TAKES_LIMITERS: bool = true;
    const TAKES_PROCESSES: bool = true;
    const VERDICTS: Verdicts = report::verdicts;

    const BODY: Body<Params> = body::run;
    const CHARTS: Render = charts::render;
    const SUMMARY: Summarize = report::summary;

    fn tables() -> Vec<Table> {
        vec![SECONDS.table(), RUNS.table()]
    }
}

/// Parameters; defaults in `experiments/pods.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Repetitions of every configuration.
    pub trials: u32,
    /// The tenant's limit, requests per second.
    pub limit: u64,
    /// Seconds per run; the first `warmup_s` are not counted in the per-second statistics.
    pub duration_s: u32,
    /// Seconds at the start of each run left out of the per-second statistics.
    pub warmup_s: u32,
    /// The main grid's limiters, on Redis or in each pod's memory.
    pub strategies: Vec<PodStrategy>,
    /// The main grid's numbers of pods sharing the tenant's limit.
    pub pods: Vec<u32>,
    /// The main grid's offered rates, requests per second over all pods.
    pub offered_rps: Vec<f64>,
    /// The round-trip sweep's limiters (through the fault proxy).
    pub rtt_strategies: Vec<PodStrategy>,
    /// The round-trip sweep's numbers of pods.
    pub rtt_pods: Vec<u32>,
    /// The round-trip sweep's offered rates, requests per second over all pods.
    pub rtt_offered_rps: Vec<f64>,
    /// Round trip the fault proxy adds to every request to Redis.
    pub rtt_ms: Vec<f64>,
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        let p = self;
        let rates = |r: &[f64]| r.iter().all(|x| *x > 0.0 && x.is_finite());
        let ok = p.trials > 0
            && p.limit > 0
            && p.warmup_s < p.duration_s
            && p.pods
                .iter()
                .chain(&p.rtt_pods)
                .all(|n| (1..=64).contains(n))
            && rates(&p.offered_rps)
            && rates(&p.rtt_offered_rps)
            && p.rtt_ms.iter().all(|x| *x > 0.0 && *x <= 2_000.0);
        if !ok {
            return Err(
                "trials and limit must be > 0, warmup_s < duration_s, pods 1-64, offered \
                rates > 0 and round trips in (0, 2000] ms"
                    .into(),
            );
        }
        let runs = p.strategies.len() * p.pods.len() * p.offered_rps.len()
            + p.rtt_strategies.len() * p.rtt_pods.len() * p.rtt_offered_rps.len() * p.rtt_ms.len();
        match runs {
            0 => {
                Err("nothing to run: the main grid and the round-trip sweep are both empty".into())
            }
            _ => Ok(()),
        }
    }
}

/// One configuration of a run (the trial aside).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Config {
    pub strategy: PodStrategy,
    pub pods: u32,
    pub offered_rps: f64,
    /// Round trip added by the proxy, ms (0: plain loopback, no proxy).
    pub rtt_ms: f64,
}

impl Params {
    /// Every configuration: the main grid on loopback, then the round-trip sweep; the custom
    /// limiters `custom` (`--limiter`) in both, after the built-in ones.
    pub(crate) fn configs(&self, custom: &[Strategy]) -> Vec<Config> {
        let grid = |strategies: &[PodStrategy], pods: &[u32], rates: &[f64], rtts: &[f64]| {
            let mut out = Vec::new();
            for &rtt_ms in rtts {
                for &strategy in strategies {
                    for &n in pods {
                        for &offered_rps in rates {
                            out.push(Config {
                                strategy,
                                pods: n,
                                offered_rps,
                                rtt_ms,
                            });
                        }
                    }
                }
            }
            out
        };
        let with_custom = |builtin: &[PodStrategy]| -> Vec<PodStrategy> {
            let custom = custom.iter().map(|&s| PodStrategy::Redis(s));
            builtin.iter().copied().chain(custom).collect()
        };
        let mut all = grid(
            &with_custom(&self.strategies),
            &self.pods,
            &self.offered_rps,
            &[0.0],
        );
        all.extend(grid(
            &with_custom(&self.rtt_strategies),
            &self.rtt_pods,
            &self.rtt_offered_rps,
            &self.rtt_ms,
        ));
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Profile;

    #[test]
    fn embedded_profiles_parse_validate_and_leave_room_for_the_leak() {
        for profile in [Profile::Quick, Profile::Full] {
            let p = crate::experiments::frame::resolve::<Pods>(profile, &[]).unwrap();
            p.validate().unwrap();
            assert!(p.duration_s > p.warmup_s);
            // The seed's configuration is in every profile: the naive window at 4 pods, 400/s.
            let seed = p.configs(&[]).into_iter().any(|c| {
                c.strategy == PodStrategy::Redis(crate::limiter::Strategy::NaiveWindow)
                    && c.pods == 4
                    && c.offered_rps == 400.0
                    && c.rtt_ms == 0.0
            });
            assert!(seed, "{profile:?} lacks the seed's configuration");
        }
        let quick = crate::experiments::frame::resolve::<Pods>(Profile::Quick, &[]).unwrap();
        // Four strategies (the fallback's limit / pods needs its own) at 1 and 4 pods, one round trip.
        assert_eq!(quick.configs(&[]).len(), 4 * 2 + 1);
        let bad = Params {
            warmup_s: 9,
            ..quick.clone()
        };
        assert!(bad.validate().is_err());
    }
}
