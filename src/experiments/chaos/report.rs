//! chaos's summary for REPORT.md: per client, timeout and drill window (drills.csv), then the
//! after-drill check (after.csv); and each custom limiter's verdicts for REPORT.md's table.

use super::{AfterRow, DirectionRow, Drill, DrillRow, PoolRow, AFTERS, DIRECTIONS, DRILLS, POOL};
use crate::analysis::claims::{Judge, LimiterClaim, Select};
use crate::analysis::table::{summary_table, Key, Stat};
use crate::analysis::AnalysisError;
use crate::experiments::limiters::{self, ClaimsAt, RowClaim, Verdict};
use std::path::Path;

/// Per client, timeout and drill; then the after-drill check.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let keys: [Key<DrillRow>; 3] = [
        ("client", |r| r.client.clone()),
        ("timeout ms", |r| r.timeout_ms.to_string()),
        ("drill", |r| r.drill.to_string()),
    ];
    let stats: [Stat<DrillRow>; 12] = [
        ("offered", |r| Some(r.offered as f64)),
        ("served in window %", |r| Some(r.served_fraction * 100.0)),
        ("dropped %", |r| Some(r.dropped_fraction * 100.0)),
        ("p50 ms", |r| r.p50_ms),
        ("p99 ms", |r| r.p99_ms),
        ("p99 rise ms", |r| r.p99_rise_ms),
        ("max ms", |r| r.max_ms),
        ("all busy after ms", |r| r.all_busy_after_ms),
        ("busy mean", |r| Some(r.busy_mean)),
        ("by policy %", |r| Some(r.degraded_fraction * 100.0)),
        ("denied", |r| Some((r.denied + r.degraded_denied) as f64)),
        ("fail-open counter", |r| Some(r.fail_open_counter as f64)),
    ];
    let rows = DRILLS.read(dir)?;
    let mut out = overload(&rows).unwrap_or_default();
    out.push_str(&summary_table(&rows, &keys, &stats));
    if AFTERS.path(dir).is_file() {
        out.push_str("\nAfter the drill (healed; one fresh key, checks one after another):\n\n");
        let keys: [Key<AfterRow>; 2] = [
            ("client", |r| r.client.clone()),
            ("timeout ms", |r| r.timeout_ms.to_string()),
        ];
        let stats: [Stat<AfterRow>; 6] = [
            ("requests", |r| Some(r.requests as f64)),
            ("limit", |r| Some(r.capacity as f64)),
            ("allowed", |r| Some(r.allowed as f64)),
            ("denied", |r| Some(r.denied as f64)),
            ("allowed by policy", |r| Some(r.degraded_allowed as f64)),
            ("reconnects", |r| Some(r.reconnects as f64)),
        ];
        out.push_str(&summary_table(&AFTERS.read(dir)?, &keys, &stats));
    }
    if DIRECTIONS.path(dir).is_file() {
        out.push_str(&directions(dir)?);
    }
    if POOL.path(dir).is_file() {
        out.push_str(&pool(dir)?);
    }
    Ok(out)
}

/// A baseline window's check p99 when it exceeded the client's timeout: before any fault, the
/// machine, not a drill, had the client answer by policy (more clients than its cores keep, such
/// as several adapters in one sequence). None for any other window.
fn overloaded(r: &DrillRow) -> Option<f64> {
    let baseline = r.drill == Drill::Baseline;
    (r.check_p99_ms).filter(|&p99| baseline && p99 > r.timeout_ms as f64)
}

