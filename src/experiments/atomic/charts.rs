//! The atomic chart, correctness vs cost: one point per strategy at its mean Redis CPU per
//! decision (x) and mean admission error (y), with min-max whiskers over its rows, so the
//! cheap-but-wrong and the correct-but-costly strategies separate at a glance.

use super::ATOMIC;
use crate::charts::read_file;
use std::path::{Path, PathBuf};

use super::AtomicRow;
use crate::charts::spec::{
    color, dots, limit_line, path, tag, Axis, Chart, Layer, Plot, Range, Shape, Ticks, BLACK,
};
use crate::charts::{index_of, mean, write_spec, ChartError};

const SIZE: (u32, u32) = (1200, 700);
const POINT_PX: i32 = 6;
/// y ticks (error %) offered to the symlog axis; only those in range are drawn.
const TICKS: [f64; 17] = [
    -1000.0, -500.0, -100.0, -50.0, -10.0, -5.0, -1.0, 0.0, 1.0, 5.0, 10.0, 50.0, 100.0, 500.0,
    1000.0, 5000.0, 10000.0,
];

/// One strategy's rows: CPU µs per decision and admission error % of what was allowed.
#[derive(Debug, PartialEq)]
pub(crate) struct Strategy {
    name: String,
    cpu: Vec<f64>,
    error_pct: Vec<f64>,
}

/// Admission error of one row as % of the requests it should have admitted,
/// `min(capacity, checks)`; positive = over-admission. `None` when nothing was allowed.
fn error_pct(r: &AtomicRow) -> Option<f64> {
    let allowed = r.capacity.min(r.checks);
    (allowed > 0).then(|| (r.admitted as f64 - allowed as f64) / allowed as f64 * 100.0)
}

/// Groups rows by strategy in first-appearance order; pure so it is unit-testable.
pub(crate) fn group(rows: &[AtomicRow]) -> Vec<Strategy> {
    let mut names = Vec::new();
    let mut out: Vec<Strategy> = Vec::new();
    for r in rows {
        let i = index_of(&mut names, r.strategy);
        if i == out.len() {
            let (cpu, error_pct) = (Vec::new(), Vec::new());
            let name = r.strategy.to_string();
            out.push(Strategy {
                name,
                cpu,
                error_pct,
            });
        }
        out[i].cpu.push(r.cpu_us_per_decision);
        out[i].error_pct.extend(error_pct(r));
    }
    out
}

/// Symmetric log: about linear within ±1 %, logarithmic beyond, so +900 % and -40 % share one
/// readable axis.
fn symlog(pct: f64) -> f64 {
    pct.signum() * pct.abs().ln_1p() / std::f64::consts::LN_10
}

/// A drawable point: (min, mean, max) of x (µs) and of y (symlog %).
struct Summary {
    x: (f64, f64, f64),
    y: (f64, f64, f64),
}

/// (min, mean, max) of the finite `values`, if any.
fn spread(values: &[f64]) -> Option<(f64, f64, f64)> {
    let finite = values.iter().copied().filter(|v| v.is_finite());
    let lo = finite.clone().fold(f64::INFINITY, f64::min);
    let hi = finite.fold(f64::NEG_INFINITY, f64::max);
    Some((lo, mean(values)?, hi))
}

fn summarize(s: &Strategy) -> Option<Summary> {
    let x = spread(&s.cpu)?;
    let (lo, mid, hi) = spread(&s.error_pct)?;
    let y = (symlog(lo), symlog(mid), symlog(hi));
    Some(Summary { x, y })
}

/// Renders `dir/atomic.csv` into `dir/atomic.svg` and `dir/atomic.png`.
pub(crate) fn render(dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let strategies = group(&read_file(&ATOMIC, dir)?);
    let points: Vec<(&str, Summary)> = (strategies.iter())
        .filter_map(|s| Some((s.name.as_str(), summarize(s)?)))
        .collect();
    // Rows exist but none has a usable CPU figure and a nonzero allowance.
    if points.is_empty() {
        return Err(ChartError::Empty(ATOMIC.path(dir)));
    }
    write_spec(dir, "atomic", &chart(&points))
}

