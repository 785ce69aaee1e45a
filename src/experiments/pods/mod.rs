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
//! Then the event-loop sweep, pods as the seed's: each request first holds its pod's event loop
//! for `work_ms` (its synchronous work, which every waiting continuation waits behind, a GET's
//! reply among them), and the partner takes `partner_ms` to answer what was admitted, so a pod
//! holds many requests open at once. Pods x work, `loop_trials` trials of `loop_duration_s`; a
//! variation spreads the pods' clocks over `skew_ms` (the seed's ruled-out cause).
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
    /// The event-loop sweep's repetitions of every configuration.
    pub loop_trials: u32,
    /// The event-loop sweep's seconds per run (the first `warmup_s` not counted).
    pub loop_duration_s: u32,
    /// The event-loop sweep's limiters.
    pub loop_strategies: Vec<PodStrategy>,
    /// The event-loop sweep's numbers of pods.
    pub loop_pods: Vec<u32>,
    /// The event-loop sweep's offered rates, requests per second over all pods.
    pub loop_offered_rps: Vec<f64>,
    /// Synchronous work per request, ms: how long it holds its pod's event loop before its check.
    pub work_ms: Vec<f64>,
    /// How long the partner takes to answer an admitted request in the event-loop sweep, ms.
    pub partner_ms: f64,
    /// The skew variation: the pods' clocks spread evenly over this many ms (0: no variation).
    pub skew_ms: f64,
    /// The skew variation's numbers of pods.
    pub skew_pods: Vec<u32>,
    /// The skew variation's synchronous work per request, ms.
    pub skew_work_ms: Vec<f64>,
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        let p = self;
        let rates = |r: &[f64]| r.iter().all(|x| *x > 0.0 && x.is_finite());
        let ms = |r: &[f64], most: f64| r.iter().all(|x| (0.0..=most).contains(x));
        let ok = p.trials > 0
            && p.loop_trials > 0
            && p.limit > 0
            && p.warmup_s < p.duration_s
            && p.warmup_s < p.loop_duration_s
            && (p.pods.iter())
                .chain(&p.rtt_pods)
                .chain(&p.loop_pods)
                .chain(&p.skew_pods)
                .all(|n| (1..=64).contains(n))
            && rates(&p.offered_rps)
            && rates(&p.rtt_offered_rps)
            && rates(&p.loop_offered_rps)
            && p.rtt_ms.iter().all(|x| *x > 0.0 && *x <= 2_000.0)
            && ms(&p.work_ms, 1_000.0)
            && ms(&p.skew_work_ms, 1_000.0)
            && ms(&[p.partner_ms], 10_000.0)
            && ms(&[p.skew_ms], 1_000.0);
        if !ok {
            return Err(
                "trials, loop_trials and limit must be > 0, warmup_s below both durations, \
                pods 1-64, offered rates > 0, round trips in (0, 2000] ms, work 0-1000 ms, \
                partner_ms 0-10000 and skew_ms 0-1000"
                    .into(),
            );
        }
        match p.configs(&[]).is_empty() && p.loop_strategies.is_empty() {
            true => Err("nothing to run: every grid and sweep is empty".into()),
            false => Ok(()),
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
    /// Synchronous work per request, ms; the partner's answer time, ms; the pods' clock spread,
    /// ms (all 0 outside the event-loop sweep).
    pub work_ms: f64,
    pub partner_ms: f64,
    pub skew_ms: f64,
    /// Seconds of schedule per run, and runs.
    pub duration_s: u32,
    pub trials: u32,
}

impl Params {
    /// Every configuration: the main grid on loopback, the round-trip sweep, then the event-loop
    /// sweep and its skew variation; the custom limiters `custom` (`--limiter`) in the first two,
    /// after the built-in ones.
    pub(crate) fn configs(&self, custom: &[Strategy]) -> Vec<Config> {
        let with_custom = |builtin: &[PodStrategy]| -> Vec<PodStrategy> {
            let custom = custom.iter().map(|&s| PodStrategy::Redis(s));
            builtin.iter().copied().chain(custom).collect()
        };
        let grid = Config {
            strategy: PodStrategy::InMemory,
            pods: 1,
            offered_rps: 0.0,
            rtt_ms: 0.0,
            work_ms: 0.0,
            partner_ms: 0.0,
            skew_ms: 0.0,
            duration_s: self.duration_s,
            trials: self.trials,
        };
        let mut all = grid.product(
            &with_custom(&self.strategies),
            &self.pods,
            &self.offered_rps,
            &[0.0],
        );
        let strategies = with_custom(&self.rtt_strategies);
        all.extend(grid.product(
            &strategies,
            &self.rtt_pods,
            &self.rtt_offered_rps,
            &self.rtt_ms,
        ));
        let event_loop = Config {
            partner_ms: self.partner_ms,
            duration_s: self.loop_duration_s,
            trials: self.loop_trials,
            ..grid
        };
        let (strategies, rates) = (&self.loop_strategies, &self.loop_offered_rps);
        for &work_ms in &self.work_ms {
            let at = Config {
                work_ms,
                ..event_loop
            };
            all.extend(at.product(strategies, &self.loop_pods, rates, &[0.0]));
        }
        for &work_ms in self.skew_work_ms.iter().filter(|_| self.skew_ms > 0.0) {
            let skew_ms = self.skew_ms;
            let at = Config {
                work_ms,
                skew_ms,
                ..event_loop
            };
            all.extend(at.product(strategies, &self.skew_pods, rates, &[0.0]));
        }
        all
    }
}

impl Config {
    /// This configuration at every strategy x pods x offered rate x round trip.
    fn product(
        &self,
        strategies: &[PodStrategy],
        pods: &[u32],
        rates: &[f64],
        rtts: &[f64],
    ) -> Vec<Config> {
        let mut out = Vec::new();
        for &rtt_ms in rtts {
            for &strategy in strategies {
                for &pods in pods {
                    for &offered_rps in rates {
                        out.push(Config {
                            strategy,
                            pods,
                            offered_rps,
                            rtt_ms,
                            ..*self
                        });
                    }
                }
            }
        }
        out
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
            // The seed's configuration is in every profile (the naive window at 4 pods, 400/s),
            // and one pod without and with work.
            let naive = |c: &Config| {
                c.strategy == PodStrategy::Redis(crate::limiter::Strategy::NaiveWindow)
                    && c.offered_rps == 400.0
                    && c.skew_ms == 0.0
            };
            let configs = p.configs(&[]);
            let seed = configs.iter().any(|c| naive(c) && c.pods == 4)
                && configs
                    .iter()
                    .any(|c| naive(c) && c.pods == 1 && c.work_ms == 0.0)
                && configs
                    .iter()
                    .any(|c| naive(c) && c.pods == 1 && c.work_ms > 0.0);
            assert!(seed, "{profile:?} lacks the seed's configuration");
        }
        let quick = crate::experiments::frame::resolve::<Pods>(Profile::Quick, &[]).unwrap();
        // Three strategies (the fallback's limit / pods needs its own) at 4 pods, one round trip,
        // the naive window at 1, 4 and 12 pods without and with work, and one skewed.
        assert_eq!(quick.configs(&[]).len(), 3 + 1 + 3 * 2 + 1);
        let bad = Params {
            warmup_s: 9,
            ..quick.clone()
        };
        assert!(bad.validate().is_err());
    }
}
