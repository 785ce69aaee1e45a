//! failover's summary for REPORT.md: per variant, strategy, invocation, K and offered rate, the
//! overshoot per key in bursts beside the steady state's own, and what the replica had lost; for
//! the Sentinel variants (clients.csv, when the run has them) when the clients moved and what
//! their checks met until then.

use super::{how_called, ClientRow, TrialRow, Variant, CLIENTS, TRIALS};
use crate::analysis::claims::{Judge, LimiterClaim, Select};
use crate::analysis::table::{short, summarize, summary_table, Key, Stat};
use crate::analysis::AnalysisError;
use crate::experiments::limiters::{self, ClaimsAt, RowClaim, Verdict};
use crate::limiter::custom::promise::Promised;
use crate::limiter::custom::Algorithm;
use crate::record::csv_text;
use std::path::Path;

pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let keys: [Key<TrialRow>; 5] = [
        ("variant", |r| csv_text(&r.variant)),
        ("strategy", |r| r.strategy.to_string()),
        ("invocation", |r| {
            how_called(r.strategy, r.invocation).to_string()
        }),
        ("K", |r| r.keys.to_string()),
        ("offered x", |r| r.offered.to_string()),
    ];
    let stats: [Stat<TrialRow>; 7] = [
        ("overshoot/key (bursts)", |r| Some(r.overshoot_bursts_mean)),
        ("max/key", |r| Some(r.overshoot_bursts_max)),
        ("baseline/key", |r| Some(r.baseline_bursts_mean)),
        ("lost admits", |r| Some(r.lost_admits as f64)),
        ("lost repl bytes", |r| Some(r.lost_repl_bytes as f64)),
        ("NOSCRIPT after", |r| Some(r.noscript_after as f64)),
        ("send lag max ms", |r| Some(r.send_lag_max_ms)),
    ];
    let mut out = summarize(&TRIALS.path(dir), &keys, &stats)?;
    out.push_str(
        "\nOvershoot per key: admitted over whole windows from the switch's window minus what the \
         limit allows there, in bursts; baseline: the same before the switch. Clients moved by \
         reconnecting at one instant (switch = client-reconnect in trials.csv). A case that did not \
         run as planned (its load later than one token's refill, window / burst, and in newer runs its \
         clients moving late in the switch's window) is run again, up to 3 attempts (attempts in \
         trials.csv; the run's notes say what went off plan).\n",
    );
    out.push_str(&sentinel_clients(dir)?);
    Ok(out)
}

/// The Sentinel variants' clients, one line per variant and case (means over its clients);
/// nothing for a run without them (clients.csv absent or empty).
fn sentinel_clients(dir: &Path) -> Result<String, AnalysisError> {
    if !CLIENTS.path(dir).exists() {
        return Ok(String::new());
    }
    let rows = CLIENTS.read(dir)?;
    if rows.is_empty() {
        return Ok(String::new());
    }
    let keys: [Key<ClientRow>; 5] = [
        ("variant", |r| csv_text(&r.variant)),
        ("strategy", |r| r.strategy.to_string()),
        ("invocation", |r| {
            how_called(r.strategy, r.invocation).to_string()
        }),
        ("K", |r| r.keys.to_string()),
        ("down-after ms", |r| r.down_after_ms.to_string()),
    ];
    let stats: [Stat<ClientRow>; 7] = [
        ("promoted ms", |r| Some(r.promoted_ms)),
        ("client moved ms", |r| r.rediscovered_ms),
        ("asks", |r| Some(r.asks as f64)),
        ("failed checks", |r| Some(r.failed as f64)),
        ("of them READONLY", |r| Some(r.readonly as f64)),
        ("unavailable ms", |r| Some(r.unavailable_ms)),
        ("fail-open overshoot/key", |r| Some(r.overshoot_open_bursts)),
    ];
    let mut out = String::from(
        "\nSentinel variants, per client (8 per trial; n counts clients): from the failover's start \
         (SENTINEL FAILOVER sent, or the primary SIGKILLed) to the replica's promotion and to the \
         client's move to it; the Sentinels asked, checks that got no decision before the move (a \
         limiter failing open admits them unchecked), the longest span without a decision, and the \
         overshoot per key in bursts had those checks been admitted (seed 003's limiter fails open). \
         In trials.csv, switch = sentinel-rediscovery: the count after the switch runs through the \
         last client's move, and lost admits are those the old primary admitted after the promotion.\n\n",
    );
    out.push_str(&summary_table(&rows, &keys, &stats));
    Ok(out)
}

