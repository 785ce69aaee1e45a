//! The pods charts, from pods.csv and runs.csv alone:
//! - `pods.svg`: reached per measured second against the limit on plain loopback, one group per
//!   strategy, one colour per pods x offered rate (a dot per second, a dash at the mean).
//! - `pods-rtt.svg`: the same through the fault proxy, one colour per added round trip x pods x
//!   offered rate.
//! - `pods-growth.svg`: mean reached per second of every run against offered rate x added round
//!   trip (what arrives within one round trip), with the naive window's prediction, limit + that.
//! - `pods-loop.svg`: the event-loop sweep's reached per measured second, one colour per pods x
//!   work per request (and clock spread, in the skew variation).

use super::rows::{PodsRunRow, PodsSecondRow};
use super::{PodStrategy, SecondPhase};
use super::{RUNS, SECONDS};
use crate::charts::read_file;
use crate::charts::spec::{
    color, dots, limit_line, path, tag, Axis, Chart, Marker, Plot, Range, Ticks, BLACK, RED,
};
use crate::charts::trials::{dash_spec, Category, Column, DashChart};
use crate::charts::{index_of, write_spec, ChartError};
use std::path::{Path, PathBuf};

const WIDTH: u32 = 1200;

/// Reached per measured second of the runs one chart shows: strategies in CSV order, each with
/// one column of seconds per configuration (`names`, in CSV order too).
#[derive(Debug, PartialEq)]
pub(crate) struct Reached {
    pub names: Vec<String>,
    /// Per strategy, per configuration: reached in each measured second of every trial.
    pub strategies: Vec<(PodStrategy, Vec<Vec<f64>>)>,
    pub limit: f64,
}

/// Groups the measured seconds of the runs `keep` selects by strategy and by `name` (the
/// configuration); warm-up and tail seconds are left out, as in the statistics. Pure, for tests.
pub(crate) fn reached(
    rows: &[PodsSecondRow],
    keep: fn(&PodsSecondRow) -> bool,
    name: fn(&PodsSecondRow) -> String,
) -> Reached {
    let measured = |r: &&PodsSecondRow| r.phase == SecondPhase::Measured && keep(r);
    let (mut names, mut order) = (Vec::new(), Vec::new());
    let mut strategies: Vec<(PodStrategy, Vec<Vec<f64>>)> = Vec::new();
    let mut limit = 0.0;
    for r in rows.iter().filter(measured) {
        let (s, k) = (
            index_of(&mut order, r.strategy),
            index_of(&mut names, name(r)),
        );
        if s == strategies.len() {
            strategies.push((r.strategy, Vec::new()));
        }
        let columns = &mut strategies[s].1;
        if columns.len() <= k {
            columns.resize(k + 1, Vec::new());
        }
        columns[k].push(r.reached as f64);
        limit = r.limit as f64;
    }
    Reached {
        names,
        strategies,
        limit,
    }
}

/// Renders the charts that have rows in `dir`.
pub(crate) fn render(dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let rows = read_file(&SECONDS, dir)?;
    let mut out = Vec::new();
    let loopback = reached(
        &rows,
        |r| r.rtt_ms == 0.0 && r.partner_ms == 0.0,
        |r| format!("{}, {}/s", pods(r.pods), r.offered_rps),
    );
    if !loopback.strategies.is_empty() {
        let title = "pods: reached the partner per second against the limit, plain loopback";
        out.extend(write_spec(dir, "pods", &against_limit(title, &loopback))?);
    }
    let proxied = reached(
        &rows,
        |r| r.rtt_ms > 0.0,
        |r| format!("+{} ms, {}, {}/s", r.rtt_ms, pods(r.pods), r.offered_rps),
    );
    if !proxied.strategies.is_empty() {
        let title =
            "pods: reached the partner per second against the limit, round trip added by the proxy";
        out.extend(write_spec(
            dir,
            "pods-rtt",
            &against_limit(title, &proxied),
        )?);
    }
    let event_loop = reached(
        &rows,
        |r| r.partner_ms > 0.0,
        |r| {
            let skew = match r.skew_ms > 0.0 {
                true => format!(", clocks spread {} ms", r.skew_ms),
                false => String::new(),
            };
            format!("{}, {} ms work{skew}", pods(r.pods), r.work_ms)
        },
    );
    if !event_loop.strategies.is_empty() {
        let title = "pods: reached the partner per second, each request holding its event loop for its work";
        out.extend(write_spec(
            dir,
            "pods-loop",
            &against_limit(title, &event_loop),
        )?);
    }
    let runs = read_file(&RUNS, dir)?;
    let swept: Vec<PodsRunRow> = runs.into_iter().filter(|r| r.partner_ms == 0.0).collect();
    out.extend(write_spec(dir, "pods-growth", &growth(&swept))?);
    Ok(out)
}

