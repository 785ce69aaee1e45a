//! The tsmember chart: admitted / limit against arrival rate, both on log scales, one line per
//! member x clock variant (colour = member, dashed = the caller's clock) through the mean of its
//! trials, a dot per trial; flat-out runs are hollow markers at the rate they achieved.

use std::path::{Path, PathBuf};

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde::Deserialize;

use super::axes::log_axis;
use super::draw::{color, font, legend, legend_rows, title, Area, Marker, FONT, LEGEND_ROW_PX};
use super::{index_of, mean, plot_err, read_csv, write_chart, ChartError};

/// The CSV the tsmember experiment writes into its dir.
pub(crate) const CSV_NAME: &str = "tsmember.csv";
const SIZE: (u32, u32) = (1200, 760);
const LEGEND_LEFT: i32 = 90;
const LEGEND_RIGHT: i32 = SIZE.0 as i32 - 10;
/// Sideways spread of one rate's variants, as a factor on the log x axis, so dots stay apart.
const DODGE: f64 = 0.035;

/// The columns the chart needs; columns are matched by header name, extra ones are ignored.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Row {
    member: String,
    clock: String,
    rate: String,
    admitted: f64,
    limit: f64,
    #[serde(default)]
    requests_per_s: f64,
}

/// One member x clock variant: its trials per arrival rate, and its flat-out runs.
#[derive(Debug, PartialEq)]
pub(crate) struct Variant {
    name: String,
    member: usize,
    caller_clock: bool,
    /// (rate, admitted / limit of each trial), ascending rate.
    rates: Vec<(f64, Vec<f64>)>,
    /// (achieved rate, admitted / limit) of each flat-out run.
    flat_out: Vec<(f64, f64)>,
}

