//! race's summary for REPORT.md.

use super::{KeyRow, RaceRow};
use super::{KEYS, RACE};
use crate::analysis::claims::LimiterClaim;
use crate::analysis::claims::{Judge, Select};
use crate::analysis::table::summary_table;
use crate::analysis::table::{Key, Stat};
use crate::analysis::AnalysisError;
use crate::experiments::limiters::{self, ClaimsAt, LimiterRow, RowClaim, Verdict};
use crate::limiter::custom::{Algorithm, Anchor};
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

/// The scenarios a custom limiter's exactness is judged in, with their words: refill 0 and one
/// window per trial, so an exact limiter admits the limit (`take`'s bucket refills: not judged).
pub const EXACT_SCENARIOS: [(&str, &str); 3] = [
    ("matrix", "race"),
    ("seed001", "seed 001 burst"),
    ("take-still", "seed 001 take test"),
];

/// Each custom limiter exact under concurrency: every trial of each scenario it ran admits
/// exactly what an exact limiter of its algorithm admits.
pub fn limiter_claims(at: &ClaimsAt) -> Result<Vec<LimiterClaim>, AnalysisError> {
    let of = at.of(RACE.name(), "strategy")?;
    let mut out = limiters::exact_claims(&of, &of.rows, ["limit", "checks"], &EXACT_SCENARIOS);
    // The keys it left after each matrix trial (race writes them; libraries does not).
    let keys = at.of(KEYS.name(), "strategy")?;
    let expire = RowClaim {
        what: "keys-expire",
        aspect: "keys expire",
        text: "every key it leaves for a client after a trial expires: none outlives every window and \
               every client"
            .into(),
        select: Select::new(),
        statistic: "pttl_ms",
        judge: Judge::AllAbove,
        published: 0.0,
        published_column: None,
        why: "a key it left has no expiry (pttl_ms is -1): a client's state stays in Redis forever, \
              one key per client that ever came",
    };
    out.extend(keys.of_every_row(expire));
    Ok(out)
}

/// What each custom limiter leaves in Redis per client after a matrix trial.
pub fn verdicts(dir: &Path) -> Result<Vec<Verdict>, AnalysisError> {
    let recorded = limiters::recorded(dir)?;
    let mut out = Vec::new();
    if KEYS.path(dir).is_file() {
        let keys = KEYS.read(dir)?;
        for l in &recorded {
            let mine: Vec<&KeyRow> = keys.iter().filter(|k| k.strategy == l.strategy).collect();
            let value = keys_left(&mine, |k| must_live_until(l, k));
            out.push(Verdict {
                limiter: l.strategy.to_string(),
                aspect: "keys left per client",
                value,
            });
        }
    }
    Ok(out)
}

/// The earliest a key `l` wrote in the trial of `k` may expire, Unix ms on ratelab's clock: the
/// end of the first window the trial's requests count in (none is written before the trial's
/// start, so no window it counts in ends sooner). An epoch-aligned window ends at the epoch
/// boundary after the start; one counted from the trial's origin or opened by its first hit, and
/// a log's memory, a window after the start. A bucket's state (and GCRA's) must last until it is
/// full again, which depends on what it admitted (race's bucket never refills), not on a window:
/// not judged, nor a row from a run that did not record when the trial started.
fn must_live_until(l: &LimiterRow, k: &KeyRow) -> Option<u64> {
    let bucket = matches!(l.algorithm, Algorithm::TokenBucket | Algorithm::Gcra);
    if k.origin_ms == 0 || k.read_ms == 0 || bucket {
        return None;
    }
    let window = k.window_ms.max(1);
    let anchor: Anchor = l.anchor.parse().unwrap_or_default();
    Some(match (l.algorithm.has_windows(), anchor) {
        (true, Anchor::Epoch) => (k.origin_ms / window + 1) * window,
        _ => k.origin_ms + window,
    })
}

/// What a limiter leaves in Redis for one client after a matrix trial: how many keys of which
/// types, and whether they expire (a key that never does outlives every window and every client)
/// or expire before the window they count in ends (`until`: its end, when known), which resets
/// the count early: requests the window should refuse pass once it is gone.
fn keys_left(rows: &[&KeyRow], until: impl Fn(&KeyRow) -> Option<u64>) -> String {
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
        0 => format!(
            "{what}; all expire, in {within} s (window {window:.0} s){}",
            expiring_early(rows, until)
        ),
        n => format!("{what}; {n} of {} never expire", rows.len()),
    }
}

