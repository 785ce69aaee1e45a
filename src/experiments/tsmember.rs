//! # tsmember
//! Hypothesis (seed 002): a sliding log that uses the time in ms as its sorted-set member (`ZADD
//! key now now`) stores two requests of the same ms as ONE entry, so ZCARD undercounts and the
//! limiter admits more than its limit: a little at 100/s (+9%), a lot at 1,000/s (+89%), 11.9x at
//! 10,000/s, ~51,000 on a limit of 1,000 flat out. Whose clock scores the entries makes no
//! difference; Redis's time in µs is exact in practice; a unique member is exact by construction.
//!
//! Method: one fresh key per run, limit `limit` per `window_ms`. Open loop: Poisson arrivals at
//! each rate for `duration_s` from one worker process (latency from the intended start; how late
//! each start was is recorded and meta.json says whether the generator kept up). Every member x
//! clock variant of one trial and rate replays the SAME seeded arrivals, so variants differ only
//! in the limiter. Then a closed loop flat out: `flat_out_clients` connections, one request each
//! in flight, on `flat_out_limit`. Runs are interleaved (trial, rate, member, clock).
//!
//! Writes `tsmember/tsmember.csv` (one row per run; `rate` is the arrival rate or `flat-out`),
//! `tsmember/meta.json`.

mod runs;

use super::common::{progress_bar, run_experiment, ExperimentError, Phase, RunRecord, Validate};
use crate::context::Ctx;
use crate::limiter::{LogClock, LogMember, LogVariant};
use crate::load::rng::SplitMix64;
use crate::server::Target;
use runs::One;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

const ID: &str = "tsmember";

/// Parameters; defaults in `experiments/tsmember.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub trials: u32,
    pub limit: u64,
    pub window_ms: u64,
    pub rates: Vec<f64>,
    pub duration_s: f64,
    pub members: Vec<LogMember>,
    pub clocks: Vec<LogClock>,
    pub connections: usize,
    pub processes: usize,
    pub flat_out_trials: u32,
    pub flat_out_limit: u64,
    pub flat_out_clients: usize,
    pub flat_out_s: f64,
    pub flat_out_members: Vec<LogMember>,
}

/// One run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TsmemberRow {
    pub member: LogMember,
    pub clock: LogClock,
    /// Arrival rate in requests/s, or `flat-out` for the closed loop.
    pub rate: String,
    pub trial: u32,
    pub duration_s: f64,
    pub offered: u64,
    pub admitted: u64,
    pub denied: u64,
    pub limit: u64,
    pub admitted_per_limit: f64,
    /// Entries in the log afterwards: fewer than `admitted` when members collided.
    pub log_entries: u64,
    /// Latency percentiles, µs: from the intended start (open loop), from the send (flat out).
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// How late starts were against the schedule, µs (99th percentile and latest), and starts
    /// later than 1 ms (open loop only).
    pub p99_late_us: f64,
    pub max_late_us: f64,
    pub late_starts: u64,
    /// CPU seconds the open-loop generator used: near duration_s it was saturated, far below
    /// with late starts it was starved by other processes (0 flat out).
    pub generator_cpu_s: f64,
    /// Requests per second: the arrival rate achieved (open loop) or the throughput (flat out).
    pub requests_per_s: f64,
}

/// Runs the experiment into `ctx.out_dir/tsmember/`.
pub fn run(ctx: &Ctx) -> Result<PathBuf, ExperimentError> {
    run_experiment(ctx, super::Experiment::Tsmember, |s, p: &Params| {
        s.run.note("Each run uses a fresh key. Open-loop runs of one trial and rate replay the same seeded Poisson arrivals for every member and clock (common random numbers), so variants differ only in the limiter.");
        s.run.note("Open-loop latency counts from each request's intended start; flat-out latency from its send.");
        body(s.ctx, p, s.target, s.run, s.prefix)
    })
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        let p = self;
        let ok = p.trials > 0
            && p.limit > 0
            && p.window_ms > 0
            && p.duration_s > 0.0
            && p.rates.iter().all(|r| *r > 0.0 && r.is_finite())
            && p.connections > 0
            && p.processes > 0
            && (p.flat_out_trials == 0 || (p.flat_out_clients > 0 && p.flat_out_s > 0.0));
        if ok && !p.members.is_empty() && !p.clocks.is_empty() {
            return Ok(());
        }
        Err("trials, limit, window_ms, duration_s, rates, connections, processes (and flat-out clients and seconds) must be > 0; members and clocks non-empty".into())
    }
}

