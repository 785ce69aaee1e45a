//! atomic's summary for REPORT.md.

use super::{AtomicRow, RoundTripRow};
use super::{ATOMIC, ROUND_TRIPS};
use crate::analysis::claims::LimiterClaim;
use crate::analysis::table::summary_table;
use crate::analysis::table::{Key, Stat};
use crate::analysis::AnalysisError;
use crate::experiments::limiters::{self, ClaimsAt};
use std::path::Path;

/// Admission, WATCH retries, round trips (self-reported), the commands Redis counted and Redis CPU
/// per strategy, capacity and P x F.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let keys: [Key<AtomicRow>; 3] = [
        ("strategy", |r| r.strategy.to_string()),
        ("capacity", |r| r.capacity.to_string()),
        ("config", |r| format!("{}x{}", r.processes, r.in_flight)),
    ];
    let stats: [Stat<AtomicRow>; 7] = [
        ("admitted", |r| Some(r.admitted as f64)),
        ("refused", |r| Some(r.refused as f64)),
        ("WATCH retries", |r| Some(r.watch_retries as f64)),
        ("aborts", |r| Some(r.watch_aborts as f64)),
        ("round trips", |r| Some(r.redis_calls as f64)),
        ("Redis commands/decision", |r| {
            Some(r.server_commands? as f64 / r.checks as f64)
        }),
        ("Redis CPU µs/decision", |r| Some(r.cpu_us_per_decision)),
    ];
    let mut out = summary_table(&ATOMIC.read(dir)?, &keys, &stats);
    let path = ROUND_TRIPS.path(dir);
    if path.exists() {
        let keys: [Key<RoundTripRow>; 1] =
            [("config", |r| format!("{}x{}", r.processes, r.in_flight))];
        let stats: [Stat<RoundTripRow>; 1] =
            [("Redis CPU µs/GET", |r| Some(r.cpu_us_per_round_trip))];
        out.push_str(
            "\nA round trip alone (round_trips.csv): Redis CPU per GET of a missing key at each \
             configuration, in the same trials. Where it is most of a decision's CPU, the machine's \
             cost of waking Redis per command, not the limiter, sets that column.\n\n",
        );
        out.push_str(&summary_table(&ROUND_TRIPS.read(dir)?, &keys, &stats));
    }
    Ok(out)
}

/// Each custom limiter exact under contention: every trial admits exactly what an exact limiter
/// of its algorithm admits from a fresh key of `capacity`.
pub fn limiter_claims(at: &ClaimsAt) -> Result<Vec<LimiterClaim>, AnalysisError> {
    let of = at.of(ATOMIC.name(), "strategy")?;
    Ok(limiters::exact_claims(
        &of,
        &of.rows,
        ["capacity", "checks"],
        &[("", "atomic")],
    ))
}