/// Each limiter process's sentinel-crash trial where its keys had no limiter longest: when it
/// decided again beside when the replica was promoted, and what became of the checks meanwhile
/// (failed: no limiter, from the first failed check to the next decision; or held by the library
/// until it decided); for a token bucket (the limit the trials count against) the largest
/// overshoot per key, negative when held checks admitted less than the limit.
pub fn verdicts(dir: &Path) -> Result<Vec<Verdict>, AnalysisError> {
    if !CLIENTS.path(dir).is_file() {
        return Ok(Vec::new());
    }
    let (clients, trials) = (CLIENTS.read(dir)?, TRIALS.read(dir)?);
    let mut out = Vec::new();
    for l in limiters::recorded(dir)? {
        let crash = |v: Variant| v == Variant::SentinelCrash;
        let mine = clients
            .iter()
            .filter(|c| c.strategy == l.strategy && crash(c.variant));
        let Some(worst) = mine.max_by(|a, b| a.unavailable_ms.total_cmp(&b.unavailable_ms)) else {
            continue;
        };
        let overshoot = (trials.iter())
            .filter(|t| t.strategy == l.strategy && crash(t.variant))
            .map(|t| t.overshoot_bursts_max)
            .fold(f64::NAN, f64::max);
        let overshoot = match l.algorithm == Algorithm::TokenBucket && overshoot.is_finite() {
            true => format!("; overshoot per key at most {} bursts", short(overshoot)),
            false => String::new(),
        };
        let held = worst.checks_between - worst.failed;
        let decided = match worst.rediscovered_ms {
            Some(ms) => format!("decided again {} ms after the crash", short(ms)),
            None => "never decided again after the crash".to_string(),
        };
        out.push(Verdict {
            limiter: l.strategy.to_string(),
            aspect: "failover: a crashed primary, found again by itself",
            value: format!(
                "{decided}, promoted at {} ms (down-after {} ms); of {} checks meanwhile {} failed \
                 (no limiter for {} ms), {held} held{overshoot}",
                short(worst.promoted_ms),
                worst.down_after_ms,
                worst.checks_between,
                worst.failed,
                short(worst.unavailable_ms),
            ),
        });
    }
    Ok(out)
}

/// Each limiter process's claim on a crashed primary: its own client finds the replica the
/// Sentinels promote and decides there, in every sentinel-crash trial it ran.
pub fn limiter_claims(at: &ClaimsAt) -> Result<Vec<LimiterClaim>, AnalysisError> {
    let of = at.of(CLIENTS.name(), "strategy")?;
    let claim = RowClaim {
        what: "decides-after-promotion",
        aspect: "failover: decides again after a promotion",
        text: "decides again after its primary is SIGKILLed: its own client finds the replica the \
               Sentinels promote and a check is decided there, in every trial"
            .to_string(),
        select: Select::from([("variant".to_string(), csv_text(&Variant::SentinelCrash))]),
        statistic: "rediscovered_ms",
        judge: Judge::AllAtLeast,
        published: 0.0,
        published_column: None,
        why: "no check was decided after the promotion (rediscovered_ms is empty): its client \
              kept to the old primary, or asked no Sentinel, until the trial's end",
    };
    Ok(at.as_promised(
        Promised::FollowsPromotion,
        of.of_every_row(claim).into_iter().collect(),
    ))
}
