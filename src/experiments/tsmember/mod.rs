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
//! in the limiter. `batch_members` also run at each rate with arrivals in `batches` (the same
//! request rate, requests arriving together: how a client pool flushing its queue looks), which
//! tests whether burstiness moves time-ms members' over-admission. Then a closed loop flat out:
//! `flat_out_clients` connections, one request each in flight, on `flat_out_limit`. Runs are
//! interleaved (trial, rate, member, clock).
//!
//! Writes `tsmember/tsmember.csv` (one row per run; `rate` is the arrival rate or `flat-out`),
//! `tsmember/meta.json`.

mod body;
mod charts;
mod report;
mod rows;
mod runs;

pub use rows::{CustomRow, TsmemberRow, CUSTOM, TSMEMBER};

use super::limiters::Verdicts;
use super::{Body, Definition, Render, Summarize, Validate};
use crate::limiter::{LogClock, LogMember, LogVariant};
use crate::record::Table;
use serde::{Deserialize, Serialize};

/// The tsmember experiment.
pub struct Tsmember;

impl Definition for Tsmember {
    const ID: &'static str = "tsmember";
    const TOML: &'static str = include_str!("../../../experiments/tsmember.toml");
    type Params = Params;
    const TAKES_LIMITERS: bool = true;
    const TAKES_PROCESSES: bool = true;
    const VERDICTS: Verdicts = report::verdicts;
    const LIMITER_CLAIMS: super::limiters::Claims = report::limiter_claims;

    const BODY: Body<Params> = body::run;
    const CHARTS: Render = charts::render;
    const SUMMARY: Summarize = report::summary;

    fn tables() -> Vec<Table> {
        vec![
            TSMEMBER.table(),
            Table::of_custom_limiters::<CustomRow>(CUSTOM.name()),
        ]
    }
}

/// Parameters; defaults in `experiments/tsmember.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub trials: u32,
    /// Trials of the members that are not the time (redis-micros, unique-id): at most `trials`
    /// (open loop), and at most `flat_out_trials` of them flat out;
    /// they measure whether a member is ever lost, which the time-as-member bug's spread does not
    /// set.
    pub unique_member_trials: u32,
    pub limit: u64,
    pub window_ms: u64,
    pub rates: Vec<f64>,
    /// Requests per arrival instant, each at every rate: 1 is Poisson; larger ones test whether
    /// burstier arrivals at the same rate admit more (for `batch_members` only).
    pub batches: Vec<u32>,
    pub batch_members: Vec<LogMember>,
    /// ... scored by these clocks only (the clock makes no difference one by one).
    pub batch_clocks: Vec<LogClock>,
    pub duration_s: f64,
    pub members: Vec<LogMember>,
    pub clocks: Vec<LogClock>,
    pub connections: usize,
    /// Open-loop worker processes (one keeps 10,000 requests per second).
    pub processes: usize,
    pub flat_out_trials: u32,
    pub flat_out_limit: u64,
    pub flat_out_clients: usize,
    pub flat_out_s: f64,
    pub flat_out_members: Vec<LogMember>,
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        let p = self;
        let ok = p.trials > 0
            && (1..=p.trials).contains(&p.unique_member_trials)
            && p.limit > 0
            && p.window_ms > 0
            && p.duration_s > 0.0
            && p.rates.iter().all(|r| *r > 0.0 && r.is_finite())
            && p.batches.first() == Some(&1)
            && p.batches.iter().all(|b| *b > 0)
            && p.connections > 0
            && p.processes > 0
            && (p.flat_out_trials == 0 || (p.flat_out_clients > 0 && p.flat_out_s > 0.0));
        if ok && !p.members.is_empty() && !p.clocks.is_empty() {
            return Ok(());
        }
        Err("trials, limit, window_ms, duration_s, rates, batches, connections, processes (and flat-out \
            clients and seconds) must be > 0, 1 <= unique_member_trials <= trials, batches start with 1 \
            (Poisson); members and clocks non-empty"
            .into())
    }
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
            crate::context::Profile::Quick,
            crate::context::Profile::Full,
        ] {
            let p = crate::experiments::frame::resolve::<Tsmember>(profile, &[]).unwrap();
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
            member_bytes: None,
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
                member_bytes: None,
            };
            let csv = serde_json::to_value(member).unwrap();
            assert_eq!(label(v), format!("{}/redis", csv.as_str().unwrap()));
        }
        assert_eq!(format!("{}", 10000.0f64), "10000");
    }
}
