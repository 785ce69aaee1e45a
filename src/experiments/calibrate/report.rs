//! calibrate's summary for REPORT.md.

use super::CalibrateRow;
use super::CALIBRATE;
use crate::analysis::stats::{median, Summary};
use crate::analysis::table::{short, summary_table, Key, Stat};
use crate::analysis::AnalysisError;
use std::fmt::Write as _;
use std::path::Path;

const REFERENCE: &str = "redis-benchmark";

/// The two tools' ratios per command and depth first, then both side by side.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let rows = CALIBRATE.read(dir)?;
    let keys: [Key<CalibrateRow>; 3] = [
        ("command", |r| r.command.clone()),
        ("depth", |r| r.depth.to_string()),
        ("tool", |r| r.tool.clone()),
    ];
    let stats: [Stat<CalibrateRow>; 9] = [
        ("ops/s", |r| Some(r.ops_per_s)),
        ("client CPU µs/op", |r| Some(r.client_cpu_us_per_op)),
        ("duration s", |r| Some(r.duration_s)),
        ("Redis CPU µs/op", |r| Some(r.redis_cpu_us_per_op)),
        ("Redis busy %", |r| Some(r.redis_busy_pct)),
        ("Redis waiting for a CPU %", |r| r.redis_waiting_for_cpu_pct),
        ("Redis idle %", |r| r.redis_idle_pct),
        ("client CPU % of wall", |r| r.client_cpu_pct),
        ("harness steal %", |r| r.harness_steal_pct),
    ];
    Ok(format!(
        "{}\n{}",
        ratios(&rows),
        summary_table(&rows, &keys, &stats)
    ))
}

/// Per command, depth and client (ratelab's lean client, its redis-rs path): its ops/s and client
/// CPU per op over redis-benchmark's, pair by pair (the runs of a pair side by side, minutes from
/// the next pair on a shared machine): the median of the pairs' ratios and their range, so one
/// stalled pair shows as a range, not a mean. Redis busy % and idle % (waiting for requests)
/// under each tool are the means of its runs.
fn ratios(rows: &[CalibrateRow]) -> String {
    let mut groups: Vec<(String, usize, String)> = Vec::new();
    for r in rows.iter().filter(|r| r.tool != REFERENCE) {
        let group = (r.command.clone(), r.depth, r.tool.clone());
        if !groups.contains(&group) {
            groups.push(group);
        }
    }
    let mut out = String::from(
        "| command | depth | client | ops/s client / redis-benchmark | client CPU per op client / \
        redis-benchmark | Redis busy % (client) | Redis busy % (redis-benchmark) | \
        Redis idle % (client) | Redis idle % (redis-benchmark) |\n\
        |---|---|---|---|---|---|---|---|---|\n",
    );
    for (command, depth, tool) in groups {
        let (command, tool) = (command.as_str(), tool.as_str());
        let runs = |of: &str| -> Vec<&CalibrateRow> {
            (rows.iter())
                .filter(|r| r.command == command && r.depth == depth && r.tool == of)
                .collect()
        };
        let (mine, reference) = (runs(tool), runs(REFERENCE));
        let ratio = |f: fn(&CalibrateRow) -> f64| {
            let per_pair: Vec<f64> = (mine.iter())
                .filter_map(|a| {
                    let b = reference.iter().find(|b| b.pair == a.pair)?;
                    (f(b) > 0.0).then(|| f(a) / f(b))
                })
                .collect();
            match (Summary::of(&per_pair), median(&per_pair)) {
                (Some(s), Some(mid)) if s.n > 1 => {
                    format!("{mid:.2} ({:.2}-{:.2})", s.min, s.max)
                }
                (Some(s), _) => format!("{:.2}", s.mean),
                _ => "-".to_string(),
            }
        };
        let mean = |of: &[&CalibrateRow], f: fn(&CalibrateRow) -> Option<f64>| {
            let v: Vec<f64> = of.iter().filter_map(|r| f(r)).collect();
            Summary::of(&v).map_or("-".to_string(), |s| short(s.mean))
        };
        let _ = writeln!(
            out,
            "| {command} | {depth} | {tool} | {} | {} | {} | {} | {} | {} |",
            ratio(|r| r.ops_per_s),
            ratio(|r| r.client_cpu_us_per_op),
            mean(&mine, |r| Some(r.redis_busy_pct)),
            mean(&reference, |r| Some(r.redis_busy_pct)),
            mean(&mine, |r| r.redis_idle_pct),
            mean(&reference, |r| r.redis_idle_pct)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const OURS: &str = "ratelab";

    fn row(command: &str, tool: &str, depth: usize, ops_per_s: f64, cpu: f64) -> CalibrateRow {
        CalibrateRow {
            command: command.into(),
            tool: tool.into(),
            pair: 0,
            depth,
            ops: 1000,
            ops_per_s,
            client_cpu_s: 1.0,
            client_cpu_us_per_op: cpu,
            duration_s: 1.0,
            clients: 16,
            keys: 10,
            redis_cpu_us_per_op: 1.0,
            redis_busy_pct: 90.0,
            redis_waiting_for_cpu_pct: Some(1.0),
            redis_idle_pct: Some(9.0),
            client_cpu_pct: None,
            harness_steal_pct: None,
        }
    }

    #[test]
    fn ratios_are_ratelab_over_redis_benchmark_per_command_and_depth() {
        let rows = [
            row("GET", OURS, 1, 120.0, 8.0),
            row("GET", REFERENCE, 1, 100.0, 10.0),
            row("GET", OURS, 16, 300.0, 1.0),
        ];
        let table = ratios(&rows);
        assert!(
            table.contains("| GET | 1 | ratelab | 1.20 | 0.80 | 90 | 90 | 9 | 9 |"),
            "{table}"
        );
        assert!(
            table.contains("| GET | 16 | ratelab | - | - | 90 | - | 9 | - |"),
            "{table}"
        );
    }

    #[test]
    fn the_redis_rs_path_has_a_line_of_its_own() {
        let rows = [
            row("GET", OURS, 1, 120.0, 8.0),
            row("GET", "redis-rs", 1, 90.0, 12.0),
            row("GET", REFERENCE, 1, 100.0, 10.0),
        ];
        let table = ratios(&rows);
        assert!(
            table.contains("| GET | 1 | redis-rs | 0.90 | 1.20 | 90 | 90 | 9 | 9 |"),
            "{table}"
        );
        assert!(!table.contains("| GET | 1 | redis-benchmark |"), "{table}");
    }

    #[test]
    fn ratios_are_the_median_of_the_pairs_with_their_range() {
        let paired = |pair, ours: f64, theirs: f64| {
            let mut a = row("EVALSHA", OURS, 16, ours, 1.0);
            let mut b = row("EVALSHA", REFERENCE, 16, theirs, 1.0);
            (a.pair, b.pair) = (pair, pair);
            [a, b]
        };
        // Pair 1 stalled under ratelab: the median is the other pairs', the range shows the stall.
        let rows: Vec<CalibrateRow> = [paired(0, 110.0, 100.0), paired(1, 40.0, 100.0)]
            .into_iter()
            .chain([paired(2, 105.0, 100.0)])
            .flatten()
            .collect();
        let table = ratios(&rows);
        assert!(
            table.contains(
                "| EVALSHA | 16 | ratelab | 1.05 (0.40-1.10) | 1.00 (1.00-1.00) | 90 | 90 | 9 | 9 |"
            ),
            "{table}"
        );
    }
}
