//! race's summary for REPORT.md.

use super::RaceRow;
use super::RACE;
use crate::analysis::table::summary_table;
use crate::analysis::table::{Key, Stat};
use crate::analysis::AnalysisError;
use crate::experiments::limiters::{self, Exact, Verdict};
use std::path::Path;

/// Admitted and the final state per scenario, strategy, P x F and limit.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let keys: [Key<RaceRow>; 4] = [
        ("scenario", |r| r.scenario.clone()),
        ("strategy", |r| r.strategy.to_string()),
        ("config", |r| format!("{}x{}", r.processes, r.in_flight)),
        ("limit", |r| r.limit.to_string()),
    ];
    let stats: [Stat<RaceRow>; 2] = [
        ("admitted", |r| Some(r.admitted as f64)),
        ("final state", |r| r.final_state.trim().parse().ok()),
    ];
    Ok(summary_table(&RACE.read(dir)?, &keys, &stats))
}

/// Exactness under concurrency: each custom limiter's trial farthest from the limit, either way
/// (refill 0, one window per trial: an exact limiter admits the limit), in the matrix and in seed
/// 001's burst (fixed windows).
pub fn verdicts(dir: &Path) -> Result<Vec<Verdict>, AnalysisError> {
    let rows: Vec<RaceRow> = RACE.read(dir)?;
    let mut out = Vec::new();
    for l in limiters::recorded(dir)? {
        let scenarios = [
            ("matrix", "race: admitted / exact"),
            ("seed001", "seed 001 burst: admitted / exact"),
        ];
        for (scenario, aspect) in scenarios {
            let mine = |r: &RaceRow| r.strategy == l.strategy && r.scenario == scenario;
            let exact = |r: &RaceRow| (r.admitted as f64, Exact::limit(r.limit, r.checks));
            let Some((worst, admitted, bound)) = limiters::farthest(&rows, mine, exact) else {
                continue;
            };
            let value = limiters::judged(admitted, bound);
            let at = format!("{}x{}", worst.processes, worst.in_flight);
            out.push(Verdict {
                limiter: l.strategy.to_string(),
                aspect,
                value: format!("{value} at {at}"),
            });
        }
    }
    Ok(out)
}
