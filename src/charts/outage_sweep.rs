//! The breaker sweep chart, seed 000's open question as a trade-off: x = how long the limiter kept
//! answering by policy after Redis was back (log ms), y = how long users waited in total while
//! Redis was hung (full-budget checks plus probes); one point per (K, cooldown) = mean over trials,
//! coloured by K, and the breaker-off point for scale.

use std::path::{Path, PathBuf};

use plotters::prelude::*;
use serde::Deserialize;

use super::axes::{custom_ticks, log_points};
use super::draw::{color, framed_canvas, Frame, Marker, FONT};
use super::place::draw_point_labels;
use super::{index_of, mean, plot_err, read_csv, write_chart, ChartError};

/// The sweep CSV the outage experiment writes into its dir.
pub(crate) const CSV_NAME: &str = "breaker_sweep.csv";
const SIZE: (u32, u32) = (1200, 750);
const POINT_PX: i32 = 6;
const LEGEND_LEFT: i32 = 90;
const LEGEND_RIGHT: i32 = SIZE.0 as i32 - 10;
/// Blind times are drawn no lower than this (ms) on the log axis.
const FLOOR_MS: f64 = 0.1;

/// The columns the chart needs; columns are matched by header name, extra ones are ignored.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct SweepRow {
    breaker: String,
    k: u32,
    cooldown_ms: u64,
    hung_cost_ms: f64,
    #[serde(default)]
    blind_ms: Option<f64>,
}

/// One sweep point: its label, colour index (by K; off is 0) and mean (blind ms, hung cost ms).
#[derive(Debug, PartialEq)]
pub(crate) struct Point {
    label: String,
    series: usize,
    x: f64,
    y: f64,
}

/// Means over trials per (breaker, K, cooldown), in first-appearance order; a point whose every
/// trial failed to recover has no blind time and is left out (the CSV keeps it).
pub(crate) fn points(rows: &[SweepRow]) -> (Vec<String>, Vec<Point>) {
    let mut keys: Vec<(String, u32, u64)> = Vec::new();
    let mut groups: Vec<Vec<&SweepRow>> = Vec::new();
    let mut series: Vec<String> = Vec::new();
    for r in rows {
        let i = index_of(&mut keys, (r.breaker.clone(), r.k, r.cooldown_ms));
        if i == groups.len() {
            groups.push(Vec::new());
        }
        groups[i].push(r);
    }
    let mut out = Vec::new();
    for ((breaker, k, cooldown), rows) in keys.iter().zip(&groups) {
        let name = match breaker.as_str() {
            "on" => format!("K = {k}"),
            _ => "breaker off".to_string(),
        };
        let s = index_of(&mut series, name);
        let blind: Vec<f64> = rows.iter().filter_map(|r| r.blind_ms).collect();
        let cost: Vec<f64> = rows.iter().map(|r| r.hung_cost_ms).collect();
        let (Some(x), Some(y)) = (mean(&blind), mean(&cost)) else {
            continue;
        };
        let label = match breaker.as_str() {
            "on" => format!("K={k}, {cooldown} ms"),
            _ => "off".to_string(),
        };
        out.push(Point {
            label,
            series: s,
            x: x.max(FLOOR_MS).log10(),
            y: y / 1e3,
        });
    }
    (series, out)
}

/// Renders `dir/breaker_sweep.csv` into `outage_sweep.svg/.png`.
pub(crate) fn render(dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let csv_path = dir.join(CSV_NAME);
    let (series, points) = points(&read_csv::<SweepRow>(&csv_path)?);
    if points.is_empty() {
        return Err(ChartError::Empty(csv_path));
    }
    let mut svg = String::new();
    draw(&mut svg, &series, &points)?;
    write_chart(dir, "outage_sweep", &svg)
}