fn body(
    ctx: &Ctx,
    p: &Params,
    target: &Target,
    run: &mut RunRecord,
    prefix: &str,
) -> Result<(), ExperimentError> {
    let mut rows = run
        .staging
        .csv::<TsmemberRow>("tsmember.csv")
        .phase(|| "opening tsmember.csv".into())?;
    let variants: Vec<LogVariant> = (p.members.iter())
        .flat_map(|&member| {
            p.clocks
                .iter()
                .map(move |&clock| LogVariant { member, clock })
        })
        .collect();
    let flat: Vec<LogVariant> = variants
        .iter()
        .filter(|v| p.flat_out_members.contains(&v.member))
        .copied()
        .collect();
    let total = p.trials as usize * p.rates.len() * variants.len()
        + p.flat_out_trials as usize * flat.len();
    let bar = progress_bar(ctx, ID, total as u64);
    for trial in 0..p.trials {
        for (r, &rate) in p.rates.iter().enumerate() {
            // One schedule per trial and rate, replayed by every variant.
            let seed = SplitMix64::new(ctx.seed, (u64::from(trial) << 16) | r as u64).next_u64();
            for &v in &variants {
                let one = One {
                    v,
                    rate: Some(rate),
                    trial,
                    limit: p.limit,
                    key: format!("{prefix}{}:{rate}:{trial}", label(v)),
                    seed,
                };
                let row = one.measure(ctx, p, target, run)?;
                rows.write(&row).phase(|| "writing tsmember.csv".into())?;
                bar.inc(1);
            }
        }
    }
    for trial in 0..p.flat_out_trials {
        for &v in &flat {
            let one = One {
                v,
                rate: None,
                trial,
                limit: p.flat_out_limit,
                key: format!("{prefix}{}:flat:{trial}", label(v)),
                seed: ctx.seed,
            };
            let row = one.measure(ctx, p, target, run)?;
            rows.write(&row).phase(|| "writing tsmember.csv".into())?;
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok(())
}

/// `time-ms/redis`: how phases and keys name a variant (the CSV's names; a test checks).
fn label(v: LogVariant) -> String {
    let member = match v.member {
        LogMember::TimeMs => "time-ms",
        LogMember::RedisMicros => "redis-micros",
        LogMember::UniqueId => "unique-id",
    };
    let clock = match v.clock {
        LogClock::Redis => "redis",
        LogClock::Caller => "caller",
    };
    format!("{member}/{clock}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_profiles_parse_and_name_variants_like_the_csv() {
        for profile in [
            crate::experiments::params::Profile::Quick,
            crate::experiments::params::Profile::Full,
        ] {
            let (p, _): (Params, _) = crate::experiments::params::resolve(
                ID,
                super::super::Experiment::Tsmember.params_toml(),
                profile,
                &[],
            )
            .unwrap();
            p.validate().unwrap();
            assert_eq!(p.rates, [100.0, 1000.0, 10000.0]);
            // At the slowest rate arrivals must outnumber the limit, or nothing can over-admit.
            assert!(p.rates[0] * p.duration_s >= 1.5 * p.limit as f64);
            // Flat out must outlast one ms per limit slot, so time-ms members can run out.
            assert!(p.flat_out_s * 1000.0 > p.flat_out_limit as f64);
        }
        let v = LogVariant {
            member: LogMember::TimeMs,
            clock: LogClock::Caller,
        };
        assert_eq!(label(v), "time-ms/caller");
        for member in [
            LogMember::TimeMs,
            LogMember::RedisMicros,
            LogMember::UniqueId,
        ] {
            let v = LogVariant {
                member,
                clock: LogClock::Redis,
            };
            let csv = serde_json::to_value(member).unwrap();
            assert_eq!(label(v), format!("{}/redis", csv.as_str().unwrap()));
        }
        assert_eq!(format!("{}", 10000.0f64), "10000");
    }
}
