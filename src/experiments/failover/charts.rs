//! The failover charts: `failover.svg`, admitted minus what the limit allows (all keys summed),
//! cumulative and 0 at the switch, one panel per variant, for the largest K (a step up after the
//! switch is the overshoot; the bins' own sawtooth at the refill's period cancels out);
//! `failover_keys.svg`, overshoot per
//! key in bursts against K, one line per variant, strategy and offered rate;
//! `failover_sentinel.svg` (when the run has Sentinel variants), one panel per Sentinel trial:
//! admitted and failed checks per bin from the failover's start, marked where the replica was
//! promoted and where the last client moved to it.

use super::{how_called, BinRow, TrialRow, Variant, BINS, TRIALS};
use crate::charts::lines::{self, LineChart, Scale, Series};
use crate::charts::spec::{color, text, Anchor, Chart, Range, BLACK, RED};
use crate::charts::{read_file, write_spec, ChartError};
use crate::record::csv_text;
use std::path::{Path, PathBuf};

pub(crate) fn render(dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let bins = read_file(&BINS, dir)?;
    let trials = read_file(&TRIALS, dir)?;
    if bins.is_empty() || trials.is_empty() {
        return Err(ChartError::Empty(BINS.path(dir)));
    }
    let mut written = write_spec(dir, "failover", &timeline(&bins)?)?;
    written.extend(write_spec(dir, "failover_keys", &per_key(&trials)?)?);
    if trials.iter().any(|t| t.variant.is_sentinel()) {
        written.extend(write_spec(
            dir,
            "failover_sentinel",
            &sentinel(&bins, &trials)?,
        )?);
    }
    Ok(written)
}

fn label(v: f64) -> String {
    crate::charts::bars::si(v)
}

fn series_name(strategy: &str, invocation: &str, offered: f64) -> String {
    format!("{strategy} {invocation} {offered}x")
}

/// The variants in the CSV's order.
fn variants<'a>(all: impl Iterator<Item = &'a Variant>) -> Vec<Variant> {
    let mut out: Vec<Variant> = Vec::new();
    for v in all {
        if !out.contains(v) {
            out.push(*v);
        }
    }
    out
}

/// Points into series named by `name`, coloured in first-appearance order.
fn group<T>(
    rows: &[&T],
    name: impl Fn(&T) -> String,
    point: impl Fn(&T) -> (f64, f64),
) -> Vec<Series> {
    let mut series: Vec<Series> = Vec::new();
    for r in rows {
        let n = name(r);
        let i = match series.iter().position(|s| s.name == n) {
            Some(i) => i,
            None => {
                let c = color(series.len());
                series.push(Series {
                    name: n,
                    color: c,
                    dashed: false,
                    points: vec![],
                });
                series.len() - 1
            }
        };
        series[i].points.push(point(r));
    }
    series
}

/// One panel per (variant, line chart), its name at the top left, under one header.
fn panels(
    title: String,
    note: &str,
    charts: Vec<(String, LineChart)>,
) -> Result<Chart, ChartError> {
    let mut plots = Vec::new();
    let mut legend = Vec::new();
    for (name, chart) in charts {
        let mut c = lines::spec(chart)?;
        if c.legend.len() > legend.len() {
            legend = std::mem::take(&mut c.legend);
        }
        let mut plot = c.plots.remove(0);
        let top = match plot.y.range {
            Range::Linear(_, hi) => hi,
            _ => 0.0,
        };
        let left = match plot.x.range {
            Range::Linear(lo, _) => lo,
            _ => 0.0,
        };
        plot.layers
            .push(text((left, top), (8, 4), &name, BLACK, Anchor::LeftTop));
        plots.push(plot);
    }
    let n = plots.len().max(1) as u32;
    Ok(Chart::new((1200, 120 + 340 * n), title, note, plots).legend(100, legend))
}