/// The warning over the table when some client was [`overloaded`].
fn overload(rows: &[DrillRow]) -> Option<String> {
    let over: Vec<(&DrillRow, f64)> = (rows.iter())
        .filter_map(|r| Some((r, overloaded(r)?)))
        .collect();
    let (worst, p99) = over.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    let clients = rows.iter().filter(|r| r.drill == Drill::Baseline).count();
    Some(format!(
        "**WARNING: before any fault, the checks of {} of {clients} clients took longer than their \
         timeout at the 99th percentile (worst {}: {} ms against {} ms): the machine was overloaded, \
         so what the drills answered by policy is partly the overload's. Run fewer clients at once \
         (on 2 cores, two custom limiters).**\n\n",
        over.len(),
        worst.client,
        crate::analysis::table::short(*p99),
        worst.timeout_ms
    ))
}

/// Per pool drill window, over the pool's connections: what each carried and when it failed.
fn pool(dir: &Path) -> Result<String, AnalysisError> {
    let rows = POOL.read(dir)?;
    if rows.is_empty() {
        return Ok(String::new());
    }
    let keys: [Key<PoolRow>; 1] = [("window", |r| r.drill.to_string())];
    let stats: [Stat<PoolRow>; 6] = [
        ("checks", |r| Some(r.checks as f64)),
        ("by policy %", |r| Some(r.by_policy_fraction * 100.0)),
        ("replaced", |r| Some(r.replaced as f64)),
        ("replaced at ms", |r| r.replaced_at_ms),
        ("first by policy ms", |r| r.first_policy_ms),
        ("by Redis after replaced", |r| {
            Some(r.redis_after_replaced as f64)
        }),
    ];
    let mut out = String::from(
        "\nPool drill (new connections refused, open ones untouched; per connection, mean (min-max) \
         over the pool):\n\n",
    );
    out.push_str(&summary_table(&rows, &keys, &stats));
    Ok(out)
}

/// Per blackhole direction and window: what the client saw, and what Redis ran.
fn directions(dir: &Path) -> Result<String, AnalysisError> {
    let rows = DIRECTIONS.read(dir)?;
    if rows.is_empty() {
        return Ok(String::new());
    }
    let keys: [Key<DirectionRow>; 3] = [
        ("direction", |r| crate::record::csv_text(&r.direction)),
        ("timeout ms", |r| r.timeout_ms.to_string()),
        ("window", |r| r.drill.to_string()),
    ];
    let stats: [Stat<DirectionRow>; 7] = [
        ("offered", |r| Some(r.offered as f64)),
        ("by policy %", |r| Some(r.by_policy_fraction * 100.0)),
        ("check p50 ms", |r| r.check_p50_ms),
        ("check max ms", |r| r.check_max_ms),
        ("Redis ran", |r| Some(r.redis_ran as f64)),
        ("Redis ran / offered", |r| Some(r.redis_ran_fraction)),
        ("connections", |r| Some(r.connections_accepted as f64)),
    ];
    let mut out =
        String::from("\nBlackhole directions (one correct client each, its own proxy):\n\n");
    out.push_str(&summary_table(&rows, &keys, &stats));
    Ok(out)
}

/// The built-in bucket's client that runs beside the custom limiters, in their sequence.
pub(super) const BESIDE: &str = "lua-bucket";

