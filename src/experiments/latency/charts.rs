//! The latency chart, HdrHistogram style: latency (log µs) against percentile on a
//! log(1/(1-p)) axis, so 50, 90, 99 and 99.9 % sit evenly apart and the tail is readable;
//! one thin line per run in its strategy's colour, so run-to-run spread shows.

use std::path::{Path, PathBuf};

use super::{HistRow, HIST};
use crate::charts::axes::log_points;
use crate::charts::spec::{color, path, Axis, Chart, Marker, Plot, Range, Ticks};
use crate::charts::{index_of, read_file, write_spec, ChartError};

/// The CSV of recorded histogram buckets the latency experiment writes into its dir.
const SIZE: (u32, u32) = (1200, 700);
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

/// The chart spec; `curves` holds (strategy index, step points) per run and is not empty.
fn chart(strategies: &[String], curves: &[(usize, Vec<(f64, f64)>)]) -> Chart {
    let all = curves.iter().flat_map(|(_, c)| c);
    let x_hi = all.clone().map(|p| p.0).fold(1.0, f64::max);
    let (lo, hi) = all.fold((f64::MAX, f64::MIN), |(lo, hi), p| {
        (lo.min(p.1), hi.max(p.1))
    });
    // A little room above and below, and at least a factor 4 so one-value runs stay readable.
    let (y_lo, y_hi) = (lo - 0.08, (hi + 0.08).max(lo + 0.6));
    let x_ticks: Vec<(f64, String)> = (std::iter::once(2f64.log10()))
        .chain((0..=x_hi.floor() as i32).map(f64::from))
        .map(|x| (x, percent_label(x)))
        .collect();
    let (mut values, light) = log_points(10f64.powf(y_lo), 10f64.powf(y_hi));
    // Less than a decade shows too few 1-2-5 ticks to read values off; label every integer.
    if values.len() < 4 {
        values.extend(light);
    }
    let y_ticks: Vec<(f64, String)> = values.iter().map(|v| (v.log10(), format!("{v}"))).collect();

    let legend = (strategies.iter().enumerate())
        .map(|(s, name)| (Marker::Line(color(s)), name.clone()))
        .collect();
    let layers =
        (curves.iter()).map(|(s, points)| path(points.clone(), color(*s), 1, None).faded(0.9));
    let x = Axis::new(
        "percentile",
        Range::Linear(0.0, x_hi * 1.03),
        Ticks::Hand(x_ticks),
        60,
    );
    let y = Axis::new(
        "latency µs (log)",
        Range::Linear(y_lo, y_hi),
        Ticks::Hand(y_ticks),
        Y_LABEL_PX,
    );
    let plot = Plot::new([0, 40, 10, 10], x, y, layers.collect());
    let note = "one line per run, ending at its max; x = percentile on a log(1/(1-p)) scale, so 90, 99, 99.9 % \
are evenly spaced";
    let title = "latency: percentile distribution per strategy";
    Chart::new(SIZE, title, note, vec![plot]).legend(10 + Y_LABEL_PX as i32, legend)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::csv_dir;
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
}