/// Admitted minus what the limit allows, cumulative and zero at the switch, one panel per
/// variant, the largest K only (the Sentinel variants have a chart of their own). Per bin the
/// count swings with the window's phase (a sawtooth); summed, a correct failover stays level
/// across the switch and an overshoot is a step up that stays.
fn timeline(bins: &[BinRow]) -> Result<Chart, ChartError> {
    let bins: Vec<&BinRow> = bins.iter().filter(|b| !b.variant.is_sentinel()).collect();
    let k = bins.iter().map(|b| b.keys).max().unwrap_or(0);
    let mut charts = Vec::new();
    for variant in variants(bins.iter().map(|b| &b.variant)) {
        let rows: Vec<&BinRow> = (bins.iter().copied())
            .filter(|b| b.variant == variant && b.keys == k)
            .collect();
        let name = |r: &BinRow| {
            series_name(
                &r.strategy.to_string(),
                how_called(r.strategy, r.invocation),
                r.offered,
            )
        };
        let excess = excess_from_switch(&rows);
        let excess: Vec<&(&BinRow, (f64, f64))> = excess.iter().collect();
        let mut series = group(&excess, |(r, _)| name(r), |(_, p)| *p);
        let (lo, hi) = (rows.iter()).fold((f64::MAX, f64::MIN), |(lo, hi), r| {
            (lo.min(r.t_ms), hi.max(r.t_ms + r.bin_ms as f64))
        });
        series.push(Series {
            name: "admitted = allowed since the switch".into(),
            color: RED,
            dashed: true,
            points: vec![(lo, 0.0), (hi, 0.0)],
        });
        charts.push((
            csv_text(&variant),
            LineChart {
                title: "",
                note: "",
                x_desc: "ms from the switch (bin ends)",
                y_desc: "admitted - allowed, cumulative",
                x_scale: Scale::Linear,
                y_scale: Scale::Linear,
                y_from_zero: false,
                series,
                marks: vec![(0.0, "switch".to_string())],
                shaded: Vec::new(),
                label: &label,
            },
        ));
    }
    let title = format!(
        "failover: admitted minus allowed, cumulative from the switch, {k} keys summed, one panel per variant"
    );
    let note = "allowed = the limit's rate x bin; 0 at the switch: a step up after it is admitted beyond the limit \
(the overshoot), level means none";
    panels(title, note, charts)
}

/// Each trial's bins as (bin end, cumulative admitted - allowed), shifted so the bin that ends
/// at the switch (the last one ending at or before it) is 0; pure, for tests.
fn excess_from_switch<'a>(rows: &[&'a BinRow]) -> Vec<(&'a BinRow, (f64, f64))> {
    let trial = |r: &BinRow| r.trial_key();
    let mut trials = Vec::new();
    for t in rows.iter().map(|r| trial(r)) {
        if !trials.contains(&t) {
            trials.push(t);
        }
    }
    let mut out = Vec::new();
    for t in trials {
        let mut bins: Vec<&BinRow> = rows.iter().copied().filter(|r| trial(r) == t).collect();
        bins.sort_by(|a, b| a.t_ms.total_cmp(&b.t_ms));
        let mut sum = 0.0;
        let summed: Vec<(&BinRow, (f64, f64))> = (bins.into_iter())
            .map(|r| {
                sum += r.admitted as f64 - r.limit;
                (r, (r.t_ms + r.bin_ms as f64, sum))
            })
            .collect();
        let at_switch = (summed.iter().rev())
            .find(|(_, (end, _))| *end <= 0.0)
            .map_or(0.0, |(_, (_, v))| *v);
        out.extend(
            summed
                .into_iter()
                .map(|(r, (x, v))| (r, (x, v - at_switch))),
        );
    }
    out
}

/// Overshoot per key (bursts, mean over keys) against K, one panel per variant: a dot per
/// trial, a line through the means, the seed's one burst dashed red.
fn per_key(trials: &[TrialRow]) -> Result<Chart, ChartError> {
    let mut charts = Vec::new();
    for variant in variants(trials.iter().map(|t| &t.variant)) {
        let rows: Vec<&TrialRow> = trials.iter().filter(|t| t.variant == variant).collect();
        let mut series = group(
            &rows,
            |r| {
                series_name(
                    &r.strategy.to_string(),
                    how_called(r.strategy, r.invocation),
                    r.offered,
                )
            },
            |r| (r.keys as f64, r.overshoot_bursts_mean),
        );
        let (lo, hi) = (rows.iter()).fold((f64::MAX, f64::MIN), |(lo, hi), r| {
            (lo.min(r.keys as f64), hi.max(r.keys as f64))
        });
        let points = vec![(lo, 1.0), (hi, 1.0)];
        series.push(Series {
            name: "one burst per key".into(),
            color: RED,
            dashed: true,
            points,
        });
        charts.push((
            csv_text(&variant),
            LineChart {
                title: "",
                note: "",
                x_desc: "active keys (K)",
                y_desc: "overshoot per key (bursts)",
                x_scale: Scale::Log,
                y_scale: Scale::Linear,
                y_from_zero: true,
                series,
                marks: Vec::new(),
                shaded: Vec::new(),
                label: &label,
            },
        ));
    }
    let title = "failover: overshoot per active key against the number of active keys".to_string();
    let note = "mean over keys of (admitted - limit) over whole windows from the switch's, in bursts; dot = one trial";
    panels(title, note, charts)
}