/// "1 pod", "4 pods".
fn pods(n: u32) -> String {
    match n {
        1 => "1 pod".into(),
        n => format!("{n} pods"),
    }
}

/// One category per strategy, one column per configuration: each measured second a dot, their
/// mean a dash, the limit a red line; a log axis when the seconds span ten times or more.
fn against_limit(title: &str, r: &Reached) -> Chart {
    let all = r
        .strategies
        .iter()
        .flat_map(|(_, c)| c.iter().flatten())
        .copied();
    let (lo, hi) = all.fold((r.limit, r.limit), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (y, y_desc) = match lo > 0.0 && hi / lo >= 10.0 {
        true => (Range::Log(lo / 1.5, hi * 1.5), "reached / s (log)"),
        false => (Range::Linear(0.0, hi * 1.15), "reached / s"),
    };
    let n = r.strategies.len() as f64;
    let categories = (r.strategies.iter()).map(|(strategy, seconds)| {
        let columns = (seconds.iter().enumerate())
            .map(|(k, s)| Column::new(color(k), s.clone(), |_| String::new()))
            .collect();
        (Category::new(strategy.to_string(), columns), String::new())
    });
    dash_spec(DashChart {
        size: (WIDTH, 700),
        title: title.to_string(),
        x_desc: "strategy; one dot per measured second of every trial (warm-up and tail seconds left out)".into(),
        y_desc: y_desc.into(),
        y,
        y_ticks: Ticks::Auto(10, |v| format!("{v}")),
        y_label_px: 70,
        series: (r.names.iter().enumerate()).map(|(k, n)| (n.clone(), color(k))).collect(),
        legend_extra: vec![(Marker::Dashed(RED), "limit".into())],
        categories: categories.collect(),
        marks: vec![limit_line((-0.5, r.limit), (n - 0.5, r.limit))],
        over: vec![tag((n - 0.5, r.limit), "limit")],
    })
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
    legend.push((Marker::Dashed(RED), "limit".into()));
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
            work_ms: 0.0,
            partner_ms: 0.0,
            skew_ms: 0.0,
            trial,
            second: s,
            phase: SecondPhase::Measured,
            limit: 100,
            offered: 400,
            decided_allowed: reached,
            denied: 400u64.saturating_sub(reached),
            sent: reached,
            reached,
            alert: false,
        }
    }

    #[test]
    fn reached_groups_measured_seconds_by_strategy_and_configuration() {
        let naive = PodStrategy::Redis(Strategy::NaiveWindow);
        let mut warm = second(naive, 4, 0.0, 0, 0, 900);
        warm.phase = SecondPhase::WarmUp;
        let rows = vec![
            warm,
            second(naive, 4, 0.0, 0, 1, 150),
            second(naive, 4, 0.0, 1, 1, 170),
            second(naive, 1, 0.0, 0, 1, 100),
            second(PodStrategy::InMemory, 4, 0.0, 0, 1, 1200),
            second(naive, 4, 50.0, 0, 1, 120),
        ];
        let r = reached(&rows, |r| r.rtt_ms == 0.0, |r| format!("{} pods", r.pods));
        assert_eq!(
            (r.names.clone(), r.limit),
            (vec!["4 pods".into(), "1 pods".into()], 100.0)
        );
        assert_eq!(
            r.strategies[0],
            (naive, vec![vec![150.0, 170.0], vec![100.0]])
        );
        assert_eq!(r.strategies[1], (PodStrategy::InMemory, vec![vec![1200.0]]));
        let chart = against_limit("t", &r);
        // 100..1200 spans more than ten times: a log axis.
        assert!(matches!(chart.plots[0].y.range, Range::Log(..)));
        let tmp = tempfile::tempdir().unwrap();
        let files = write_spec(tmp.path(), "t", &chart).unwrap();
        let svg = std::fs::read_to_string(&files[0]).unwrap();
        assert!(svg.contains("4 pods") && svg.contains("limit") && svg.contains("in-memory"));
    }
}
