//! The scripts charts: decisions/s and Redis CPU per decision per mode (`cost_throughput.svg`,
//! `cost_cpu.svg`: one bar per mode, one dot per run), and the flush timelines (`flush.svg`:
//! decisions and errors per bin around the flush; `flush_p99.svg`: p99 per bin), and the
//! survival matrix as a grid (`survival.svg`: event x mode, coloured by the first call's outcome).

use std::path::{Path, PathBuf};

use super::{CostRow, FlushRow, SurvivalRow, COSTS, FLUSH, SURVIVAL};
use crate::charts::bars::si;
use crate::charts::lines::{self, LineChart, Scale, Series};
use crate::charts::spec::{color, csv_name, text, Anchor, Axis, Chart, Layer, Marker, Plot, Range};
use crate::charts::spec::{Rgb, Shape, Ticks, BLACK};
use crate::charts::trials::{self, Category, Column, TrialChart};
use crate::charts::{index_of, mean, read_file, write_spec, ChartError};

/// Renders `dir/cost.csv` and `dir/flush.csv` into the four charts.
pub(crate) fn render(dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let cost = read_file(&COSTS, dir)?;
    let modes = by_mode(&cost);
    let throughput = bar_chart(
        &modes,
        "scripts: decisions/s per way of invoking the token bucket",
        "decisions/s",
        |r| r.decisions_per_s,
        |mean, rows| {
            format!(
                "{}/s · {:.0}% busy",
                si(mean),
                mean_of(rows, |r| r.redis_busy_pct)
            )
        },
    );
    let mut written = write_spec(dir, "cost_throughput", &trials::spec(throughput))?;
    let cpu = bar_chart(
        &modes,
        "scripts: Redis CPU per decision per way of invoking the token bucket",
        "Redis CPU µs per decision",
        |r| r.cpu_us_per_decision,
        |mean, rows| {
            let sent = mean_of(rows, |r| r.bytes_in_per_decision);
            format!("{mean:.1} µs · {} B sent", si(sent))
        },
    );
    written.extend(write_spec(dir, "cost_cpu", &trials::spec(cpu))?);
    let flush = read_file(&FLUSH, dir)?;
    written.extend(write_spec(
        dir,
        "flush",
        &lines::spec(flush_counts(&flush))?,
    )?);
    written.extend(write_spec(
        dir,
        "flush_p99",
        &lines::spec(flush_p99(&flush))?,
    )?);
    let survival = read_file(&SURVIVAL, dir)?;
    written.extend(write_spec(dir, "survival", &survival_grid(&survival)?)?);
    Ok(written)
}

/// Rows grouped by mode, in first-appearance order.
fn by_mode(rows: &[CostRow]) -> Vec<(String, Vec<&CostRow>)> {
    let mut names: Vec<String> = Vec::new();
    let mut groups: Vec<(String, Vec<&CostRow>)> = Vec::new();
    for r in rows {
        let i = index_of(&mut names, r.mode.to_string());
        if i == groups.len() {
            groups.push((names[i].clone(), Vec::new()));
        }
        groups[i].1.push(r);
    }
    groups
}

/// Mean of one column over a mode's runs (0 when none is finite).
fn mean_of(rows: &[&CostRow], value: fn(&CostRow) -> f64) -> f64 {
    mean(&rows.iter().map(|r| value(r)).collect::<Vec<_>>()).unwrap_or(0.0)
}

/// One bar per mode: the mean of `value`, one dot per run, and above it `note` of that mean and
/// the mode's runs.
fn bar_chart<'a>(
    modes: &[(String, Vec<&CostRow>)],
    title: &'a str,
    y_desc: &'a str,
    value: fn(&CostRow) -> f64,
    note: fn(f64, &[&CostRow]) -> String,
) -> TrialChart<'a> {
    let categories = modes.iter().enumerate().map(|(i, (name, rows))| {
        let dots: Vec<f64> = rows
            .iter()
            .map(|r| value(r))
            .filter(|v| v.is_finite())
            .collect();
        let column = Column::new(color(i), dots, |height| note(height, rows));
        Category::new(name.clone(), vec![column])
    });
    TrialChart {
        title,
        subtitle: "bar = mean over runs, dot = one run; 16 clients over 10,000 buckets".to_string(),
        x_desc: "invocation",
        y_desc,
        y_format: si,
        legend: vec![(Marker::Dot(BLACK), "one run")],
        reference: None,
        categories: categories.collect(),
    }
}

