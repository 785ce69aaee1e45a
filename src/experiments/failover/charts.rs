//! The failover charts: `failover.svg`, admitted per bin (all keys summed) around the switch with
//! the limit's line, one panel per variant, for the largest K; `failover_keys.svg`, overshoot per
//! key in bursts against K, one line per variant, strategy and offered rate.

use super::{BinRow, TrialRow, Variant};
use crate::charts::lines::{self, LineChart, Scale, Series};
use crate::charts::spec::{color, text, Anchor, Chart, BLACK, RED};
use crate::charts::{read_csv, write_spec, ChartError};
use crate::record::csv_text;
use std::path::{Path, PathBuf};

pub(crate) fn render(dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let bins: Vec<BinRow> = read_csv(&dir.join("bins.csv"))?;
    let trials: Vec<TrialRow> = read_csv(&dir.join("trials.csv"))?;
    if bins.is_empty() || trials.is_empty() {
        return Err(ChartError::Empty(dir.join("bins.csv")));
    }
    let mut written = write_spec(dir, "failover", &timeline(&bins)?)?;
    written.extend(write_spec(
        dir,
        "failover_keys",
        &lines::spec(per_key(&trials))?,
    )?);
    Ok(written)
}

fn label(v: f64) -> String {
    crate::charts::bars::si(v)
}

fn series_name(strategy: &str, invocation: &str, offered: f64) -> String {
    format!("{strategy} {invocation} {offered}x")
}

/// One panel per variant (in the CSV's order), the largest K only.
fn timeline(bins: &[BinRow]) -> Result<Chart, ChartError> {
    let k = bins.iter().map(|b| b.keys).max().unwrap_or(0);
    let mut variants: Vec<Variant> = Vec::new();
    for b in bins {
        if !variants.contains(&b.variant) {
            variants.push(b.variant);
        }
    }
    let mut plots = Vec::new();
    let mut legend = Vec::new();
    for variant in &variants {
        let rows: Vec<&BinRow> = (bins.iter())
            .filter(|b| b.variant == *variant && b.keys == k)
            .collect();
        let mut names: Vec<String> = Vec::new();
        let mut series: Vec<Series> = Vec::new();
        for r in &rows {
            let name = series_name(&r.strategy.to_string(), r.invocation.name(), r.offered);
            let i = match names.iter().position(|n| *n == name) {
                Some(i) => i,
                None => {
                    names.push(name.clone());
                    series.push(Series {
                        name,
                        color: color(names.len() - 1),
                        dashed: false,
                        points: vec![],
                    });
                    names.len() - 1
                }
            };
            series[i]
                .points
                .push((r.t_ms + r.bin_ms as f64 / 2.0, r.admitted as f64));
        }
        let limit = rows.first().map_or(0.0, |r| r.limit);
        let (lo, hi) = rows.iter().fold((f64::MAX, f64::MIN), |(lo, hi), r| {
            (lo.min(r.t_ms), hi.max(r.t_ms + r.bin_ms as f64))
        });
        series.push(Series {
            name: "limit".into(),
            color: RED,
            dashed: true,
            points: vec![(lo, limit), (hi, limit)],
        });
        let chart = LineChart {
            title: "",
            note: "",
            x_desc: "ms from the switch (bin middles)",
            y_desc: "admitted per bin",
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            y_from_zero: true,
            series,
            marks: vec![(0.0, "switch".to_string())],
            label: &label,
        };
        let mut c = lines::spec(chart)?;
        if legend.is_empty() {
            legend = std::mem::take(&mut c.legend);
        }
        let mut plot = c.plots.remove(0);
        let top = match plot.y.range {
            crate::charts::spec::Range::Linear(_, hi) => hi,
            _ => 0.0,
        };
        let left = match plot.x.range {
            crate::charts::spec::Range::Linear(lo, _) => lo,
            _ => 0.0,
        };
        plot.layers.push(text(
            (left, top),
            (8, 4),
            &csv_text(variant),
            BLACK,
            Anchor::LeftTop,
        ));
        plots.push(plot);
    }
    let n = plots.len().max(1) as u32;
    let title = format!(
        "failover: admitted per bin around the promotion, {k} keys summed, one panel per variant"
    );
    let note = "line = mean over trials, dot = one trial's bin; dashed red = what the limit allows per bin at its rate";
    Ok(Chart::new((1200, 120 + 340 * n), title, note, plots).legend(100, legend))
}

/// Overshoot per key (bursts, mean over keys) against K: a dot per trial, a line through means.
fn per_key(trials: &[TrialRow]) -> LineChart<'static> {
    let mut names: Vec<String> = Vec::new();
    let mut series: Vec<Series> = Vec::new();
    for r in trials {
        let name = format!(
            "{} {}",
            csv_text(&r.variant),
            series_name(&r.strategy.to_string(), r.invocation.name(), r.offered)
        );
        let i = match names.iter().position(|n| *n == name) {
            Some(i) => i,
            None => {
                names.push(name.clone());
                let dashed = r.variant == Variant::Wiped;
                series.push(Series {
                    name,
                    color: color(names.len() - 1),
                    dashed,
                    points: vec![],
                });
                names.len() - 1
            }
        };
        series[i]
            .points
            .push((r.keys as f64, r.overshoot_bursts_mean));
    }
    LineChart {
        title: "failover: overshoot per active key against the number of active keys",
        note: "mean over keys of (admitted - limit) over whole windows from the switch, in bursts; dot = one trial",
        x_desc: "active keys (K)",
        y_desc: "overshoot per key (bursts)",
        x_scale: Scale::Log,
        y_scale: Scale::Linear,
        y_from_zero: true,
        series,
        marks: Vec::new(),
        label: &label,
    }
}
