//! tsmember's summary for REPORT.md.

use super::{CustomRow, TsmemberRow};
use super::{CUSTOM, TSMEMBER};
use crate::analysis::claims::{Judge, LimiterClaim, Select};
use crate::analysis::table::summary_table;
use crate::analysis::table::{Key, Stat};
use crate::analysis::AnalysisError;
use crate::experiments::limiters::{self, ClaimsAt, Exact, RowClaim, Verdict};
use crate::record::csv_text;
use std::path::Path;

/// Admitted against the limit per member, clock, rate and requests per arrival.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let keys: [Key<TsmemberRow>; 5] = [
        ("member", |r| csv_text(&r.member)),
        ("clock", |r| csv_text(&r.clock)),
        ("rate", |r| r.rate.clone()),
        ("per arrival", |r| r.batch.to_string()),
        ("limit", |r| r.limit.to_string()),
    ];
    let stats: [Stat<TsmemberRow>; 5] = [
        ("offered", |r| Some(r.offered as f64)),
        ("admitted", |r| Some(r.admitted as f64)),
        ("admitted / limit", |r| Some(r.admitted_per_limit)),
        ("log entries", |r| Some(r.log_entries as f64)),
        ("latest start µs", |r| Some(r.max_late_us)),
    ];
    let mut text = summary_table(&TSMEMBER.read(dir)?, &keys, &stats);
    let custom = CUSTOM.path(dir);
    if custom.is_file() {
        let keys: [Key<CustomRow>; 4] = [
            ("custom limiter", |r| r.strategy.to_string()),
            ("caller's clock", |r| r.caller_clock.to_string()),
            ("rate", |r| r.rate.clone()),
            ("limit", |r| r.limit.to_string()),
        ];
        let stats: [Stat<CustomRow>; 4] = [
            ("offered", |r| Some(r.offered as f64)),
            ("failed", |r| Some(r.failed as f64)),
            ("admitted", |r| Some(r.admitted as f64)),
            ("admitted / limit", |r| Some(r.admitted_per_limit)),
        ];
        text.push_str("\n\nCustom limiters on the same schedules:\n\n");
        text.push_str(&summary_table(&CUSTOM.read(dir)?, &keys, &stats));
    }
    Ok(text)
}

/// Over-admission with colliding timestamps: each custom limiter's most admitted over what an
/// exact limiter of its algorithm could admit in the run, at any rate or flat out; and the run
/// where its library failed the most checks, if any.
pub fn verdicts(dir: &Path) -> Result<Vec<Verdict>, AnalysisError> {
    let path = CUSTOM.path(dir);
    if !path.is_file() {
        return Ok(Vec::new());
    }
    let rows = CUSTOM.read(dir)?;
    let mut out = Vec::new();
    for l in limiters::recorded(dir)? {
        let mine = |r: &CustomRow| r.strategy == l.strategy;
        // At least the limit (or every request) from a fresh key; at most the ideal of the span.
        // A check the library failed may have been counted all the same: then no least.
        let exact = |r: &CustomRow| {
            let least = match r.failed {
                0 => r.limit.min(r.offered) as f64,
                _ => 0.0,
            };
            let most = r.ideal.max(least);
            (r.admitted as f64, Exact { least, most })
        };
        let Some((worst, admitted, bound)) = limiters::farthest(&rows, mine, exact) else {
            continue;
        };
        let value = limiters::judged(admitted, bound);
        let rate = rate_text(&worst.rate);
        let clock = if l.caller_clock {
            ", caller's clock"
        } else {
            ""
        };
        out.push(Verdict {
            limiter: l.strategy.to_string(),
            aspect: "colliding timestamps: admitted / exact",
            value: format!("{value} {rate}{clock}{}", most_failed(&rows, mine)),
        });
    }
    Ok(out)
}

/// "; failed N of M checks at R/s (its error)" for the run whose checks the library failed most.
fn most_failed(rows: &[CustomRow], mine: impl Fn(&CustomRow) -> bool) -> String {
    let worst = rows.iter().filter(|r| mine(r)).max_by_key(|r| r.failed);
    match worst {
        Some(r) if r.failed > 0 => format!(
            "; failed {} of {} checks {} ({})",
            r.failed,
            r.offered,
            rate_text(&r.rate),
            r.first_failure
        ),
        _ => String::new(),
    }
}

/// "flat out", or "at R/s".
fn rate_text(rate: &str) -> String {
    match rate {
        "flat-out" => "flat out".to_string(),
        r => format!("at {r}/s"),
    }
}

/// Each custom limiter admits, at every rate and flat out, no more than an exact limiter of its
/// algorithm could over the run's span (`ideal`): colliding timestamps let nothing more through.
pub fn limiter_claims(at: &ClaimsAt) -> Result<Vec<LimiterClaim>, AnalysisError> {
    let of = at.of(CUSTOM.name(), "strategy")?;
    let claim = RowClaim {
        what: "at-most-exact",
        aspect: "colliding timestamps: at most exact",
        text: format!(
            "at every rate and flat out, admits no more than an exact {} could over the run (its \
             ideal): checks stamped alike are each counted",
            at.limiter.algorithm.name()
        ),
        select: Select::new(),
        statistic: "admitted",
        judge: Judge::AllAtMost,
        published: 0.0,
        published_column: Some("ideal"),
        why: "a run admitted more than its ideal: checks whose timestamps collided overwrote each \
              other's entry, or were counted against state they could not see",
    };
    Ok(of.of_every_row(claim).into_iter().collect())
}
