//! outage's summary for REPORT.md: per run and phase, then the breaker sweep when it was run;
//! and what it says about each custom limiter (its dead and hung checks beside the built-in's).

use super::{Phase, PhaseRow, SweepRow, PHASES, SWEEP};
use crate::analysis::claims::{Judge, LimiterClaim, Select};
use crate::analysis::table::{summary_table, Key, Stat};
use crate::analysis::AnalysisError;
use crate::experiments::limiters::{self, ClaimsAt, Promising, RowClaim, Verdict};
use crate::limiter::custom::promise::Promised;
use crate::limiter::Strategy;
use crate::record::csv_text;
use crate::store::Reconnect;
use std::path::Path;

/// Per run and phase (phases.csv), then the breaker sweep when it was run. A run with custom
/// limiters says who decided in a first column.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let rows = PHASES.read(dir)?;
    let mut keys: Vec<Key<PhaseRow>> = Vec::new();
    if rows
        .iter()
        .any(|r| r.limiter.is_some_and(Strategy::is_custom))
    {
        keys.push(("limiter", |r| {
            r.limiter.map_or(String::new(), |l| l.to_string())
        }));
    }
    keys.extend::<[Key<PhaseRow>; 4]>([
        ("policy", |r| csv_text(&r.policy)),
        ("breaker", |r| r.breaker.clone()),
        ("reconnect", |r| csv_text(&r.reconnect)),
        ("phase", |r| r.phase.to_string()),
    ]);
    let stats: [Stat<PhaseRow>; 14] = [
        ("median ms", |r| Some(r.median_ms)),
        ("p99 ms", |r| Some(r.p99_ms)),
        ("max ms", |r| Some(r.max_ms)),
        ("allowed", |r| Some(r.allowed as f64)),
        ("degraded allowed", |r| Some(r.degraded_allowed as f64)),
        ("degraded denied", |r| Some(r.degraded_denied as f64)),
        ("paid the budget", |r| Some(r.paid_budget as f64)),
        ("breaker open", |r| Some(r.short_circuited as f64)),
        ("checks to 1st normal", |r| {
            r.first_normal_seq.map(|n| n as f64)
        }),
        ("ms to 1st normal", |r| r.first_normal_ms),
        ("ms to 1st normal after the phase", |r| r.recovered_ms),
        ("reconnects", |r| Some(r.reconnects as f64)),
        ("script reloads", |r| Some(r.script_reloads as f64)),
        ("suspended", |r| Some(r.suspended_checks as f64)),
    ];
    let mut out = summary_table(&rows, &keys, &stats);
    if SWEEP.path(dir).is_file() {
        out.push_str("\nBreaker sweep (mean over trials; min-max in brackets):\n\n");
        let keys: [Key<SweepRow>; 4] = [
            ("breaker", |r| r.breaker.clone()),
            ("k", |r| r.k.to_string()),
            ("cooldown_ms", |r| r.cooldown_ms.to_string()),
            ("probe by", |r| r.probe_by.clone()),
        ];
        let stats: [Stat<SweepRow>; 7] = [
            ("paid the budget", |r| Some(r.paid_budget as f64)),
            ("probes carried by checks", |r| Some(r.probes as f64)),
            ("background probes", |r| Some(r.background_probes as f64)),
            ("users' wait while hung ms", |r| Some(r.hung_cost_ms)),
            ("blind checks", |r| Some(r.blind_checks as f64)),
            ("blind ms", |r| r.blind_ms),
            ("suspended", |r| Some(r.suspended_checks as f64)),
        ];
        out.push_str(&summary_table(&SWEEP.read(dir)?, &keys, &stats));
    }
    Ok(out)
}

/// Each custom limiter's dead and hung checks with the seed's client (breaker off, reconnecting in
/// the check): the median per policy beside the built-in's (a client may answer one policy's
/// outage from a not-ready flag and wait out the other's), and how many the policy answered.
pub fn verdicts(dir: &Path) -> Result<Vec<Verdict>, AnalysisError> {
    let rows = PHASES.read(dir)?;
    let seeds_client = |r: &PhaseRow| r.breaker == "off" && r.reconnect == Reconnect::InCheck;
    let builtin = (rows.iter()).find_map(|r| r.limiter.filter(|l| !l.is_custom()));
    let mut out = Vec::new();
    for l in limiters::recorded(dir)? {
        for (aspect, phase) in [
            ("outage: dead check median", Phase::Dead),
            ("outage: hung check median", Phase::Hung),
        ] {
            let of = |limiter: Option<Strategy>| -> Vec<&PhaseRow> {
                (rows.iter())
                    .filter(|r| r.limiter == limiter && r.phase == phase && seeds_client(r))
                    .collect()
            };
            let mine = of(Some(l.strategy));
            let (by_policy, checks) = mine.iter().fold((0, 0), |(p, n), r| {
                (p + r.degraded_allowed + r.degraded_denied, n + r.checks)
            });
            let medians = |rows: &[&PhaseRow]| -> String {
                let each = rows
                    .iter()
                    .map(|r| format!("{} {:.2}", csv_text(&r.policy), r.median_ms));
                each.collect::<Vec<_>>().join(", ")
            };
            let reference = match builtin {
                Some(b) => format!("{b}: {} ms", medians(&of(Some(b)))),
                None => "no built-in runs".into(),
            };
            out.push(Verdict {
                limiter: l.strategy.to_string(),
                aspect,
                value: format!(
                    "{} ms ({reference}); {by_policy} of {checks} answered by policy",
                    medians(&mine)
                ),
            });
        }
    }
    Ok(out)
}