/// Per mode, decisions per bin (solid) and, where there were any, errors per bin (dashed).
fn flush_counts(rows: &[FlushRow]) -> LineChart<'static> {
    let mut series = series_by_mode(rows, |r| Some(r.decisions as f64), "decisions", false);
    let errors = series_by_mode(rows, |r| Some(r.errors as f64), "errors", true);
    series.extend(
        errors
            .into_iter()
            .filter(|s| s.points.iter().any(|p| p.1 > 0.0)),
    );
    LineChart {
        title: "scripts: SCRIPT FLUSH / FUNCTION FLUSH under load",
        note: "per bin (plotted at its start; one point per run): decisions (solid) and user-visible errors \
(dashed, modes that had any); t = 0: the flush was sent",
        x_desc: "ms after the flush",
        y_desc: "checks per bin",
        x_scale: Scale::Linear,
        y_scale: Scale::Linear,
        y_from_zero: true,
        series,
        marks: vec![(0.0, "flush".to_string())],
        shaded: Vec::new(),
        label: &|v| si(v),
    }
}

/// Per mode, the p99 latency of each bin, log scale.
fn flush_p99(rows: &[FlushRow]) -> LineChart<'static> {
    LineChart {
        title: "scripts: p99 latency per bin around the flush",
        note: "p99 of every check that ended in the bin (decisions and errors), µs; t = 0 the flush was sent",
        x_desc: "ms after the flush",
        y_desc: "p99 µs (log)",
        x_scale: Scale::Linear,
        y_scale: Scale::Log,
        y_from_zero: false,
        series: series_by_mode(rows, |r| r.p99_us, "p99", false),
        marks: vec![(0.0, "flush".to_string())],
        shaded: Vec::new(),
        label: &|v| si(v),
    }
}

/// One series per mode, in first-appearance order, one point per row (bin and run).
fn series_by_mode(
    rows: &[FlushRow],
    value: fn(&FlushRow) -> Option<f64>,
    what: &str,
    dashed: bool,
) -> Vec<Series> {
    let mut names: Vec<String> = Vec::new();
    let mut points: Vec<Vec<(f64, f64)>> = Vec::new();
    for r in rows {
        let i = index_of(&mut names, r.mode.to_string());
        if i == points.len() {
            points.push(Vec::new());
        }
        if let Some(v) = value(r) {
            points[i].push((r.t_ms as f64, v));
        }
    }
    (names.into_iter().zip(points).enumerate())
        .map(|(i, (mode, points))| Series {
            name: format!("{mode} {what}"),
            color: color(i),
            dashed,
            points,
        })
        .collect()
}

/// The colour of a first call's outcome in the survival grid.
fn outcome_color(outcome: &str) -> Rgb {
    match outcome {
        "ok" => Rgb(76, 175, 80),
        "noscript" => Rgb(255, 152, 0),
        "readonly" => Rgb(33, 150, 243),
        _ => Rgb(120, 120, 120),
    }
}

