//! scripts's summary for REPORT.md: cost per mode, the survival matrix (event x mode), and the
//! flush runs before and after the flush.

use super::{CostRow, CustomSurvivalRow, FlushRow, SurvivalRow};
use super::{COSTS, CUSTOM_SURVIVAL, FLUSH, SURVIVAL};
use crate::analysis::claims::{Basis, Judge, LimiterClaim};
use crate::analysis::table::{summary_table, Key, Stat};
use crate::analysis::AnalysisError;
use crate::experiments::limiters::{self, ClaimsAt, Verdict};
use crate::limiter::custom::promise::Promised;
use crate::record::csv_text;
use std::path::Path;

/// The three tables, each under a line saying what it is.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let keys: [Key<CostRow>; 1] = [("mode", |r| r.mode.to_string())];
    let stats: [Stat<CostRow>; 7] = [
        ("decisions/s", |r| Some(r.decisions_per_s)),
        ("Redis CPU µs/decision", |r| Some(r.cpu_us_per_decision)),
        ("busy %", |r| Some(r.redis_busy_pct)),
        ("µs per call", |r| Some(r.usec_per_call)),
        ("round trips/decision", |r| Some(r.round_trips_per_decision)),
        ("bytes in/decision", |r| Some(r.bytes_in_per_decision)),
        ("bytes out/decision", |r| Some(r.bytes_out_per_decision)),
    ];
    let mut out = String::from("Cost (mean over runs; min-max in brackets):\n\n");
    out.push_str(&summary_table(&COSTS.read(dir)?, &keys, &stats));
    out.push_str(
        "\nSurvival: the first call after each event (outcome, round trips; SCRIPT EXISTS / \
         ratelab libraries on the called server before that call):\n\n",
    );
    out.push_str(&matrix(&SURVIVAL.read(dir)?));
    out.push_str("\nFlush under load, per run: before the flush (t < 0) and after it:\n\n");
    let rows = FLUSH.read(dir)?;
    let keys: [Key<FlushRow>; 4] = [
        ("mode", |r| r.mode.to_string()),
        ("fallback", |r| r.fallback.clone()),
        ("flush", |r| r.flush.clone()),
        ("t", |r| {
            if r.t_ms < 0 { "before" } else { "after" }.to_string()
        }),
    ];
    let stats: [Stat<FlushRow>; 5] = [
        ("decisions/bin", |r| Some(r.decisions as f64)),
        ("errors/bin", |r| Some(r.errors as f64)),
        ("fallback decisions/bin", |r| Some(r.noscript as f64)),
        ("p99 µs", |r| r.p99_us),
        ("max µs", |r| r.max_us),
    ];
    out.push_str(&summary_table(&rows, &keys, &stats));
    if CUSTOM_SURVIVAL.path(dir).is_file() {
        out.push_str(
            "\nCustom limiters, each in its own mode: the first call after each event:\n\n",
        );
        let keys: [Key<CustomSurvivalRow>; 4] = [
            ("custom limiter", |r| r.strategy.to_string()),
            ("mode", |r| r.mode.to_string()),
            ("event", |r| csv_text(&r.event)),
            ("outcome", |r| r.first_outcome.clone()),
        ];
        let stats: [Stat<CustomSurvivalRow>; 4] = [
            ("ok", |r| Some(f64::from(r.ok))),
            ("NOSCRIPT on the way", |r| Some(f64::from(r.noscript))),
            ("round trips", |r| Some(f64::from(r.round_trips))),
            ("decides again after ms", |r| r.recovered_ms),
        ];
        out.push_str(&summary_table(&CUSTOM_SURVIVAL.read(dir)?, &keys, &stats));
    }
    Ok(out)
}

/// NOSCRIPT survival: after which events each custom limiter's first call still decided, and
/// after which its fallback had to reload the script (a writing script is refused on a replica
/// whatever its mode, so that event is not counted).
pub fn verdicts(dir: &Path) -> Result<Vec<Verdict>, AnalysisError> {
    if !CUSTOM_SURVIVAL.path(dir).is_file() {
        return Ok(Vec::new());
    }
    let rows = CUSTOM_SURVIVAL.read(dir)?;
    let mut out = Vec::new();
    for l in limiters::recorded(dir)? {
        let mine: Vec<&CustomSurvivalRow> = (rows.iter())
            .filter(|r| r.strategy == l.strategy && r.event != super::Event::Replica)
            .collect();
        if mine.is_empty() {
            continue;
        }
        let names = |f: &dyn Fn(&CustomSurvivalRow) -> bool| -> Vec<String> {
            mine.iter()
                .filter(|r| f(r))
                .map(|r| csv_text(&r.event))
                .collect()
        };
        let failed = names(&|r| r.ok == 0);
        let reloaded = names(&|r| r.ok == 1 && r.noscript == 1);
        let mode = &mine[0].mode;
        let survived = mine.len() - failed.len();
        let mut value = format!("{mode}: survives {survived} of {} events", mine.len());
        if !failed.is_empty() {
            value.push_str(&format!("; fails after {}", failed.join(", ")));
        }
        if !reloaded.is_empty() {
            value.push_str(&format!("; reloaded after {}", reloaded.join(", ")));
        }
        let recovered: Vec<String> = (mine.iter())
            .filter_map(|r| {
                r.recovered_ms
                    .map(|ms| format!("{} in {ms:.0} ms", csv_text(&r.event)))
            })
            .collect();
        if !recovered.is_empty() {
            value.push_str(&format!(
                "; decides again by itself after {}",
                recovered.join(", ")
            ));
        }
        out.push(Verdict {
            limiter: l.strategy.to_string(),
            aspect: "NOSCRIPT survival",
            value,
        });
    }
    Ok(out)
}