/// `; N of M expire before their window ends (...)`, or nothing: a key read at `read_ms` with
/// `pttl_ms` left is gone by `read_ms + pttl_ms` (+1: PTTL is whole ms), which is before `until`.
fn expiring_early(rows: &[&KeyRow], until: impl Fn(&KeyRow) -> Option<u64>) -> String {
    // The key farthest short: its time left and what its window still needed, both measured.
    let mut early = 0;
    let mut worst: Option<(i64, i64)> = None;
    for r in rows.iter().filter(|r| r.pttl_ms >= 0) {
        let Some(end) = until(r) else { continue };
        let needed = end as i64 - r.read_ms as i64;
        if r.pttl_ms + 1 >= needed {
            continue;
        }
        early += 1;
        if worst.is_none_or(|(left, need)| r.pttl_ms - needed < left - need) {
            worst = Some((r.pttl_ms, needed));
        }
    }
    match worst {
        None => String::new(),
        Some((left, needed)) => format!(
            "; {early} of {} expire before their window ends (shortest: {:.1} s left when {:.1} s \
             of its window remained)",
            rows.len(),
            left as f64 / 1e3,
            needed as f64 / 1e3
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::Strategy;

    fn key(trial: u32, suffix: &str, kind: &str, pttl_ms: i64) -> KeyRow {
        // Read 2 s into a trial that started 200 s past an epoch boundary of its window.
        KeyRow {
            strategy: Strategy::LuaBucket,
            processes: 1,
            in_flight: 1,
            trial,
            suffix: suffix.into(),
            kind: kind.into(),
            pttl_ms,
            window_ms: 600_000,
            origin_ms: 1_000_000_400_000,
            read_ms: 1_000_000_402_000,
        }
    }

    #[test]
    fn keys_left_counts_keys_per_client_and_flags_the_ones_that_never_expire() {
        let unknown = |_: &KeyRow| None;
        let expiring = [key(0, "", "string", 599_000), key(1, "", "string", 598_000)];
        let text = keys_left(&expiring.iter().collect::<Vec<_>>(), unknown);
        assert_eq!(text, "1 (string); all expire, in 598-599 s (window 600 s)");
        let leaking = [key(0, "", "hash", -1), key(0, ":1", "string", 1_000)];
        let text = keys_left(&leaking.iter().collect::<Vec<_>>(), unknown);
        assert_eq!(text, "2 (hash, string); 1 of 2 never expire");
        assert_eq!(keys_left(&[], unknown), "none");
    }

    #[test]
    fn keys_that_expire_before_their_window_ends_are_flagged_by_the_limiters_anchor() {
        let limiter = |algorithm, anchor: &str| LimiterRow {
            strategy: Strategy::LuaWindow,
            algorithm,
            reference: Strategy::LuaWindow,
            manifest: String::new(),
            script: String::new(),
            invocation: String::new(),
            library: String::new(),
            anchor: anchor.into(),
            caller_clock: false,
            probe_calls: 6,
            probe_admitted: 5,
            probe_limit: 5,
        };
        // 2 s into a window that started with the trial: 598 s of it remain.
        let first_hit = limiter(Algorithm::FixedWindow, "first-hit");
        let judge = |l: &LimiterRow, rows: &[KeyRow]| {
            keys_left(&rows.iter().collect::<Vec<_>>(), |k| must_live_until(l, k))
        };
        let whole = [key(0, "", "string", 598_000), key(1, "", "string", 599_000)];
        assert!(!judge(&first_hit, &whole).contains("before"));
        let short = [key(0, "", "string", 58_000), key(1, "", "string", 599_000)];
        assert_eq!(
            judge(&first_hit, &short),
            "1 (string); all expire, in 58-599 s (window 600 s); 1 of 2 expire before their window \
             ends (shortest: 58.0 s left when 598.0 s of its window remained)"
        );
        // Aligned to the epoch, the trial's window ends at the next multiple of 600 s: 398 s on.
        let epoch = limiter(Algorithm::FixedWindow, "epoch");
        let to_boundary = [key(0, "", "string", 398_000)];
        assert!(!judge(&epoch, &to_boundary).contains("before"));
        let text = judge(&epoch, &[key(0, "", "string", 300_000)]);
        assert!(text.contains("300.0 s left when 398.0 s"), "{text}");
        // A bucket's state lasts until it is full again, not a window: GCRA's too. An older run
        // has no timestamps.
        for bucket in [Algorithm::TokenBucket, Algorithm::Gcra] {
            assert!(!judge(&limiter(bucket, ""), &short).contains("before"));
        }
        let log = limiter(Algorithm::SlidingLog, "");
        assert!(judge(&log, &short).contains("1 of 2 expire before"));
        let older = [KeyRow {
            origin_ms: 0,
            read_ms: 0,
            ..short[0].clone()
        }];
        assert!(!judge(&first_hit, &older).contains("before"));
    }
}