/// The chart spec; `points` is not empty.
fn chart(points: &[(&str, Summary)]) -> Chart {
    let x_hi = (points.iter().map(|(_, p)| p.x.2).fold(0.0, f64::max) * 1.12).max(1.0);
    let y_lo = points
        .iter()
        .map(|(_, p)| p.y.0)
        .fold(symlog(-10.0), f64::min)
        - 0.2;
    let y_hi = points
        .iter()
        .map(|(_, p)| p.y.2)
        .fold(symlog(10.0), f64::max)
        + 0.2;
    let ticks: Vec<(f64, String)> = (TICKS.iter())
        .filter(|&&v| (y_lo..y_hi).contains(&symlog(v)))
        .map(|&v| (symlog(v), format!("{v:+}%").replace("+0%", "0%")))
        .collect();

    let mut layers = vec![
        limit_line((0.0, 0.0), (x_hi, 0.0)),
        tag((x_hi, 0.0), "exact"),
    ];
    for (i, (_, p)) in points.iter().enumerate() {
        let (c, (xs, ys)) = (color(i), (p.x, p.y));
        layers.push(path(vec![(xs.0, ys.1), (xs.2, ys.1)], c, 2, None).faded(0.7));
        layers.push(path(vec![(xs.1, ys.0), (xs.1, ys.2)], c, 2, None).faded(0.7));
        layers.push(dots(vec![(xs.1, ys.1)], c, POINT_PX as u32));
    }
    let labels = points
        .iter()
        .map(|(name, p)| ((p.x.1, p.y.1), name.to_string()));
    layers.push(Layer::new(
        Shape::PointLabels(labels.collect(), POINT_PX),
        BLACK,
    ));
    let x_desc = "Redis CPU µs per decision (mean of cpu_us_per_decision)";
    let x = Axis::new(
        x_desc,
        Range::Linear(0.0, x_hi),
        Ticks::Auto(11, |v| format!("{v:.0}")),
        60,
    );
    let y_desc = "admission error, % of min(capacity, checks) (symlog)";
    let y = Axis::new(y_desc, Range::Linear(y_lo, y_hi), Ticks::Hand(ticks), 80);
    let note = "one point per strategy = mean over its rows; whiskers = min-max; above 0 admits too many, \
below 0 refuses requests it should admit";
    let title = "atomic: admission error vs Redis CPU per decision";
    Chart::new(
        SIZE,
        title,
        note,
        vec![Plot::new([0, 60, 10, 10], x, y, layers)],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::csv_dir;
    use std::fs;

    const HEADER: &str =
        "strategy,processes,in_flight,trial,capacity,checks,admitted,refused,errors,\
watch_retries,watch_aborts,redis_calls,server_commands,redis_cpu_us,cpu_us_per_decision,elapsed_ms,extra";
    const ROWS: &str = "\
naive-bucket,4,8,0,100,1000,1000,0,0,0,0,2000,2000,16000,16.0,10,x
naive-bucket,4,8,1,100,1000,900,100,0,0,0,2000,2000,16500,16.5,10,x
lua-bucket,4,8,0,100,1000,100,900,0,0,0,1000,,24000,24.0,10,x
watch-bucket,4,8,0,100,1000,58,942,0,310,40,3000,6000,45000,45.0,10,x
";

    #[test]
    fn renders_svg_and_png_with_strategy_labels() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = csv_dir(
            tmp.path(),
            "atomic",
            ATOMIC.name(),
            &format!("{HEADER}\n{ROWS}"),
        );
        let paths = render(&dir).unwrap();
        assert_eq!(paths, ["atomic.svg", "atomic.png"].map(|n| dir.join(n)));
        assert!(paths.iter().all(|p| p.is_file()));
        let svg = fs::read_to_string(&paths[0]).unwrap();
        for s in [
            "naive-bucket",
            "lua-bucket",
            "watch-bucket",
            "exact",
            "+500%",
        ] {
            assert!(svg.contains(s), "svg lacks {s}");
        }
    }

    #[test]
    fn header_only_is_empty() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = csv_dir(tmp.path(), "atomic", ATOMIC.name(), &format!("{HEADER}\n"));
        let err = render(&dir).unwrap_err();
        assert!(matches!(err, ChartError::Empty(_)), "{err}");
    }

    #[test]
    fn error_is_relative_to_min_of_capacity_and_checks() {
        let csv = format!("{HEADER}\n{ROWS}");
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        let rows: Vec<AtomicRow> = reader.deserialize().collect::<Result<_, _>>().unwrap();
        let g = group(&rows);
        assert_eq!(g[0].error_pct, [900.0, 800.0]);
        assert_eq!(g[2].error_pct, [-42.0]);
        let few_checks = AtomicRow {
            checks: 50,
            admitted: 50,
            ..rows[0].clone()
        };
        assert_eq!(error_pct(&few_checks), Some(0.0));
        for (pct, t) in [(-99.0, -2.0), (0.0, 0.0), (9.0, 1.0), (999.0, 3.0)] {
            assert!((symlog(pct) - t).abs() < 1e-9, "symlog({pct})");
        }
    }
}
