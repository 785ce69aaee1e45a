//! The latency chart, HdrHistogram style: latency (log µs) against percentile on a
//! log(1/(1-p)) axis, so 50, 90, 99 and 99.9 % sit evenly apart and the tail is readable;
//! one panel per strategy (nine strategies' 27 runs on one plot could not be told apart), each
//! run a line in the strategy's colour over the GET baseline's runs, on axes all panels share.

use std::path::{Path, PathBuf};

use super::{HistRow, HIST};
use crate::charts::axes::log_points;
use crate::charts::spec::{
    color, path, text, Anchor, Axis, Chart, Layer, Marker, Plot, Range, Rgb, Ticks, BLACK,
};
use crate::charts::{index_of, read_file, write_spec, ChartError};

/// Chart width (the height follows the rows of panels).
const WIDTH: u32 = 1200;
const Y_LABEL_PX: u32 = 80;

/// One run's histogram: its strategy's index and its nonempty buckets sorted by value.
#[derive(Debug, PartialEq)]
pub(crate) struct Run {
    strategy: usize,
    buckets: Vec<(f64, u64)>,
}

/// Groups buckets into runs (strategy, run) in first-appearance order; pure so it is testable.
pub(crate) fn group(rows: &[HistRow]) -> (Vec<String>, Vec<Run>) {
    let (mut strategies, mut keys) = (Vec::new(), Vec::new());
    let mut runs: Vec<Run> = Vec::new();
    for r in rows.iter().filter(|r| r.count > 0 && r.value_us > 0.0) {
        let strategy = index_of(&mut strategies, r.strategy.to_string());
        let i = index_of(&mut keys, (&r.strategy, &r.run));
        if i == runs.len() {
            let buckets = Vec::new();
            runs.push(Run { strategy, buckets });
        }
        runs[i].buckets.push((r.value_us, r.count));
    }
    for run in &mut runs {
        run.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    (strategies, runs)
}

/// Percentile `p` (0..1) on the x axis: log10(1/(1-p)), so 90 % -> 1, 99 % -> 2, 99.9 % -> 3.
fn x_of(p: f64) -> f64 {
    -(1.0 - p).log10()
}

/// The run's percentile curve as a step line of (x, log10 µs): each bucket's value holds from
/// the percentile where it starts to where it ends. With n samples the curve stops at
/// percentile 1 - 1/n (x = log10 n), where the last step is the run's max.
fn curve(run: &Run) -> Vec<(f64, f64)> {
    let total: u64 = run.buckets.iter().map(|b| b.1).sum();
    let cap = (total.max(2) as f64).log10();
    let (mut seen, mut from) = (0u64, 0.0);
    let mut points = Vec::with_capacity(2 * run.buckets.len());
    for &(value, count) in &run.buckets {
        seen += count;
        let to = x_of(seen as f64 / total as f64).min(cap);
        points.push((from, value.log10()));
        points.push((to, value.log10()));
        from = to;
    }
    points
}

/// "50%", "90%", "99.9%" for the ticks at x = log10(2), 1, 3.
fn percent_label(x: f64) -> String {
    let digits = (x.round() as usize).saturating_sub(2);
    format!("{:.digits$}%", 100.0 * (1.0 - 10f64.powf(-x)))
}

/// Renders `dir/latency_hist.csv` into `dir/latency_cdf.svg` and `dir/latency_cdf.png`.
pub(crate) fn render(dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let (strategies, runs) = group(&read_file(&HIST, dir)?);
    // Rows exist but every bucket is empty.
    if runs.is_empty() {
        return Err(ChartError::Empty(HIST.path(dir)));
    }
    let curves: Vec<(usize, Vec<(f64, f64)>)> =
        runs.iter().map(|r| (r.strategy, curve(r))).collect();
    write_spec(dir, "latency_cdf", &chart(&strategies, &curves))
}

/// The strategy every panel shows as its dashed baseline: a plain GET, the cheapest command.
const BASELINE: &str = "get";
/// Panels per row, and the height of one row of panels.
const COLUMNS: usize = 3;
const ROW_PX: u32 = 300;
const HEADER_PX: u32 = 110;
const GREY: Rgb = Rgb(110, 110, 110);

/// The axes every panel shares: percentile ticks up to `x_hi`, log µs ticks over `y`.
struct Frame {
    x_hi: f64,
    y: (f64, f64),
    x_ticks: Vec<(f64, String)>,
    y_ticks: Vec<(f64, String)>,
}

impl Frame {
    /// The frame of all `curves` (not empty), so panels can be compared at a glance.
    fn of(curves: &[(usize, Vec<(f64, f64)>)]) -> Self {
        let all = curves.iter().flat_map(|(_, c)| c);
        let x_hi = all.clone().map(|p| p.0).fold(1.0, f64::max);
        let (lo, hi) = all.fold((f64::MAX, f64::MIN), |(lo, hi), p| {
            (lo.min(p.1), hi.max(p.1))
        });
        // A little room above and below, and at least a factor 4 so one-value runs stay readable.
        let y = (lo - 0.08, (hi + 0.08).max(lo + 0.6));
        // From 50 %: a 0 % tick would run into it on a panel a third of the chart wide.
        let x_ticks = (std::iter::once(2f64.log10()))
            .chain((1..=x_hi.floor() as i32).map(f64::from))
            .map(|x| (x, percent_label(x)))
            .collect();
        let (mut values, light) = log_points(10f64.powf(y.0), 10f64.powf(y.1));
        // Less than a decade shows too few 1-2-5 ticks to read values off; label every integer.
        if values.len() < 4 {
            values.extend(light);
        }
        let y_ticks = values.iter().map(|v| (v.log10(), format!("{v}"))).collect();
        Frame {
            x_hi,
            y,
            x_ticks,
            y_ticks,
        }
    }

    /// An empty panel; only the left column names the y axis and only the bottom row the x axis.
    fn panel(&self, (left, bottom): (bool, bool), layers: Vec<Layer>) -> Plot {
        let desc = |show: bool, d: &str| if show { d.to_string() } else { String::new() };
        let x_range = Range::Linear(0.0, self.x_hi * 1.03);
        let x = Axis::new(
            desc(bottom, "percentile"),
            x_range,
            Ticks::Hand(self.x_ticks.clone()),
            60,
        );
        let y_range = Range::Linear(self.y.0, self.y.1);
        let y_desc = desc(left, "latency µs (log)");
        let y = Axis::new(
            y_desc,
            y_range,
            Ticks::Hand(self.y_ticks.clone()),
            Y_LABEL_PX,
        );
        Plot::new([12, 20, 4, 6], x, y, layers)
    }
}

/// The chart spec; `curves` holds (strategy index, step points) per run and is not empty. One
/// panel per strategy, its runs in its colour over the baseline's runs dashed in grey.
fn chart(strategies: &[String], curves: &[(usize, Vec<(f64, f64)>)]) -> Chart {
    let frame = Frame::of(curves);
    let baseline = strategies.iter().position(|s| s == BASELINE);
    let runs_of = |s: usize| {
        curves
            .iter()
            .filter(move |(of, _)| *of == s)
            .map(|(_, c)| c)
    };
    let rows = strategies.len().div_ceil(COLUMNS);
    let plots = (strategies.iter().enumerate()).map(|(s, name)| {
        let mut layers: Vec<Layer> = Vec::new();
        if let Some(b) = baseline.filter(|b| *b != s) {
            let dashed = |c: &Vec<(f64, f64)>| path(c.clone(), GREY, 1, Some((6, 4))).faded(0.8);
            layers.extend(runs_of(b).map(dashed));
        }
        layers.extend(runs_of(s).map(|c| path(c.clone(), color(s), 2, None).faded(0.85)));
        let at = (0.02 * frame.x_hi, frame.y.1);
        layers.push(text(at, (4, 2), name, color(s), Anchor::LeftTop));
        frame.panel((s % COLUMNS == 0, s / COLUMNS + 1 == rows), layers)
    });
    let mut legend = vec![(
        Marker::Line(BLACK),
        "one run (panel's strategy, in its colour)".to_string(),
    )];
    if baseline.is_some() {
        legend.push((
            Marker::Dashed(GREY),
            format!("{BASELINE}: the baseline's runs, in every panel"),
        ));
    }
    let note = "one line per run, ending at its max; x = percentile on a log(1/(1-p)) scale, so 90, 99, 99.9 % \
are evenly spaced";
    let title = "latency: percentile distribution, one panel per strategy";
    let size = (WIDTH, HEADER_PX + rows as u32 * ROW_PX);
    let mut chart =
        Chart::new(size, title, note, plots.collect()).legend(10 + Y_LABEL_PX as i32, legend);
    chart.columns = COLUMNS;
    chart
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::csv_dir;
    use crate::charts::spec::Shape;
    use std::fs;

    const HEADER: &str = "strategy,run,value_us,count,extra";
    const ROWS: &str = "\
lua-bucket,0,90,50,x
lua-bucket,0,120,40,x
lua-bucket,0,400,9,x
lua-bucket,0,2000,1,x
lua-bucket,1,95,60,x
lua-bucket,1,130,40,x
incr-window,0,60,99,x
incr-window,0,900,1,x
";

    #[test]
    fn renders_svg_and_png_with_strategies() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = csv_dir(
            tmp.path(),
            "latency",
            HIST.name(),
            &format!("{HEADER}\n{ROWS}"),
        );
        let paths = render(&dir).unwrap();
        assert_eq!(
            paths,
            ["latency_cdf.svg", "latency_cdf.png"].map(|n| dir.join(n))
        );
        assert!(paths.iter().all(|p| p.is_file()));
        let svg = fs::read_to_string(&paths[0]).unwrap();
        for s in ["lua-bucket", "incr-window", "99%", "50%"] {
            assert!(svg.contains(s), "svg lacks {s}");
        }
    }

    #[test]
    fn header_only_is_empty() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = csv_dir(tmp.path(), "latency", HIST.name(), &format!("{HEADER}\n"));
        let err = render(&dir).unwrap_err();
        assert!(matches!(err, ChartError::Empty(_)), "{err}");
    }

    #[test]
    fn curve_steps_through_percentiles_and_stops_at_the_max() {
        let csv = format!("{HEADER}\n{ROWS}");
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        let rows: Vec<HistRow> = reader.deserialize().collect::<Result<_, _>>().unwrap();
        let (strategies, runs) = group(&rows);
        assert_eq!(strategies, ["lua-bucket", "incr-window"]);
        assert_eq!(runs.len(), 3);
        let c = curve(&runs[0]);
        let xs: Vec<f64> = c.iter().map(|p| (p.0 * 1e6).round() / 1e6).collect();
        // 100 samples: 50 % -> log10 2, 90 % -> 1, 99 % -> 2, 100 % capped at log10 100 = 2.
        let half = (2f64.log10() * 1e6).round() / 1e6;
        assert_eq!(xs, [0.0, half, half, 1.0, 1.0, 2.0, 2.0, 2.0]);
        assert_eq!(c.last().map(|p| p.1), Some(2000f64.log10()));
        assert_eq!([0.0, 1.0, 3.0].map(percent_label), ["0%", "90%", "99.9%"]);
        assert_eq!(percent_label(2f64.log10()), "50%");
    }

    /// One panel per strategy; the baseline's runs are dashed in every other panel only.
    #[test]
    fn each_strategy_gets_a_panel_over_the_baseline() {
        let strategies = ["lua-bucket".to_string(), BASELINE.to_string()];
        let run = |s: usize| (s, vec![(0.0, 2.0), (1.0, 2.5)]);
        let chart = chart(&strategies, &[run(0), run(0), run(1)]);
        assert_eq!((chart.plots.len(), chart.columns), (2, COLUMNS));
        let dashed = |p: &Plot| {
            let dashes = p
                .layers
                .iter()
                .filter(|l| matches!(l.shape, Shape::Path(_, _, Some(_))));
            dashes.count()
        };
        assert_eq!([dashed(&chart.plots[0]), dashed(&chart.plots[1])], [1, 0]);
        // Two runs and a name, one run of the baseline and its name.
        assert_eq!(
            chart
                .plots
                .iter()
                .map(|p| p.layers.len())
                .collect::<Vec<_>>(),
            [4, 2]
        );
    }
}