/// Each custom limiter decides while Redis is healthy, and decides again by itself after Redis
/// restarts and after it hangs (unless its manifest disclaims `reconnects`): a normal answer
/// inside the phase, or (after a fault) one of the checks asked after it until Redis answers. When
/// its manifest promises to fail open or closed, every check while Redis is dead or hung is
/// admitted, or denied, by the library itself. Read on the seed's client (breaker off): a
/// breaker's open state is ratelab's answer, not the library's.
pub fn limiter_claims(at: &ClaimsAt) -> Result<Vec<LimiterClaim>, AnalysisError> {
    let of = at.of(PHASES.name(), "limiter")?;
    let healthy: Vec<LimiterClaim> = (of.of_every_row(decides(Phase::Healthy)))
        .into_iter()
        .collect();
    let recovered = [Phase::Restarted, Phase::Resumed].map(decides);
    let recovered = recovered
        .into_iter()
        .filter_map(|c| of.of_every_row(c))
        .collect();
    let mut claims = healthy;
    claims.extend(at.as_promised(Promised::Reconnects, recovered));
    if let Promising::Made(side) = at.promise(Promised::Fails) {
        let side = side.value.clone();
        let fails = [Phase::Dead, Phase::Hung].map(|phase| fails(phase, &side));
        let fails = fails
            .into_iter()
            .filter_map(|c| of.of_every_row(c))
            .collect();
        claims.extend(at.as_promised(Promised::Fails, fails));
    }
    Ok(claims)
}

/// The seed's client, on which the library's own behaviour is read: no breaker of ratelab's.
fn own_client(phase: Phase) -> Select {
    Select::from([
        ("phase".to_string(), phase.to_string()),
        ("breaker".to_string(), "off".to_string()),
        ("reconnect".to_string(), csv_text(&Reconnect::InCheck)),
    ])
}

/// It decides in `phase`, or (after a fault) on a check asked after it.
fn decides(phase: Phase) -> RowClaim<'static> {
    let (what, aspect, when) = match phase {
        Phase::Healthy => (
            "decides-while-healthy",
            "outage: decides while healthy",
            "while Redis is healthy, before any fault",
        ),
        Phase::Restarted => (
            "decides-after-restart",
            "outage: decides again after the restart",
            "again by itself after Redis's restart",
        ),
        _ => (
            "decides-after-hang",
            "outage: decides again after the hang",
            "again by itself after Redis's hang",
        ),
    };
    RowClaim {
        what,
        aspect,
        text: format!(
            "decides {when}: a check of the {phase} phase answered by Redis, or one asked after \
             the phase until Redis answers"
        ),
        select: own_client(phase),
        statistic: DECIDED_AGAIN,
        judge: Judge::AllAtLeast,
        published: 0.0,
        published_column: None,
        why: match phase {
            Phase::Healthy => {
                "no check was answered by Redis even before any fault (first_normal_ms and \
                 recovered_ms are empty): outage.csv's failure column says what its checks met, \
                 an error of its script on this run's limit or a script its server never loaded"
            }
            _ => {
                "no check of the phase was answered by Redis, nor one asked after it: \
                 first_normal_ms and recovered_ms are empty, so its library did not reconnect or \
                 reload by itself"
            }
        },
    }
}

/// While Redis is dead or hung, the library itself admits (`open`) or denies (`closed`) every
/// check, as its documentation promises.
fn fails(phase: Phase, side: &str) -> RowClaim<'static> {
    let open = side == "open";
    let dead = phase == Phase::Dead;
    RowClaim {
        what: match (open, dead) {
            (true, true) => "fails-open-while-dead",
            (true, false) => "fails-open-while-hung",
            (false, true) => "fails-closed-while-dead",
            (false, false) => "fails-closed-while-hung",
        },
        aspect: match dead {
            true => "outage: fails as promised while dead",
            false => "outage: fails as promised while hung",
        },
        text: format!(
            "fails {side} by itself while Redis is {phase}: the library {} every check of the phase",
            if open { "admits" } else { "denies" }
        ),
        select: own_client(phase),
        statistic: if open { "allowed" } else { "denied" },
        judge: Judge::AllEqual,
        published: 0.0,
        published_column: Some("checks"),
        why: match open {
            true => "some checks of the phase were not admitted by the library: denied, or left to \
                     the policy (degraded_allowed, degraded_denied) because it answered an error",
            false => "some checks of the phase were not denied by the library: admitted, or left \
                      to the policy (degraded_allowed, degraded_denied) because it answered an error",
        },
    }
}

/// ms to the first normal answer inside the phase, else the one after it (the recovery wait).
const DECIDED_AGAIN: &str = "first_normal_ms?recovered_ms";
