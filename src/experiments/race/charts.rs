//! The race chart: admitted requests per (processes x in-flight) configuration and strategy,
//! one dot per trial, against the configured limit; it shows which limiters leak under races.

use super::RACE;
use crate::charts::read_file;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::RaceRow;
use crate::charts::spec::{color, limit_line, tag, Chart, Marker, Range, Ticks, RED};
use crate::charts::trials::{dash_spec, Category, Column, DashChart};
use crate::charts::{write_spec, ChartError};

const SIZE: (u32, u32) = (1200, 700);
const Y_LABEL_PX: u32 = 70;

/// One x-axis slot: a (scenario, processes, in_flight) configuration.
#[derive(Debug, PartialEq)]
pub(crate) struct Slot {
    key: (String, usize, usize),
    label: String,
    /// Distinct limits seen in this slot, in first-appearance order.
    limits: Vec<u64>,
    /// Admitted counts per trial, indexed like `Grouped::strategies`.
    admitted: Vec<Vec<u64>>,
}

/// Rows arranged for drawing: strategy order and slot order are both first-appearance,
/// with the "matrix" scenario's slots ahead of any other scenario's.
#[derive(Debug, PartialEq)]
pub(crate) struct Grouped {
    strategies: Vec<String>,
    slots: Vec<Slot>,
    max_checks: u64,
}

/// "1x500" for the matrix, "1x500 (seed 001)" for seeded scenarios, "1x500 (other)" otherwise.
fn slot_label(scenario: &str, processes: usize, in_flight: usize) -> String {
    let config = format!("{processes}x{in_flight}");
    match scenario {
        "matrix" => config,
        s => match s.strip_prefix("seed") {
            Some(n) => format!("{config} (seed {n})"),
            None => format!("{config} ({s})"),
        },
    }
}

/// Groups rows into slots and strategies (see `Grouped`); pure so it is unit-testable.
pub(crate) fn group(rows: &[RaceRow]) -> Grouped {
    let mut strategies: Vec<String> = Vec::new();
    for r in rows {
        let name = r.strategy.to_string();
        if !strategies.contains(&name) {
            strategies.push(name);
        }
    }
    let mut slots: Vec<Slot> = Vec::new();
    for r in rows {
        let key = (r.scenario.clone(), r.processes, r.in_flight);
        let idx = slots.iter().position(|s| s.key == key).unwrap_or_else(|| {
            let label = slot_label(&r.scenario, r.processes, r.in_flight);
            let (limits, admitted) = (Vec::new(), vec![Vec::new(); strategies.len()]);
            slots.push(Slot {
                key,
                label,
                limits,
                admitted,
            });
            slots.len() - 1
        });
        let slot = &mut slots[idx];
        if !slot.limits.contains(&r.limit) {
            slot.limits.push(r.limit);
        }
        // Every strategy was collected above, so the lookup always succeeds.
        if let Some(s) = strategies.iter().position(|s| *s == r.strategy.to_string()) {
            slot.admitted[s].push(r.admitted);
        }
    }
    // Stable sort: matrix first, other scenarios keep their first-appearance order.
    slots.sort_by_key(|s| s.key.0 != "matrix");
    let max_checks = rows.iter().map(|r| r.checks).max().unwrap_or(0);
    Grouped {
        strategies,
        slots,
        max_checks,
    }
}

/// Renders `dir/race.csv` into `dir/race.svg` and `dir/race.png`.
pub(crate) fn render(dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let grouped = group(&read_file(&RACE, dir)?);
    write_spec(dir, "race", &chart(&grouped))
}

/// Log y range: above 0, the limit (or smallest admitted) with room below, checks with room above.
fn y_range(g: &Grouped) -> (f64, f64) {
    let admitted: Vec<u64> = g.slots.iter().flat_map(|s| s.admitted.concat()).collect();
    let min_limit = g.slots.iter().flat_map(|s| s.limits.clone()).min();
    let min_limit = min_limit.unwrap_or(1) as f64;
    // Zero cannot sit on a log axis, so it does not pull the range down.
    let min_admitted = admitted.iter().filter(|a| **a > 0).min();
    let min_admitted = min_admitted.map_or(f64::MAX, |a| *a as f64);
    let lo = (min_limit / 2.0).min(min_admitted / 1.5).max(0.5);
    let top = g.max_checks.max(admitted.into_iter().max().unwrap_or(0)) as f64;
    (lo, (top.max(min_limit) * 1.3).max(lo * 4.0))
}