/// One panel per Sentinel trial: admitted and failed checks per bin (keys summed) from the
/// failover's start, the limit's line, and marks at the promotion and at the last client's move.
fn sentinel(bins: &[BinRow], trials: &[TrialRow]) -> Result<Chart, ChartError> {
    let picked: Vec<&TrialRow> = trials.iter().filter(|t| t.variant.is_sentinel()).collect();
    // The trial's name under its panel: at the top left it would overprint the marks' labels.
    let descs: Vec<String> = (picked.iter())
        .map(|t| {
            format!(
                "ms from the failover's start (bin middles): {} {} {} K={} {}x, down-after {} ms",
                csv_text(&t.variant),
                t.strategy,
                how_called(t.strategy, t.invocation),
                t.keys,
                t.offered,
                t.down_after_ms
            )
        })
        .collect();
    let mut charts = Vec::new();
    for (t, desc) in picked.into_iter().zip(&descs) {
        let rows: Vec<&BinRow> = bins
            .iter()
            .filter(|b| b.trial_key() == t.trial_key())
            .collect();
        let middle = |r: &BinRow| r.t_ms + r.bin_ms as f64 / 2.0;
        let line = |name: &str, color, value: fn(&BinRow) -> u64| Series {
            name: name.into(),
            color,
            dashed: false,
            points: rows.iter().map(|r| (middle(r), value(r) as f64)).collect(),
        };
        let (lo, hi) = (rows.iter()).fold((f64::MAX, f64::MIN), |(lo, hi), r| {
            (lo.min(r.t_ms), hi.max(r.t_ms + r.bin_ms as f64))
        });
        let limit = rows.first().map_or(0.0, |r| r.limit);
        let series = vec![
            line("admitted", color(0), |r| r.admitted),
            line("failed (no decision)", color(1), |r| r.errors),
            Series {
                name: "limit at its rate".into(),
                color: RED,
                dashed: true,
                points: vec![(lo, limit), (hi, limit)],
            },
        ];
        let marks = marks(
            &[
                (0.0, "failover starts"),
                (t.promote_ms, "promoted"),
                (t.switch_after_promote_ms, "last client moved"),
            ],
            (hi - lo) / 20.0,
        );
        charts.push((
            String::new(),
            LineChart {
                title: "",
                note: "",
                x_desc: desc,
                y_desc: "checks per bin",
                x_scale: Scale::Linear,
                y_scale: Scale::Linear,
                y_from_zero: true,
                series,
                marks,
                shaded: failing(&rows),
                label: &label,
            },
        ));
    }
    let title =
        "failover through Sentinel: admitted and failed checks per bin, keys summed".to_string();
    let note = "clients find the primary through the Sentinels and move after a failed check; \
                dashed red = what the limit allows per bin at its rate; grey = from the first bin with a failed check \
                to the last";
    panels(title, note, charts)
}

/// The span from the first bin with a failed check to the end of the last, shaded: for some
/// client, no decision.
fn failing(rows: &[&BinRow]) -> Vec<(f64, f64, String)> {
    let failing = rows.iter().filter(|r| r.errors > 0);
    let from = (failing.clone().map(|r| r.t_ms)).fold(f64::MAX, f64::min);
    let to = (failing.map(|r| r.t_ms + r.bin_ms as f64)).fold(f64::MIN, f64::max);
    match from < to {
        true => vec![(from, to, "checks failing".to_string())],
        false => Vec::new(),
    }
}

/// Marks at ascending instants, one closer than `apart` to the previous joined to it (one line,
/// both names) so that their labels do not overprint.
fn marks(at: &[(f64, &str)], apart: f64) -> Vec<(f64, String)> {
    let mut out: Vec<(f64, String)> = Vec::new();
    for &(x, name) in at {
        match out.last_mut() {
            Some((last, names)) if x - *last < apart => names.push_str(&format!(", {name}")),
            _ => out.push((x, name.to_string())),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::{Invocation, Strategy};

    fn bin(trial: u32, t_ms: f64, admitted: u64) -> BinRow {
        BinRow {
            variant: Variant::Wiped,
            strategy: Strategy::LuaBucket,
            invocation: Invocation::Evalsha,
            keys: 10,
            offered: 3.0,
            trial,
            down_after_ms: 0,
            t_ms,
            bin_ms: 50,
            sent: admitted,
            admitted,
            denied: 0,
            errors: 0,
            noscript: 0,
            limit: 4.0,
        }
    }

    /// Per trial, in time order whatever the row order: the bin ending at the switch is 0, a
    /// burst after it stays as a step.
    #[test]
    fn excess_is_cumulative_and_zero_at_the_switch() {
        let rows = [
            bin(0, 0.0, 14),
            bin(0, -100.0, 8),
            bin(0, -50.0, 0),
            bin(0, 50.0, 4),
            bin(1, -50.0, 4),
        ];
        let refs: Vec<&BinRow> = rows.iter().collect();
        let points: Vec<(u32, (f64, f64))> = (excess_from_switch(&refs).into_iter())
            .map(|(r, p)| (r.trial, p))
            .collect();
        let expected = [
            (0, (-50.0, 4.0)),
            (0, (0.0, 0.0)),
            (0, (50.0, 10.0)),
            (0, (100.0, 10.0)),
            (1, (0.0, 0.0)),
        ];
        assert_eq!(points, expected);
    }
}
