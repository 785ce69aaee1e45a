//! The calibration chart: ops/s per command for ratelab's load generator next to
//! redis-benchmark's, one dot per pair of back-to-back runs, with the ratelab/redis-benchmark
//! ratio above each command, so a slow harness cannot pass for a slow limiter.

use super::CALIBRATE;
use crate::charts::read_file;
use std::path::{Path, PathBuf};

use super::CalibrateRow;
use crate::charts::bars::si;
use crate::charts::spec::{color, Marker, BLACK};
use crate::charts::trials::{self, Category, Column, TrialChart};
use crate::charts::{index_of, mean, write_spec, ChartError};

/// The ratio above each command is `OURS / REFERENCE` (mean ops/s).
const OURS: &str = "ratelab";
const REFERENCE: &str = "redis-benchmark";

/// Rows arranged for drawing: `ops[command][tool]` holds one ops/s per pair, and commands and
/// tools keep their first-appearance order.
#[derive(Debug, PartialEq)]
pub(crate) struct Grouped {
    commands: Vec<String>,
    tools: Vec<String>,
    ops: Vec<Vec<Vec<f64>>>,
}

/// A command at a depth, as its slot is labelled.
fn slot_label(r: &CalibrateRow) -> String {
    format!("{} depth {}", r.command, r.depth)
}

/// Groups rows by command and depth, and tool; pure so it is unit-testable.
pub(crate) fn group(rows: &[CalibrateRow]) -> Grouped {
    let (mut commands, mut tools) = (Vec::new(), Vec::new());
    for r in rows {
        index_of(&mut commands, slot_label(r));
        index_of(&mut tools, r.tool.clone());
    }
    let mut ops = vec![vec![Vec::new(); tools.len()]; commands.len()];
    for r in rows {
        let c = index_of(&mut commands, slot_label(r));
        let t = index_of(&mut tools, r.tool.clone());
        if r.ops_per_s.is_finite() {
            ops[c][t].push(r.ops_per_s);
        }
    }
    Grouped {
        commands,
        tools,
        ops,
    }
}

/// Mean ratelab ops/s over mean redis-benchmark ops/s for command `c`, when both ran.
fn ratio(g: &Grouped, c: usize) -> Option<f64> {
    let tool_mean = |name: &str| {
        let t = g.tools.iter().position(|t| t == name)?;
        mean(&g.ops[c][t])
    };
    let (ours, reference) = (tool_mean(OURS)?, tool_mean(REFERENCE)?);
    (reference > 0.0).then(|| ours / reference)
}

/// Renders `dir/calibrate.csv` into `dir/calibrate.svg` and `dir/calibrate.png`.
pub(crate) fn render(dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let g = group(&read_file(&CALIBRATE, dir)?);
    write_spec(dir, "calibrate", &trials::spec(chart(&g)))
}

/// One slot per command, one bar per tool, the ratio above the slot.
fn chart(g: &Grouped) -> TrialChart<'_> {
    let categories = g.commands.iter().enumerate().map(|(c, command)| {
        let columns = g.ops[c].iter().enumerate().map(|(t, ops)| {
            let note = if ops.is_empty() { "no runs" } else { "" };
            Column::new(color(t), ops.clone(), |_| note.to_string())
        });
        let note = ratio(g, c).map_or(String::new(), |r| format!("{r:.2}x"));
        Category {
            label: command.clone(),
            columns: columns.collect(),
            note,
        }
    });
    let mut legend: Vec<(Marker, &str)> = g
        .tools
        .iter()
        .enumerate()
        .map(|(t, tool)| (Marker::Dot(color(t)), tool.as_str()))
        .collect();
    legend.push((Marker::Dot(BLACK), "one pair of runs"));
    TrialChart {
        title: "calibrate: ops/s per command and depth, ratelab vs redis-benchmark",
        subtitle: format!(
            "bar = mean over pairs; number above each command = {OURS} / {REFERENCE} (mean ops/s)"
        ),
        x_desc: "command, requests in flight per connection",
        y_desc: "ops/s",
        y_format: si,
        legend,
        reference: None,
        categories: categories.collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::csv_dir;
    use std::fs;

    const HEADER: &str =
        "command,tool,pair,depth,ops,ops_per_s,client_cpu_s,client_cpu_us_per_op,duration_s,clients,keys,\
redis_cpu_us_per_op,redis_busy_pct";
    const ROWS: &str = "\
GET,ratelab,0,1,900000,90000,4.1,4.5,10,50,1,7,80
GET,redis-benchmark,0,1,1000000,100000,3.0,3.0,10,50,1,7,80
GET,ratelab,1,1,920000,92000,4.1,4.5,10,50,1,7,80
GET,redis-benchmark,1,1,980000,98000,3.0,3.0,10,50,1,7,80
EVALSHA,ratelab,0,16,500000,50000,4.0,8.0,10,50,1,7,80
EVALSHA,redis-benchmark,0,16,520000,52000,3.1,6.0,10,50,1,7,80
";

    #[test]
    fn renders_svg_and_png_with_commands_tools_and_ratio() {
        let tmp = tempfile::tempdir().unwrap();
        let csv = format!("{HEADER}\n{ROWS}");
        let dir = csv_dir(tmp.path(), "calibrate", CALIBRATE.name(), &csv);
        let paths = render(&dir).unwrap();
        assert_eq!(
            paths,
            ["calibrate.svg", "calibrate.png"].map(|n| dir.join(n))
        );
        assert!(paths.iter().all(|p| p.is_file()));
        let svg = fs::read_to_string(&paths[0]).unwrap();
        // 91000 / 99000 and 50000 / 52000.
        for s in [
            "GET depth 1",
            "EVALSHA depth 16",
            "ratelab",
            "redis-benchmark",
            "0.92x",
            "0.96x",
        ] {
            assert!(svg.contains(s), "svg lacks {s}");
        }
    }

    #[test]
    fn header_only_is_empty() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = csv_dir(
            tmp.path(),
            "calibrate",
            CALIBRATE.name(),
            &format!("{HEADER}\n"),
        );
        let err = render(&dir).unwrap_err();
        assert!(matches!(err, ChartError::Empty(_)), "{err}");
    }

    #[test]
    fn no_ratio_without_both_tools() {
        let rows = [("GET", "ratelab", 5.0), ("SET", "redis-benchmark", 4.0)];
        let rows: Vec<CalibrateRow> = rows
            .iter()
            .map(|&(c, t, o)| CalibrateRow {
                command: c.into(),
                tool: t.into(),
                pair: 0,
                depth: 1,
                ops: 0,
                ops_per_s: o,
                client_cpu_s: 0.0,
                client_cpu_us_per_op: 0.0,
                duration_s: 1.0,
                clients: 1,
                keys: 1,
                redis_cpu_us_per_op: 0.0,
                redis_busy_pct: 0.0,
                redis_waiting_for_cpu_pct: None,
                redis_idle_pct: None,
                client_cpu_pct: None,
                harness_steal_pct: None,
            })
            .collect();
        let g = group(&rows);
        assert_eq!(
            g.ops,
            vec![vec![vec![5.0], vec![]], vec![vec![], vec![4.0]]]
        );
        assert_eq!((ratio(&g, 0), ratio(&g, 1)), (None, None));
    }
}
