//! cost's summary for REPORT.md.

use super::CostRow;
use super::COST;
use crate::analysis::table::summary_table;
use crate::analysis::table::{short, Key, Stat};
use crate::analysis::AnalysisError;
use crate::experiments::limiters::{self, Verdict};
use std::fmt::Write as _;
use std::path::Path;

/// Throughput, Redis CPU and script time per strategy and variant, then the runs the claims do
/// not judge because the client, not Redis, set their rate.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let rows = COST.read(dir)?;
    let keys: [Key<CostRow>; 3] = [
        ("strategy", |r| r.strategy.to_string()),
        ("variant", |r| r.variant.clone()),
        ("client", |r| r.client.clone()),
    ];
    let stats: [Stat<CostRow>; 8] = [
        ("decisions/s", |r| Some(r.decisions_per_s)),
        ("Redis CPU µs/decision", |r| Some(r.cpu_us_per_decision)),
        ("busy %", |r| Some(r.redis_busy_pct)),
        ("idle %", |r| r.redis_idle_pct),
        ("µs per call", |r| Some(r.usec_per_call)),
        ("allowed", |r| Some(r.allowed as f64)),
        ("denied", |r| Some(r.denied as f64)),
        ("log entries/key", |r| r.log_entries_per_key),
    ];
    Ok(format!(
        "{}\n{}",
        summary_table(&rows, &keys, &stats),
        not_judged(&rows)
    ))
}

/// The runs whose rate the client set (Redis idle above the run's bar): shown, not judged.
fn not_judged(rows: &[CostRow]) -> String {
    let judged = rows.iter().filter(|r| r.rate_set_by == "redis").count();
    let mut out = format!(
        "Claims judge the {judged} of {} runs where Redis set the rate (rate_set_by = redis: \
        Redis idle, waiting for requests, at most the bar in this experiment's notes).",
        rows.len()
    );
    out.push('\n');
    let excluded: Vec<&CostRow> = rows.iter().filter(|r| r.rate_set_by != "redis").collect();
    if excluded.is_empty() {
        return out;
    }
    out.push_str("Not judged:\n\n| strategy | variant | run | client | Redis idle % | Redis busy % | why |\n");
    out.push_str("|---|---|---|---|---|---|---|\n");
    for r in excluded {
        let idle = r.redis_idle_pct.map_or("-".to_string(), short);
        let why = match r.rate_set_by.as_str() {
            "client" => "Redis waited for the client",
            _ => "Redis's idle share not measurable",
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {idle} | {} | {why} |",
            r.strategy,
            r.variant,
            r.run,
            r.client,
            short(r.redis_busy_pct)
        );
    }
    out
}

/// Redis CPU per decision of each custom limiter against its reference strategy's, both over the
/// same uniform keys and limit.
pub fn verdicts(dir: &Path) -> Result<Vec<Verdict>, AnalysisError> {
    let rows: Vec<CostRow> = COST.read(dir)?;
    let mut out = Vec::new();
    for l in limiters::recorded(dir)? {
        let uniform = |r: &CostRow| r.variant.is_empty() || r.variant == "reference";
        let of = |s| {
            limiters::mean_of(
                &rows,
                |r| r.strategy == s && uniform(r),
                |r| r.cpu_us_per_decision,
            )
        };
        out.push(Verdict {
            limiter: l.strategy.to_string(),
            aspect: "Redis CPU / decision vs reference",
            value: limiters::against_reference(of(l.strategy), of(l.reference), l.reference, "µs"),
        });
    }
    Ok(out)
}