/// The chart spec; `Grouped` must hold at least one slot.
fn chart(g: &Grouped) -> Chart {
    let (lo, hi) = y_range(g);
    let limits: BTreeSet<u64> = g.slots.iter().flat_map(|s| s.limits.clone()).collect();
    let n = g.slots.len();
    // Limit: one segment per slot so differing limits per configuration stay honest.
    let mut marks = Vec::new();
    for (i, slot) in g.slots.iter().enumerate() {
        for &limit in &slot.limits {
            let (x, y) = (i as f64, (limit as f64).max(lo));
            marks.push(limit_line((x - 0.5, y), (x + 0.5, y)));
        }
    }
    let tags = limits
        .iter()
        .map(|&l| tag((n as f64 - 0.5, (l as f64).max(lo)), "limit"));
    // One column per strategy; a darker separator where the scenario changes (matrix -> seeded).
    let categories = (g.slots.iter())
        .map(|slot| {
            let columns = (slot.admitted.iter().enumerate())
                .map(|(s, trials)| {
                    let trials = trials.iter().map(|&a| a as f64).collect();
                    Column::new(color(s), trials, |_| String::new())
                })
                .collect();
            (
                Category::new(slot.label.clone(), columns),
                slot.key.0.clone(),
            )
        })
        .collect();
    let limit_text: Vec<String> = limits.iter().map(u64::to_string).collect();
    dash_spec(DashChart {
        size: SIZE,
        title: format!(
            "race: admitted per configuration (limit = {}), each dot one trial",
            limit_text.join(", ")
        ),
        x_desc: "processes x in-flight per process".into(),
        y_desc: "admitted (log)".into(),
        y: Range::Log(lo, hi),
        y_ticks: Ticks::Auto(11, |v| format!("{v:.0}")),
        y_label_px: Y_LABEL_PX,
        series: (g.strategies.iter().enumerate())
            .map(|(s, name)| (name.clone(), color(s)))
            .collect(),
        legend_extra: vec![(Marker::Dashed(RED), "limit".into())],
        categories,
        marks,
        over: tags.collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows from "scenario,strategy,processes,in_flight,admitted" lines (checks 1000, limit 100);
    /// the columns are deliberately in a different order than the real CSV.
    fn rows(lines: &[&str]) -> Vec<RaceRow> {
        let body: String = lines
            .iter()
            .map(|l| format!("{l},1000,100,0,0,0,x,1\n"))
            .collect();
        let header = "scenario,strategy,processes,in_flight,admitted,checks,limit,trial,denied,errors,final_state,\
elapsed_ms";
        let csv = format!("{header}\n{body}");
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        reader.deserialize().collect::<Result<_, _>>().unwrap()
    }

    #[test]
    fn group_orders_by_first_appearance_with_matrix_first() {
        let g = group(&rows(&[
            "seed001,naive-window,1,500,500",
            "matrix,lua-bucket,4,8,100",
            "matrix,naive-bucket,1,1,100",
            "matrix,lua-bucket,1,1,100",
            "matrix,naive-bucket,4,8,300",
            "matrix,naive-bucket,4,8,310",
        ]));
        assert_eq!(g.strategies, ["naive-window", "lua-bucket", "naive-bucket"]);
        let labels: Vec<&str> = g.slots.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["4x8", "1x1", "1x500 (seed 001)"]);
        assert_eq!(g.slots[0].admitted, vec![vec![], vec![100], vec![300, 310]]);
        assert_eq!(g.slots[0].limits, vec![100]);
        assert_eq!(g.max_checks, 1000);
    }

    #[test]
    fn y_range_spans_half_limit_to_checks() {
        let g = group(&rows(&[
            "matrix,lua-bucket,1,1,100",
            "matrix,lua-bucket,1,2,40",
        ]));
        let (lo, hi) = y_range(&g);
        assert!((lo - 40.0 / 1.5).abs() < 1e-9, "{lo}");
        assert!((hi - 1300.0).abs() < 1e-9, "{hi}");
    }

    /// The real race.csv layout plus an unknown trailing column, which must be ignored.
    const CSV: &str = "\
scenario,strategy,processes,in_flight,trial,checks,admitted,denied,errors,limit,final_state,elapsed_ms,note
matrix,naive-bucket,1,1,0,1000,100,900,0,100,0,12.5,x
matrix,naive-bucket,1,2,0,1000,200,800,0,100,0,10.1,x
matrix,lua-bucket,1,1,0,1000,100,900,0,100,0,9.0,x
matrix,lua-bucket,1,2,0,1000,100,900,0,100,0,9.0,x
seed001,naive-window,1,500,0,500,500,0,0,100,500,3.2,x
seed001,incr-window,1,500,0,500,100,400,0,100,500,3.1,x
";

    fn race_dir(root: &std::path::Path, csv: &str) -> PathBuf {
        let dir = root.join("race");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("race.csv"), csv).unwrap();
        dir
    }

    #[test]
    fn race_renders_svg_and_png() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = race_dir(tmp.path(), CSV);
        let paths = render(&dir).unwrap();
        assert_eq!(paths, vec![dir.join("race.svg"), dir.join("race.png")]);
        let svg = std::fs::read_to_string(dir.join("race.svg")).unwrap();
        assert!(svg.contains("<svg"));
        assert!(svg.contains("limit"));
        for s in ["naive-bucket", "lua-bucket", "naive-window", "incr-window"] {
            assert!(svg.contains(s), "svg lacks strategy {s}");
        }
        let png = std::fs::read(dir.join("race.png")).unwrap();
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
        assert!(!dir.join("race.svg.tmp").exists() && !dir.join("race.png.tmp").exists());
    }

    #[test]
    fn header_only_csv_is_empty_error() {
        let tmp = tempfile::tempdir().unwrap();
        let header = CSV.lines().next().unwrap();
        let dir = race_dir(tmp.path(), &format!("{header}\n"));
        let err = render(&dir).unwrap_err();
        assert!(
            matches!(err, ChartError::Empty(ref p) if p.ends_with("race.csv")),
            "{err}"
        );
        assert!(!dir.join("race.svg").exists());
    }
}