fn draw(svg: &mut String, series: &[String], points: &[Point]) -> Result<(), ChartError> {
    let x_lo = points.iter().map(|p| p.x).fold(f64::MAX, f64::min) - 0.2;
    let x_hi = points.iter().map(|p| p.x).fold(f64::MIN, f64::max) + 0.3;
    let y_hi = points.iter().map(|p| p.y).fold(0.0, f64::max) * 1.15 + 0.1;
    let (values, _) = log_points(10f64.powf(x_lo), 10f64.powf(x_hi));
    let x_ticks: Vec<(f64, String)> = (values.iter())
        .map(|v| (v.log10(), format!("{v}")))
        .collect();
    let items: Vec<(Marker, &str)> = (series.iter().enumerate())
        .map(|(i, name)| (Marker::Dot(color(i)), name.as_str()))
        .collect();
    let frame = Frame {
        size: SIZE,
        legend_span: (LEGEND_LEFT, LEGEND_RIGHT),
        heading: "outage: circuit breaker sweep, time users waited vs time blind",
        note: "one point per (K, cooldown), mean over trials; lower = users waited less while Redis hung, left = enforcement back sooner after SIGCONT",
    };
    let (root, body) = framed_canvas(svg, &frame, &items)?;
    let mut chart = ChartBuilder::on(&body)
        .margin_left(10)
        .margin_right(40)
        .margin_bottom(10)
        .x_label_area_size(60)
        .y_label_area_size(70)
        .build_cartesian_2d(x_lo..x_hi, 0.0..y_hi)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .bold_line_style(BLACK.mix(0.12))
        .light_line_style(BLACK.mix(0.0))
        .y_label_formatter(&|v| format!("{v:.1}"))
        .x_desc("blind after SIGCONT: ms until the first normal answer (log)")
        .y_desc("users' total wait while hung, s (budget timeouts + probes)")
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 16))
        .draw()
        .map_err(plot_err)?;
    custom_ticks(&chart, &root, &x_ticks, &[])?;
    let dots =
        (points.iter()).map(|p| Circle::new((p.x, p.y), POINT_PX as u32, color(p.series).filled()));
    chart.draw_series(dots).map_err(plot_err)?;
    let labels: Vec<((f64, f64), &str)> = (points.iter())
        .map(|p| ((p.x, p.y), p.label.as_str()))
        .collect();
    draw_point_labels(&chart, &root, &labels, POINT_PX)?;
    root.present().map_err(plot_err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::csv_dir;
    use std::fs;

    const CSV: &str = "\
breaker,k,cooldown_ms,probe_budget_ms,trial,jitter_ms,hung_ms,hung_checks,paid_budget,probes,hung_cost_ms,blind_checks,blind_ms,suspended_checks
off,0,0,25,0,100,3100,12,12,0,3010,0,0.05,0
on,1,50,25,0,10,3010,1200,1,40,1250,5,20,0
on,1,50,25,1,30,3030,1200,1,40,1270,7,30,0
on,3,3000,25,0,10,3010,1200,3,1,775,800,1600,0
on,3,250,25,0,10,3010,1200,3,11,1025,,,0
";

    #[test]
    fn means_over_trials_and_unrecovered_points_left_out() {
        let mut reader = csv::Reader::from_reader(CSV.as_bytes());
        let rows: Vec<SweepRow> = reader.deserialize().collect::<Result<_, _>>().unwrap();
        let (series, points) = points(&rows);
        assert_eq!(series, ["breaker off", "K = 1", "K = 3"]);
        let labels: Vec<&str> = points.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(labels, ["off", "K=1, 50 ms", "K=3, 3000 ms"]);
        assert_eq!(points[1].x, 25f64.log10());
        assert_eq!(points[1].y, 1.26);
        assert_eq!(
            points[0].x,
            0.1f64.log10(),
            "below the floor is drawn on it"
        );
    }

    #[test]
    fn renders_svg_and_png() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = csv_dir(tmp.path(), "outage", CSV_NAME, CSV);
        let paths = render(&dir).unwrap();
        assert_eq!(
            paths,
            ["outage_sweep.svg", "outage_sweep.png"].map(|n| dir.join(n))
        );
        let svg = fs::read_to_string(&paths[0]).unwrap();
        for s in ["K=1, 50 ms", "breaker off", "blind after SIGCONT"] {
            assert!(svg.contains(s), "svg lacks {s}");
        }
    }
}
