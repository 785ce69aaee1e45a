//! The outage chart: every check's latency (log ms) against its place in the run, the phases
//! shaded behind (healthy, dead, restarted, hung, resumed), one panel with the breaker off and one
//! with it on; dots coloured by how the check was answered, so the 250 ms wall of the hung phase,
//! the near-zero dead checks and the breaker's short circuits read at a glance.

use std::path::{Path, PathBuf};

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde::Deserialize;

use super::axes::{custom_ticks, log_points};
use super::draw::{color, font, framed_canvas, Area, Frame, Marker, FONT};
use super::{index_of, plot_err, read_csv, write_chart, ChartError};

/// The per-check CSV the outage experiment writes into its dir.
pub(crate) const CSV_NAME: &str = "outage.csv";
const SIZE: (u32, u32) = (1200, 900);
const Y_LABEL_PX: u32 = 80;
const LEGEND_LEFT: i32 = 10 + Y_LABEL_PX as i32;
const LEGEND_RIGHT: i32 = SIZE.0 as i32 - 10;
/// Latencies are drawn no lower than this (ms), so a 0 µs short circuit still has a place.
const FLOOR_MS: f64 = 1e-4;

/// The columns the chart needs; columns are matched by header name, extra ones are ignored.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct CheckRow {
    breaker: String,
    phase: String,
    seq: u64,
    latency_us: f64,
    route: String,
    #[serde(default)]
    failure: String,
}

/// How a check was answered: the dot's colour.
const KINDS: [&str; 5] = [
    "answered by Redis",
    "timed out (paid the budget)",
    "connection failed",
    "breaker open: no call",
    "probe",
];

fn kind(r: &CheckRow) -> usize {
    match (r.route.as_str(), r.failure.as_str()) {
        ("open", _) => 3,
        ("probe", _) => 4,
        (_, "timeout") => 1,
        (_, "connection") | (_, "server") => 2,
        _ => 0,
    }
}

/// One panel: its breaker setting, the phases in order with their check counts, and the dots
/// as (x = place in the run, log10 ms, kind).
#[derive(Debug, Default)]
pub(crate) struct Panel {
    breaker: String,
    phases: Vec<String>,
    per_phase: Vec<u64>,
    dots: Vec<(f64, f64, usize)>,
}

/// Splits rows into panels (breaker off, on) in first-appearance order; each policy's run is
/// drawn over the same x, since the phases have the same length in every run.
pub(crate) fn panels(rows: &[CheckRow]) -> Vec<Panel> {
    let mut keys: Vec<String> = Vec::new();
    let mut out: Vec<Panel> = Vec::new();
    // (phase index, seq) per dot until every phase's length is known.
    let mut places: Vec<Vec<(usize, u64)>> = Vec::new();
    for r in rows {
        let i = index_of(&mut keys, r.breaker.clone());
        if i == out.len() {
            out.push(Panel {
                breaker: r.breaker.clone(),
                ..Panel::default()
            });
            places.push(Vec::new());
        }
        let p = &mut out[i];
        let phase = index_of(&mut p.phases, r.phase.clone());
        if phase == p.per_phase.len() {
            p.per_phase.push(0);
        }
        p.per_phase[phase] = p.per_phase[phase].max(r.seq + 1);
        let ms = (r.latency_us / 1e3).max(FLOOR_MS);
        p.dots.push((0.0, ms.log10(), kind(r)));
        places[i].push((phase, r.seq));
    }
    for (p, places) in out.iter_mut().zip(places) {
        let starts: Vec<u64> = (0..p.per_phase.len())
            .map(|i| p.per_phase[..i].iter().sum())
            .collect();
        for (d, (phase, seq)) in p.dots.iter_mut().zip(places) {
            d.0 = (starts[phase] + seq) as f64;
        }
    }
    out
}

/// Renders `dir/outage.csv` into `outage.svg/.png`, and the breaker sweep if its CSV is there.
pub(crate) fn render(dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let panels = panels(&read_csv::<CheckRow>(&dir.join(CSV_NAME))?);
    let mut svg = String::new();
    draw(&mut svg, &panels)?;
    let mut written = write_chart(dir, "outage", &svg)?;
    if dir.join(super::outage_sweep::CSV_NAME).is_file() {
        written.extend(super::outage_sweep::render(dir)?);
    }
    Ok(written)
}