/// Each custom limiter's drills beside the built-in bucket's client of its sequence: what
/// its service served while the store was blackholed, what it answered by policy once that healed
/// and once every connection was reset, and whether the limit held again after the drill.
pub fn verdicts(dir: &Path) -> Result<Vec<Verdict>, AnalysisError> {
    let drills = DRILLS.read(dir)?;
    let afters = AFTERS.read(dir)?;
    let mut out = Vec::new();
    for l in limiters::recorded(dir)? {
        let name = l.strategy.to_string();
        let window = |client: &str, t: u64, drill: Drill| {
            (drills.iter()).find(|r| r.client == client && r.timeout_ms == t && r.drill == drill)
        };
        let Some(after) = afters.iter().find(|r| r.client == name) else {
            continue;
        };
        let t = after.timeout_ms;
        let percent = |r: Option<&DrillRow>, of: fn(&DrillRow) -> f64| {
            r.map_or("-".to_string(), |r| format!("{:.0}%", 100.0 * of(r)))
        };
        let overload = match window(&name, t, Drill::Baseline).and_then(overloaded) {
            Some(p99) => format!("; overloaded before any fault (check p99 {p99:.0} ms)"),
            None => String::new(),
        };
        let beside = |drill: Drill, of: fn(&DrillRow) -> f64| {
            format!(
                "{} (built-in bucket {}), {t} ms timeout{overload}",
                percent(window(&name, t, drill), of),
                percent(window(BESIDE, t, drill), of)
            )
        };
        out.push(Verdict {
            limiter: name.clone(),
            aspect: "chaos blackhole: served in window",
            value: beside(Drill::Blackhole, |r| r.served_fraction),
        });
        out.push(Verdict {
            limiter: name.clone(),
            aspect: "chaos healed: answered by policy",
            value: beside(Drill::AfterBlackhole, |r| r.degraded_fraction),
        });
        out.push(Verdict {
            limiter: name.clone(),
            aspect: "chaos reset: answered by policy",
            value: beside(Drill::Reset, |r| r.degraded_fraction),
        });
        let enforced = match after.enforced {
            true => "enforced",
            false => "NOT enforced",
        };
        out.push(Verdict {
            limiter: name,
            aspect: "chaos after the drill",
            value: format!(
                "{enforced}: {} of {} allowed, at most {} may",
                after.allowed + after.degraded_allowed,
                after.requests,
                after.max_allowed
            ),
        });
    }
    Ok(out)
}

/// Each custom limiter enforces its limit again once the drills are over and its client has
/// reconnected by itself: it allows no more than its bucket's capacity and what refilled meanwhile.
pub fn limiter_claims(at: &ClaimsAt) -> Result<Vec<LimiterClaim>, AnalysisError> {
    let of = at.of(AFTERS.name(), "client")?;
    let claim = RowClaim {
        what: "enforced-after",
        aspect: "chaos: enforces again after the drills",
        text: "after every drill, healed, it allows no more than its capacity and what refilled \
               while its checks ran"
            .into(),
        select: Select::new(),
        statistic: "allowed",
        judge: Judge::AllAtMost,
        published: 0.0,
        published_column: Some("max_allowed"),
        why: "it allowed more than max_allowed after the drills: its checks were answered by the \
              policy (degraded_allowed) or its client did not reconnect (reconnects)",
    };
    // A client answered by the policy allows nothing on Redis's word: it must deny again too.
    let denies = RowClaim {
        what: "denies-after",
        aspect: "chaos: enforces again after the drills",
        text: "after every drill, healed, Redis's answers deny it again: more checks than it may allow \
               were asked"
            .into(),
        select: Select::new(),
        statistic: "denied",
        judge: Judge::AllAtLeast,
        published: 1.0,
        published_column: None,
        why: "no check was denied after the drills: they were answered by the policy \
              (degraded_allowed, degraded_denied), so its client did not decide again",
    };
    Ok([claim, denies]
        .into_iter()
        .filter_map(|c| of.of_every_row(c))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference's baseline windows kept every client's checks within its timeout; one
    /// client's check p99 raised past its timeout makes the warning name it.
    #[test]
    fn a_baseline_check_slower_than_its_timeout_is_an_overload_warning() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/reference/chaos");
        let mut rows = DRILLS.read(&dir).expect("the reference's drills.csv");
        assert_eq!(overload(&rows), None);
        let row = (rows.iter_mut())
            .find(|r| r.drill == Drill::Baseline && r.timeout_ms == 30)
            .expect("a 30 ms client's baseline");
        row.check_p99_ms = Some(31.0);
        assert_eq!(overloaded(row), Some(31.0));
        let client = row.client.clone();
        let warning = overload(&rows).expect("a warning");
        assert!(
            warning.contains(&format!("worst {client}: 31 ms against 30 ms")),
            "{warning}"
        );
    }
}
