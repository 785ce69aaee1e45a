//! race's summary for REPORT.md.

use super::{KeyRow, RaceRow};
use super::{KEYS, RACE};
use crate::analysis::table::summary_table;
use crate::analysis::table::{Key, Stat};
use crate::analysis::AnalysisError;
use crate::experiments::limiters::{self, Exact, Verdict};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Admitted and the final state per scenario, strategy, P x F and limit.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let keys: [Key<RaceRow>; 4] = [
        ("scenario", |r| r.scenario.clone()),
        ("strategy", |r| r.strategy.to_string()),
        ("config", |r| format!("{}x{}", r.processes, r.in_flight)),
        ("limit", |r| match r.cost {
            1 => r.limit.to_string(),
            cost => format!("{} (cost {cost})", r.limit),
        }),
    ];
    let stats: [Stat<RaceRow>; 2] = [
        ("admitted", |r| Some(r.admitted as f64)),
        ("final state", |r| r.final_state.trim().parse().ok()),
    ];
    Ok(summary_table(&RACE.read(dir)?, &keys, &stats))
}

/// Exactness under concurrency: each custom limiter's trial farthest from the limit, either way
/// (refill 0, one window per trial: an exact limiter admits the limit, or limit / cost requests
/// of `cost` tokens), in the matrix and in seed 001's burst (fixed windows).
pub fn verdicts(dir: &Path) -> Result<Vec<Verdict>, AnalysisError> {
    let rows: Vec<RaceRow> = RACE.read(dir)?;
    let recorded = limiters::recorded(dir)?;
    let mut out = Vec::new();
    for l in &recorded {
        let scenarios = [
            ("matrix", "race: admitted / exact"),
            ("seed001", "seed 001 burst: admitted / exact"),
        ];
        for (scenario, aspect) in scenarios {
            let mine = |r: &RaceRow| r.strategy == l.strategy && r.scenario == scenario;
            let exact = |r: &RaceRow| {
                let exact = Exact::at_cost(r.limit, r.cost, r.checks);
                (r.admitted as f64, exact)
            };
            let Some((worst, admitted, bound)) = limiters::farthest(&rows, mine, exact) else {
                continue;
            };
            let value = limiters::judged(admitted, bound);
            let at = match worst.cost {
                1 => format!("{}x{}", worst.processes, worst.in_flight),
                // The bound is limit / cost: say the cost it was asked at.
                cost => format!("{}x{}, cost {cost}", worst.processes, worst.in_flight),
            };
            out.push(Verdict {
                limiter: l.strategy.to_string(),
                aspect,
                value: format!("{value} at {at}"),
            });
        }
    }
    if KEYS.path(dir).is_file() {
        let keys = KEYS.read(dir)?;
        for l in &recorded {
            let mine: Vec<&KeyRow> = keys.iter().filter(|k| k.strategy == l.strategy).collect();
            let value = keys_left(&mine);
            out.push(Verdict {
                limiter: l.strategy.to_string(),
                aspect: "keys left per client",
                value,
            });
        }
    }
    Ok(out)
}

/// What a limiter leaves in Redis for one client after a matrix trial: how many keys of which
/// types, and whether they expire (a key that never does outlives every window and every client).
fn keys_left(rows: &[&KeyRow]) -> String {
    let mut per_trial: BTreeMap<(usize, usize, u32), usize> = BTreeMap::new();
    let mut kinds: BTreeSet<&str> = BTreeSet::new();
    for r in rows {
        *per_trial
            .entry((r.processes, r.in_flight, r.trial))
            .or_default() += 1;
        kinds.insert(&r.kind);
    }
    let Some(most) = per_trial.values().max() else {
        return "none".into();
    };
    let kinds: Vec<&str> = kinds.into_iter().collect();
    let what = format!("{most} ({})", kinds.join(", "));
    let never = rows.iter().filter(|r| r.pttl_ms == -1).count();
    let ttls = rows
        .iter()
        .filter(|r| r.pttl_ms >= 0)
        .map(|r| r.pttl_ms as f64 / 1e3);
    let (lo, hi) = ttls.fold((f64::MAX, f64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)));
    let window = rows[0].window_ms as f64 / 1e3;
    let within = match format!("{lo:.0}") == format!("{hi:.0}") {
        true => format!("{hi:.0}"),
        false => format!("{lo:.0}-{hi:.0}"),
    };
    match never {
        0 => format!("{what}; all expire, in {within} s (window {window:.0} s)"),
        n => format!("{what}; {n} of {} never expire", rows.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::Strategy;

    fn key(trial: u32, suffix: &str, kind: &str, pttl_ms: i64) -> KeyRow {
        KeyRow {
            strategy: Strategy::LuaBucket,
            processes: 1,
            in_flight: 1,
            trial,
            suffix: suffix.into(),
            kind: kind.into(),
            pttl_ms,
            window_ms: 600_000,
        }
    }

    #[test]
    fn keys_left_counts_keys_per_client_and_flags_the_ones_that_never_expire() {
        let expiring = [key(0, "", "string", 599_000), key(1, "", "string", 598_000)];
        let text = keys_left(&expiring.iter().collect::<Vec<_>>());
        assert_eq!(text, "1 (string); all expire, in 598-599 s (window 600 s)");
        let leaking = [key(0, "", "hash", -1), key(0, ":1", "string", 1_000)];
        let text = keys_left(&leaking.iter().collect::<Vec<_>>());
        assert_eq!(text, "2 (hash, string); 1 of 2 never expire");
        assert_eq!(keys_left(&[]), "none");
    }
}