fn draw(svg: &mut String, panels: &[Panel]) -> Result<(), ChartError> {
    let all = panels.iter().flat_map(|p| p.dots.iter().map(|d| d.1));
    let (lo, hi) = all.fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(y), b.max(y)));
    // Headroom above the 250 ms wall so the phase names sit clear of the hung checks.
    let (y_lo, y_hi) = (lo.min(-1.0) - 0.15, hi.max(2.5) + 0.5);
    let (values, _) = log_points(10f64.powf(y_lo), 10f64.powf(y_hi));
    let y_ticks: Vec<(f64, String)> = (values.iter())
        .map(|v| (v.log10(), format!("{v}")))
        .collect();
    let items: Vec<(Marker, &str)> = (KINDS.iter().enumerate())
        .map(|(i, name)| (Marker::Dot(color(i)), *name))
        .collect();
    let frame = Frame {
        size: SIZE,
        legend_span: (LEGEND_LEFT, LEGEND_RIGHT),
        heading: "outage: latency of each check (log ms)",
        note: "every check of every run, in order; both policies drawn over each other (the policy changes the answer, not the time)",
    };
    let (root, body) = framed_canvas(svg, &frame, &items)?;
    let areas = body.split_evenly((panels.len().max(1), 1));
    for (panel, area) in panels.iter().zip(&areas) {
        draw_panel(area, &root, panel, (y_lo, y_hi), &y_ticks)?;
    }
    root.present().map_err(plot_err)
}

fn draw_panel(
    area: &Area,
    root: &Area,
    panel: &Panel,
    (y_lo, y_hi): (f64, f64),
    y_ticks: &[(f64, String)],
) -> Result<(), ChartError> {
    let x_hi = panel.per_phase.iter().sum::<u64>().max(1) as f64;
    let mut chart = ChartBuilder::on(area)
        .margin_left(10)
        .margin_right(30)
        .margin_top(10)
        .x_label_area_size(40)
        .y_label_area_size(Y_LABEL_PX)
        .build_cartesian_2d(0.0..x_hi, y_lo..y_hi)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .y_labels(0)
        .x_labels(8)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .x_desc(format!("check, in run order (breaker {})", panel.breaker))
        .y_desc("latency ms (log)")
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 15))
        .draw()
        .map_err(plot_err)?;
    let mut start = 0.0;
    for (i, (name, n)) in panel.phases.iter().zip(&panel.per_phase).enumerate() {
        let end = start + *n as f64;
        let shade = if i % 2 == 0 { 0.06 } else { 0.0 };
        let band = Rectangle::new([(start, y_lo), (end, y_hi)], BLACK.mix(shade).filled());
        chart.draw_series([band]).map_err(plot_err)?;
        let (x, y) = chart.backend_coord(&((start + end) / 2.0, y_hi));
        let style = font(14.0, &BLACK, HPos::Center, VPos::Top);
        root.draw(&Text::new(name.as_str(), (x, y + 4), style))
            .map_err(plot_err)?;
        start = end;
    }
    custom_ticks(&chart, root, &[], y_ticks)?;
    let dots =
        (panel.dots.iter()).map(|&(x, y, k)| Circle::new((x, y), 2, color(k).mix(0.7).filled()));
    chart.draw_series(dots).map_err(plot_err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::{csv_dir, render_experiment};
    use std::fs;

    const CSV: &str = "\
policy,breaker,k,cooldown_ms,phase,seq,at_ms,latency_us,outcome,route,failure,breaker_state,reconnected,script_reloaded,suspended
fail-open,off,0,0,healthy,0,0,300,allowed,redis,,closed,false,false,false
fail-open,off,0,0,healthy,1,2,250,allowed,redis,,closed,false,false,false
fail-open,off,0,0,dead,0,0,60,degraded-allowed,redis,connection,closed,true,false,false
fail-open,off,0,0,hung,0,0,251000,degraded-allowed,redis,timeout,closed,false,false,false
fail-open,on,3,250,healthy,0,0,280,allowed,redis,,closed,false,false,false
fail-open,on,3,250,hung,0,0,250900,degraded-allowed,redis,timeout,open,false,false,false
fail-open,on,3,250,hung,1,251,0.6,degraded-allowed,open,,open,false,false,false
fail-open,on,3,250,hung,2,253,0,degraded-allowed,probe,timeout,open,true,false,false
";

    #[test]
    fn panels_lay_phases_end_to_end() {
        let mut reader = csv::Reader::from_reader(CSV.as_bytes());
        let rows: Vec<CheckRow> = reader.deserialize().collect::<Result<_, _>>().unwrap();
        let p = panels(&rows);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].phases, ["healthy", "dead", "hung"]);
        assert_eq!(p[0].per_phase, [2, 1, 1]);
        let xs: Vec<f64> = p[0].dots.iter().map(|d| d.0).collect();
        assert_eq!(xs, [0.0, 1.0, 2.0, 3.0]);
        let kinds: Vec<usize> = p[1].dots.iter().map(|d| d.2).collect();
        assert_eq!(kinds, [0, 1, 3, 4]);
        assert_eq!(p[1].dots[3].1, FLOOR_MS.log10(), "0 µs sits on the floor");
    }

    #[test]
    fn renders_svg_and_png_with_phases() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = csv_dir(tmp.path(), "outage", CSV_NAME, CSV);
        let paths = render_experiment("outage", &dir).unwrap();
        assert_eq!(paths, ["outage.svg", "outage.png"].map(|n| dir.join(n)));
        let svg = fs::read_to_string(&paths[0]).unwrap();
        for s in ["healthy", "hung", "breaker open: no call", "breaker on"] {
            assert!(svg.contains(s), "svg lacks {s}");
        }
    }
}
