//! The pods charts, from pods.csv and runs.csv alone:
//! - `pods.svg`: reached per second over time on plain loopback, one panel per strategy, one
//!   colour per pods x offered rate; decided allowed dashed beside it; the limit in red.
//! - `pods-rtt.svg`: the same through the fault proxy, one panel per strategy, one colour per
//!   added round trip x offered rate.
//! - `pods-growth.svg`: mean reached per second of every run against offered rate x added round
//!   trip (what arrives within one round trip), with the naive window's prediction, limit + that.

use super::rows::{PodsRunRow, PodsSecondRow};
use super::{PodStrategy, SecondPhase};
use super::{RUNS, SECONDS};
use crate::charts::read_file;
use crate::charts::spec::{
    color, dots, limit_line, path, tag, Axis, Chart, Marker, Plot, Range, Ticks, BLACK,
};
use crate::charts::{index_of, write_spec, ChartError};
use std::path::{Path, PathBuf};

const WIDTH: u32 = 1200;
const PANEL_PX: u32 = 300;

/// One line pair of a panel: reached and decided per second, trials one after another.
#[derive(Debug, PartialEq)]
pub(crate) struct Series {
    pub name: String,
    /// Per trial: (second on the chart's time axis, reached, decided allowed).
    pub trials: Vec<Vec<(f64, f64, f64)>>,
}

/// One panel: a strategy's series.
#[derive(Debug, PartialEq)]
pub(crate) struct Panel {
    pub strategy: PodStrategy,
    pub series: Vec<Series>,
    pub limit: f64,
}

/// Groups the seconds of the runs `keep` selects into panels by strategy and series by `name`;
/// trials follow each other on the time axis; tail seconds (after the schedule) are left out.
/// Pure, for tests.
pub(crate) fn panels(
    rows: &[PodsSecondRow],
    keep: fn(&PodsSecondRow) -> bool,
    name: fn(&PodsSecondRow) -> String,
) -> Vec<Panel> {
    let in_schedule = |r: &&PodsSecondRow| r.phase != SecondPhase::Tail;
    let run_len = (rows.iter().filter(in_schedule).map(|r| r.second + 1).max()).unwrap_or(1) as f64;
    let (mut strategies, mut out): (Vec<PodStrategy>, Vec<Panel>) = (Vec::new(), Vec::new());
    for r in rows.iter().filter(in_schedule).filter(|r| keep(r)) {
        let i = index_of(&mut strategies, r.strategy);
        if i == out.len() {
            out.push(Panel {
                strategy: r.strategy,
                series: Vec::new(),
                limit: r.limit as f64,
            });
        }
        let label = name(r);
        let series = &mut out[i].series;
        let k = match series.iter().position(|s| s.name == label) {
            Some(k) => k,
            None => {
                series.push(Series {
                    name: label,
                    trials: Vec::new(),
                });
                series.len() - 1
            }
        };
        let x = f64::from(r.trial) * run_len + f64::from(r.second);
        let point = (x, r.reached as f64, r.decided_allowed as f64);
        let trials = &mut series[k].trials;
        let t = r.trial as usize;
        if trials.len() <= t {
            trials.resize(t + 1, Vec::new());
        }
        trials[t].push(point);
    }
    out
}

/// Renders the charts that have rows in `dir`.
pub(crate) fn render(dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let rows = read_file(&SECONDS, dir)?;
    let mut out = Vec::new();
    let loopback = panels(
        &rows,
        |r| r.rtt_ms == 0.0,
        |r| format!("{} pods, {}/s", r.pods, r.offered_rps),
    );
    if !loopback.is_empty() {
        let title = "pods: reached the partner per second, plain loopback";
        out.extend(write_spec(dir, "pods", &timeline(title, &loopback))?);
    }
    let proxied = panels(
        &rows,
        |r| r.rtt_ms > 0.0,
        |r| format!("+{} ms, {} pods, {}/s", r.rtt_ms, r.pods, r.offered_rps),
    );
    if !proxied.is_empty() {
        let title = "pods: reached the partner per second, round trip added by the proxy";
        out.extend(write_spec(dir, "pods-rtt", &timeline(title, &proxied))?);
    }
    let runs = read_file(&RUNS, dir)?;
    out.extend(write_spec(dir, "pods-growth", &growth(&runs))?);
    Ok(out)
}