/// Each custom limiter decides again after each survival event it went through (a replica's
/// refusal of a writing script is not counted): its first check after the event, or, for a limiter
/// process, a check within the wait its library is given.
pub fn limiter_claims(at: &ClaimsAt) -> Result<Vec<LimiterClaim>, AnalysisError> {
    let of = at.of(CUSTOM_SURVIVAL.name(), "strategy")?;
    let name = at.limiter.strategy.to_string();
    let mut events: Vec<&str> = Vec::new();
    for r in of.rows.iter().filter(|r| r.get("strategy") == Some(&name)) {
        // A run before the column was written cannot say when its limiter decided again.
        let (Some(event), true) = (r.get("event"), r.contains_key(DECIDED_AFTER)) else {
            continue;
        };
        if *event != csv_text(&super::Event::Replica) && !events.contains(&event.as_str()) {
            events.push(event);
        }
    }
    let wait = super::survival::RECOVERY_WAIT.as_millis();
    let claims = events.into_iter().map(|event| {
        let text = format!(
            "decides again after {event}: its first check after it, or (a limiter process) a check \
             asked every 50 ms within {wait} ms"
        );
        let aspect = "scripts: decides again after each event".to_string();
        let mut c = of.claim(
            &format!("{event}-decides-again"),
            aspect,
            text,
            DECIDED_AFTER,
        );
        c.claim.select.insert("event".into(), event.into());
        c.claim.judge = Judge::AllAtMost;
        c.claim.published = wait as f64;
        c.claim.why = Some(
            "its first check after the event failed and no later one decided within the wait \
             (decided_after_ms is empty; the error column says what its library answered)"
                .into(),
        );
        c.claim.basis = Some(Basis::Observed);
        (event == csv_text(&super::Event::Promoted), c)
    });
    // Every event loses the script; the promotion also moves the primary.
    let (promoted, lost): (Vec<_>, Vec<_>) = claims.partition(|(promoted, _)| *promoted);
    let lost = lost.into_iter().map(|(_, c)| c).collect();
    let promoted = promoted.into_iter().map(|(_, c)| c).collect();
    let promoted = at.as_promised(Promised::FollowsPromotion, promoted);
    let mut out = at.as_promised(Promised::SurvivesScriptLoss, lost);
    out.extend(at.as_promised(Promised::SurvivesScriptLoss, promoted));
    Ok(out)
}

/// ms from the event to the first decision after it.
const DECIDED_AFTER: &str = "decided_after_ms";

/// Events down, modes across; each cell the first call's outcome and round trips, with what the
/// called server held (script cached / library loaded) before it.
pub(super) fn matrix(rows: &[SurvivalRow]) -> String {
    let mut modes: Vec<String> = Vec::new();
    let mut events: Vec<String> = Vec::new();
    for r in rows {
        let (mode, event) = (r.mode.to_string(), csv_text(&r.event));
        if !modes.contains(&mode) {
            modes.push(mode);
        }
        if !events.contains(&event) {
            events.push(event);
        }
    }
    let mut out = format!(
        "| event | {} |\n|---|{}\n",
        modes.join(" | "),
        "---|".repeat(modes.len())
    );
    for event in &events {
        let cells: Vec<String> = (modes.iter())
            .map(|mode| {
                let found = rows
                    .iter()
                    .find(|r| r.mode.to_string() == *mode && csv_text(&r.event) == *event);
                found.map_or_else(String::new, cell)
            })
            .collect();
        out.push_str(&format!("| {event} | {} |\n", cells.join(" | ")));
    }
    out
}

fn cell(r: &SurvivalRow) -> String {
    let trips = match r.round_trips {
        1 => "1 trip".to_string(),
        n => format!("{n} trips"),
    };
    format!(
        "{} ({trips}; script {}, lib {})",
        r.first_outcome, r.script_exists_after, r.libraries_after
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::scripts::Event;
    use crate::limiter::Invocation;

    fn row(mode: Invocation, event: Event, outcome: &str, trips: u32) -> SurvivalRow {
        SurvivalRow::example(mode, event, outcome, trips)
    }

    #[test]
    fn the_matrix_puts_events_down_and_modes_across() {
        let rows = [
            row(
                Invocation::Evalsha,
                Event::RestartNoPersistence,
                "noscript",
                1,
            ),
            row(
                Invocation::EvalshaEval,
                Event::RestartNoPersistence,
                "ok",
                2,
            ),
            row(Invocation::Evalsha, Event::Replica, "noscript", 1),
        ];
        let table = matrix(&rows);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[0], "| event | evalsha | evalsha-eval |");
        assert_eq!(
            lines[2],
            "| restart-no-persistence | noscript (1 trip; script 0, lib 0) | ok (2 trips; script 0, lib 0) |"
        );
        assert_eq!(
            lines[3],
            "| replica | noscript (1 trip; script 0, lib 0) |  |"
        );
    }
}