/// The survival matrix as a grid: event (rows) x mode (columns), each cell coloured by what the
/// first call answered and labelled with it and the round trips it took.
fn survival_grid(rows: &[SurvivalRow]) -> Result<Chart, ChartError> {
    let (mut modes, mut events) = (Vec::new(), Vec::new());
    for r in rows {
        index_of(&mut modes, csv_name(&r.mode));
        index_of(&mut events, csv_name(&r.event));
    }
    if rows.is_empty() {
        return Err(ChartError::Empty(SURVIVAL.name().into()));
    }
    let n = events.len();
    // The first event at the top.
    let y_of = |event: usize| (n - 1 - event) as f64;
    let mut layers = Vec::new();
    for r in rows {
        let (x, y) = (
            index_of(&mut modes, csv_name(&r.mode)) as f64,
            y_of(index_of(&mut events, csv_name(&r.event))),
        );
        let cell = Shape::Rect([(x - 0.48, y - 0.46), (x + 0.48, y + 0.46)], 0);
        layers.push(Layer::new(cell, outcome_color(&r.first_outcome)).faded(0.55));
        let label = format!("{} · {} rt", r.first_outcome, r.round_trips);
        layers.push(text((x, y), (0, -8), &label, BLACK, Anchor::CenterTop));
    }
    let ticks = (0..n).map(|e| (y_of(e), events[e].clone())).collect();
    let y = Axis::new(
        "event before the first call",
        Range::Linear(-0.5, n as f64 - 0.5),
        Ticks::Hand(ticks),
        170,
    );
    let x = Axis::category("how the token bucket is invoked", modes.clone());
    let plot = Plot::new([10, 20, 10, 10], x, y, layers);
    let legend = ["ok", "noscript", "readonly", "error"]
        .iter()
        .map(|o| (Marker::Dot(outcome_color(o)), (*o).to_string()))
        .collect();
    let title = "scripts: what the first call answers after each event";
    let note = "cell: the first call's outcome · its round trips (rt), failed calls included";
    Ok(Chart::new((1000, 120 + 60 * n as u32), title, note, vec![plot]).legend(190, legend))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::scripts::Event;
    use crate::limiter::Invocation;

    fn cost(mode: Invocation, run: u32, rate: f64, cpu: f64) -> CostRow {
        CostRow {
            mode,
            run,
            clients: 16,
            keys: 10_000,
            duration_s: 1.0,
            decisions: rate as u64,
            decisions_per_s: rate,
            errors: 0,
            noscript: 0,
            round_trips_per_decision: 1.0,
            redis_cpu_us: rate * cpu,
            cpu_us_per_decision: cpu,
            redis_busy_pct: 95.0,
            command: mode.command().into(),
            command_calls: rate as u64,
            usec_per_call: cpu / 2.0,
            other_commands: String::new(),
            bytes_in_per_decision: 166.0,
            bytes_out_per_decision: 18.0,
            client_cpu_s: 1.0,
        }
    }

    fn bin(mode: Invocation, t_ms: i64, decisions: u64, errors: u64) -> FlushRow {
        FlushRow {
            mode,
            fallback: mode.fallback().into(),
            flush: "SCRIPT FLUSH".into(),
            run: 0,
            t_ms,
            bin_ms: 100,
            decisions,
            errors,
            noscript: 0,
            round_trips: decisions + errors,
            p50_us: Some(300.0),
            p99_us: (decisions + errors > 0).then_some(900.0),
            max_us: Some(1500.0),
            reload_at_ms: None,
            first_error: String::new(),
        }
    }

    fn write<R: serde::Serialize>(path: &Path, rows: &[R]) {
        let mut w = csv::Writer::from_path(path).unwrap();
        rows.iter().for_each(|r| w.serialize(r).unwrap());
        w.flush().unwrap();
    }

    #[test]
    fn renders_cost_bars_and_flush_timelines() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let costs = [
            cost(Invocation::Eval, 0, 40_000.0, 22.0),
            cost(Invocation::Evalsha, 0, 45_000.0, 19.5),
            cost(Invocation::Eval, 1, 41_000.0, 21.0),
        ];
        write(&COSTS.path(dir), &costs);
        let bins = [
            bin(Invocation::Evalsha, -100, 4000, 0),
            bin(Invocation::Evalsha, 0, 0, 9000),
            bin(Invocation::EvalshaEval, -100, 4000, 0),
            bin(Invocation::EvalshaEval, 0, 3900, 0),
        ];
        write(&FLUSH.path(dir), &bins);
        let survival = [
            SurvivalRow::example(Invocation::Evalsha, Event::Replica, "noscript", 1),
            SurvivalRow::example(Invocation::Fcall, Event::Replica, "readonly", 1),
            SurvivalRow::example(Invocation::Fcall, Event::RestartRdb, "ok", 1),
        ];
        write(&SURVIVAL.path(dir), &survival);
        let written = render(dir).unwrap();
        assert_eq!(written.len(), 10);
        let svg = std::fs::read_to_string(dir.join("survival.svg")).unwrap();
        for s in [
            "noscript · 1 rt",
            "readonly · 1 rt",
            "restart-rdb",
            "replica",
            "fcall",
        ] {
            assert!(svg.contains(s), "the survival grid lacks {s}");
        }
        let svg = std::fs::read_to_string(dir.join("cost_cpu.svg")).unwrap();
        assert!(
            svg.contains("21.5 µs") && svg.contains("evalsha"),
            "mean of eval's runs"
        );
        let svg = std::fs::read_to_string(dir.join("flush.svg")).unwrap();
        assert!(svg.contains("evalsha errors") && !svg.contains("evalsha-eval errors"));
    }
}