/// Panels stacked, one colour per series name across all panels.
fn timeline(title: &str, panels: &[Panel]) -> Chart {
    let mut names: Vec<String> = Vec::new();
    let mut plots = Vec::new();
    let points = |p: &Panel| {
        let all = p.series.iter().flat_map(|s| s.trials.iter().flatten());
        all.copied().collect::<Vec<_>>()
    };
    let last = (panels.iter().flat_map(&points).map(|p| p.0)).fold(1.0f64, f64::max);
    let x_hi = last + 0.5;
    for panel in panels {
        let y_hi = (points(panel).iter().map(|p| p.1.max(p.2))).fold(panel.limit, f64::max) * 1.15;
        let mut layers = vec![limit_line((-0.5, panel.limit), (x_hi, panel.limit))];
        for s in &panel.series {
            let c = color(index_of(&mut names, s.name.clone()));
            for trial in &s.trials {
                let reached: Vec<(f64, f64)> = trial.iter().map(|p| (p.0, p.1)).collect();
                let decided: Vec<(f64, f64)> = trial.iter().map(|p| (p.0, p.2)).collect();
                layers.push(path(decided, c, 2, Some((6, 4))));
                layers.push(path(reached.clone(), c, 2, None));
                layers.push(dots(reached, c, 3));
            }
        }
        let seconds = (0..=last as u32)
            .map(|s| (f64::from(s), s.to_string()))
            .collect();
        let x = Axis::new(
            format!(
                "{}: second of the run (trials one after another; warm-up seconds first)",
                panel.strategy
            ),
            Range::Linear(-0.5, x_hi),
            Ticks::Hand(seconds),
            50,
        );
        let y = Axis::new(
            "requests / s",
            Range::Linear(0.0, y_hi),
            Ticks::Auto(6, |v| format!("{v}")),
            70,
        );
        let mut plot = Plot::new([10, 70, 10, 10], x, y, layers);
        plot.over = vec![tag((x_hi, panel.limit), "limit")];
        plots.push(plot);
    }
    let mut legend: Vec<(Marker, String)> = (names.iter().enumerate())
        .map(|(i, n)| (Marker::Line(color(i)), n.clone()))
        .collect();
    legend.push((
        Marker::Dashed(BLACK),
        "decided allowed by the pods (dashed)".into(),
    ));
    legend.push((Marker::Dashed(crate::charts::spec::RED), "limit".into()));
    let note = "solid with dots: received by the sink per second on its clock; dashed: decided allowed by \
the pods per second on theirs; seconds after the schedule (the tail) are in pods.csv only";
    let height = 140 + PANEL_PX * panels.len().max(1) as u32;
    Chart::new((WIDTH, height), title, note, plots).legend(90, legend)
}

/// Reached per second of every run against offered x added round trip, by strategy.
fn growth(runs: &[PodsRunRow]) -> Chart {
    let limit = runs.first().map_or(100.0, |r| r.limit as f64);
    let x_hi = runs
        .iter()
        .map(|r| r.offered_within_rtt)
        .fold(1.0f64, f64::max)
        * 1.08;
    let y_hi = (runs.iter().map(|r| r.reached_per_s)).fold(limit + x_hi, f64::max) * 1.08;
    let mut strategies: Vec<PodStrategy> = Vec::new();
    let mut layers = vec![
        limit_line((0.0, limit), (x_hi, limit)),
        path(
            vec![(0.0, limit), (x_hi, limit + x_hi)],
            BLACK,
            1,
            Some((4, 4)),
        ),
    ];
    for r in runs.iter().filter(|r| r.strategy.on_redis().is_some()) {
        let c = color(index_of(&mut strategies, r.strategy));
        layers.push(dots(vec![(r.offered_within_rtt, r.reached_per_s)], c, 5).faded(0.8));
    }
    let mut legend: Vec<(Marker, String)> = (strategies.iter().enumerate())
        .map(|(i, s)| (Marker::Dot(color(i)), s.to_string()))
        .collect();
    legend.push((Marker::Dashed(BLACK), "limit + offered x round trip".into()));
    legend.push((Marker::Dashed(crate::charts::spec::RED), "limit".into()));
    let x = Axis::new(
        "offered rate x added round trip: requests arriving within one round trip",
        Range::Linear(0.0, x_hi),
        Ticks::Auto(10, |v| format!("{v}")),
        60,
    );
    let y = Axis::new(
        "reached / s (mean of measured seconds)",
        Range::Linear(0.0, y_hi),
        Ticks::Auto(8, |v| format!("{v}")),
        80,
    );
    let mut plot = Plot::new([10, 70, 10, 10], x, y, layers);
    plot.over = vec![tag((x_hi, limit), "limit")];
    let note =
        "one dot per run on Redis (every pod count, offered rate and trial); plain loopback at 0";
    Chart::new(
        (WIDTH, 700),
        "pods: the naive window's leak grows with offered rate x round trip",
        note,
        vec![plot],
    )
    .legend(90, legend)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::Strategy;

    fn second(
        strategy: PodStrategy,
        pods: u32,
        rtt_ms: f64,
        trial: u32,
        s: u32,
        reached: u64,
    ) -> PodsSecondRow {
        PodsSecondRow {
            strategy,
            pods,
            offered_rps: 400.0,
            rtt_ms,
            trial,
            second: s,
            phase: SecondPhase::Measured,
            limit: 100,
            offered: 400,
            decided_allowed: reached,
            denied: 400 - reached,
            sent: reached,
            reached,
            alert: false,
        }
    }

    #[test]
    fn panels_group_by_strategy_and_lay_trials_end_to_end() {
        let naive = PodStrategy::Redis(Strategy::NaiveWindow);
        let rows = vec![
            second(naive, 4, 0.0, 0, 0, 150),
            second(naive, 4, 0.0, 0, 1, 160),
            second(naive, 4, 0.0, 1, 0, 170),
            second(naive, 1, 0.0, 0, 0, 100),
            second(PodStrategy::InMemory, 4, 0.0, 0, 0, 400),
            second(naive, 4, 50.0, 0, 0, 120),
        ];
        let p = panels(&rows, |r| r.rtt_ms == 0.0, |r| format!("{} pods", r.pods));
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].series.len(), 2);
        assert_eq!(
            p[0].series[0].trials,
            vec![
                vec![(0.0, 150.0, 150.0), (1.0, 160.0, 160.0)],
                vec![(2.0, 170.0, 170.0)]
            ]
        );
        assert_eq!(p[1].strategy, PodStrategy::InMemory);
        let tmp = tempfile::tempdir().unwrap();
        let files = write_spec(tmp.path(), "t", &timeline("t", &p)).unwrap();
        let svg = std::fs::read_to_string(&files[0]).unwrap();
        assert!(
            svg.contains("4 pods") && svg.contains("limit"),
            "svg lacks its labels"
        );
    }
}