/// Groups rows into variants in first-appearance order; pure so it is unit-testable.
pub(crate) fn group(rows: &[Row]) -> Vec<Variant> {
    let (mut members, mut names) = (Vec::new(), Vec::new());
    let mut out: Vec<Variant> = Vec::new();
    for r in rows.iter().filter(|r| r.limit > 0.0) {
        let member = index_of(&mut members, r.member.clone());
        let i = index_of(&mut names, format!("{} / {}", r.member, r.clock));
        if i == out.len() {
            out.push(Variant {
                name: names[i].clone(),
                member,
                caller_clock: r.clock == "caller",
                rates: Vec::new(),
                flat_out: Vec::new(),
            });
        }
        let ratio = r.admitted / r.limit;
        match r.rate.parse::<f64>() {
            Ok(rate) if rate > 0.0 => {
                let v = &mut out[i].rates;
                match v.iter_mut().find(|(x, _)| *x == rate) {
                    Some((_, trials)) => trials.push(ratio),
                    None => v.push((rate, vec![ratio])),
                }
            }
            _ if r.requests_per_s > 0.0 => out[i].flat_out.push((r.requests_per_s, ratio)),
            _ => {}
        }
    }
    for v in &mut out {
        v.rates.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

/// Renders `dir/tsmember.csv` into `dir/tsmember.svg` and `dir/tsmember.png`.
pub(crate) fn render(dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let csv_path = dir.join(CSV_NAME);
    let variants = group(&read_csv::<Row>(&csv_path)?);
    if variants
        .iter()
        .all(|v| v.rates.is_empty() && v.flat_out.is_empty())
    {
        return Err(ChartError::Empty(csv_path));
    }
    let mut svg = String::new();
    draw(&mut svg, &variants)?;
    write_chart(dir, "tsmember", &svg)
}

/// Log ranges that hold every point, the limit line at 1, and some room around them.
fn ranges(variants: &[Variant]) -> ((f64, f64), (f64, f64)) {
    let xs = variants.iter().flat_map(|v| {
        let rates = v.rates.iter().map(|r| r.0);
        rates.chain(v.flat_out.iter().map(|f| f.0))
    });
    let ys = variants.iter().flat_map(|v| {
        let trials = v.rates.iter().flat_map(|r| r.1.iter().copied());
        trials.chain(v.flat_out.iter().map(|f| f.1))
    });
    let (x_lo, x_hi) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let (y_lo, y_hi) =
        (ys.filter(|y| *y > 0.0)).fold((1.0f64, 1.0f64), |(a, b), y| (a.min(y), b.max(y)));
    (
        (x_lo / 2.0, x_hi * 2.0),
        (y_lo / 1.5, (y_hi * 1.5).max(y_lo * 4.0)),
    )
}

/// Draws the chart; `variants` has at least one point.
fn draw(svg: &mut String, variants: &[Variant]) -> Result<(), ChartError> {
    let ((x_lo, x_hi), (y_lo, y_hi)) = ranges(variants);
    let mut items: Vec<(Marker, &str)> = (variants.iter())
        .map(|v| match v.caller_clock {
            true => (Marker::Dashed(color(v.member)), v.name.as_str()),
            false => (Marker::Line(color(v.member)), v.name.as_str()),
        })
        .collect();
    items.push((Marker::Dashed(RED), "limit"));
    let rows = legend_rows(&items, LEGEND_LEFT, LEGEND_RIGHT) as i32;
    let root: Area = SVGBackend::with_string(svg, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let (header, body) = root.split_vertically(84 + LEGEND_ROW_PX * rows);
    let note = "line = mean of trials, dot = one trial (dodged sideways); hollow square = flat out (closed loop), at the rate it reached";
    title(&header, "tsmember: admitted / limit by arrival rate", note)?;
    legend(&header, (LEGEND_LEFT, 80), LEGEND_RIGHT, &items)?;

    let mut chart = ChartBuilder::on(&body)
        .margin_left(10)
        .margin_right(60)
        .margin_bottom(10)
        .x_label_area_size(60)
        .y_label_area_size(80)
        .build_cartesian_2d(log_axis(x_lo, x_hi), log_axis(y_lo, y_hi))
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .bold_line_style(BLACK.mix(0.12))
        .light_line_style(BLACK.mix(0.04))
        .x_label_formatter(&|v| format!("{v}"))
        .y_label_formatter(&|v| format!("{v}x"))
        .x_desc("arrival rate, requests/s (log)")
        .y_desc("admitted / limit (log)")
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 16))
        .draw()
        .map_err(plot_err)?;
    let limit = DashedLineSeries::new([(x_lo, 1.0), (x_hi, 1.0)], 8, 4, RED.stroke_width(2));
    chart.draw_series(limit).map_err(plot_err)?;

    let n = variants.len() as f64;
    for (k, v) in variants.iter().enumerate() {
        let c = color(v.member);
        let dodge = 1.0 + DODGE * (k as f64 - (n - 1.0) / 2.0);
        let means: Vec<(f64, f64)> = (v.rates.iter())
            .filter_map(|(rate, trials)| Some((*rate, mean(trials)?)))
            .collect();
        let style = c.stroke_width(2);
        match v.caller_clock {
            true => chart.draw_series(DashedLineSeries::new(means, 7, 4, style)),
            false => chart.draw_series(LineSeries::new(means, style)),
        }
        .map_err(plot_err)?;
        let dots = (v.rates.iter()).flat_map(|(rate, trials)| {
            let at = rate * dodge;
            trials
                .iter()
                .map(move |&y| Circle::new((at, y), 4, c.mix(0.7).filled()))
        });
        chart.draw_series(dots).map_err(plot_err)?;
        let squares = (v.flat_out.iter()).map(|&(x, y)| {
            Rectangle::new(
                [(x / 1.04, y / 1.04), (x * 1.04, y * 1.04)],
                c.stroke_width(2),
            )
        });
        chart.draw_series(squares).map_err(plot_err)?;
    }
    let (x, y) = chart.backend_coord(&(x_hi, 1.0));
    let tag = font(14.0, &RED, HPos::Left, VPos::Center);
    root.draw(&Text::new("limit", (x + 6, y), tag))
        .map_err(plot_err)?;
    root.present().map_err(plot_err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::{csv_dir, render_experiment};
    use std::fs;

    const HEADER: &str =
        "member,clock,rate,trial,offered,admitted,denied,limit,requests_per_s,extra";
    const ROWS: &str = "\
time-ms,redis,1000,0,2000,189,1811,100,1000,x
time-ms,redis,100,0,200,109,91,100,100,x
time-ms,redis,1000,1,2000,191,1809,100,1000,x
unique-id,caller,100,0,200,100,100,100,100,x
time-ms,redis,flat-out,0,90000,51000,39000,1000,45000,x
";

    #[test]
    fn renders_svg_and_png_with_variants() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = csv_dir(
            tmp.path(),
            "tsmember",
            CSV_NAME,
            &format!("{HEADER}\n{ROWS}"),
        );
        let paths = render_experiment("tsmember", &dir).unwrap();
        assert_eq!(paths, ["tsmember.svg", "tsmember.png"].map(|n| dir.join(n)));
        let svg = fs::read_to_string(&paths[0]).unwrap();
        for s in ["time-ms / redis", "unique-id / caller", "limit", "1000"] {
            assert!(svg.contains(s), "svg lacks {s}");
        }
    }

    #[test]
    fn header_only_is_empty() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = csv_dir(tmp.path(), "tsmember", CSV_NAME, &format!("{HEADER}\n"));
        let err = render_experiment("tsmember", &dir).unwrap_err();
        assert!(matches!(err, ChartError::Empty(_)), "{err}");
    }

    #[test]
    fn groups_trials_by_rate_and_keeps_flat_out_apart() {
        let csv = format!("{HEADER}\n{ROWS}");
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        let rows: Vec<Row> = reader.deserialize().collect::<Result<_, _>>().unwrap();
        let g = group(&rows);
        assert_eq!(g.len(), 2);
        assert_eq!(
            g[0].rates,
            vec![(100.0, vec![1.09]), (1000.0, vec![1.89, 1.91])]
        );
        assert_eq!(g[0].flat_out, vec![(45000.0, 51.0)]);
        assert!(g[1].caller_clock && g[1].member == 1);
        let ((x_lo, x_hi), (y_lo, y_hi)) = ranges(&g);
        assert_eq!((x_lo, x_hi), (50.0, 90000.0));
        assert!(y_lo < 1.0 && y_hi > 51.0);
    }
}
