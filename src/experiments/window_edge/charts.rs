//! The window-edge chart: per strategy, the most requests admitted in any 1-second span (one dot
//! per trial) beside what a continuous refill of L/s could admit over the same span, against the
//! limit: the fixed window's edge burst stands at 2x, the smoothing strategies near 1x.

use super::WINDOW_EDGE;
use crate::charts::read_file;
use std::path::{Path, PathBuf};

use super::WindowEdgeRow;
use crate::charts::bars::si;
use crate::charts::spec::{color, Marker, Rgb, BLACK, RED};
use crate::charts::trials::{self, Category, Column, TrialChart};
use crate::charts::{index_of, mean, write_spec, ChartError};

const GREY: Rgb = Rgb(150, 150, 150);

/// One strategy's trials.
#[derive(Debug, PartialEq)]
pub(crate) struct Strategy {
    name: String,
    limit: f64,
    max: Vec<f64>,
    bound: Vec<f64>,
}

/// Groups rows by strategy in first-appearance order; pure so it is unit-testable.
pub(crate) fn group(rows: &[WindowEdgeRow]) -> Vec<Strategy> {
    let mut names = Vec::new();
    let mut out: Vec<Strategy> = Vec::new();
    for r in rows {
        let i = index_of(&mut names, r.strategy);
        if i == out.len() {
            out.push(Strategy {
                name: r.strategy.to_string(),
                limit: r.limit as f64,
                max: Vec::new(),
                bound: Vec::new(),
            });
        }
        out[i].max.push(r.max_admitted_in_1s as f64);
        out[i].bound.push(r.smooth_bound);
    }
    out
}

/// Renders `dir/window-edge.csv` into `dir/window-edge.svg` and `dir/window-edge.png`.
pub(crate) fn render(dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let strategies = group(&read_file(&WINDOW_EDGE, dir)?);
    write_spec(dir, "window-edge", &trials::spec(chart(&strategies)))
}

fn chart(strategies: &[Strategy]) -> TrialChart<'static> {
    // One limit across the run is the norm; the reference line shows the first.
    let limit = strategies.first().map_or(0.0, |s| s.limit);
    let categories = strategies.iter().enumerate().map(|(i, s)| {
        let most = Column::new(color(i), s.max.clone(), |height| match s.limit > 0.0 {
            true => format!("{:.2}x", height / s.limit),
            false => String::new(),
        });
        let bound = Column::bare(GREY, mean(&s.bound).unwrap_or(0.0));
        Category::new(s.name.clone(), vec![most, bound])
    });
    TrialChart {
        title: "window-edge: most admitted in any 1 s, limit sent at both sides of a window edge",
        subtitle: format!(
            "L = {} sent just before a window boundary and L just after; bar and number = mean of trials, \
dot = one trial",
            si(limit)
        ),
        x_desc: "strategy",
        y_desc: "requests admitted",
        y_format: si,
        legend: vec![
            (Marker::Dot(BLACK), "one trial"),
            (Marker::Dot(GREY), "L + L/s x span of the admitted requests (continuous refill)"),
            (Marker::Dashed(RED), "limit L"),
        ],
        reference: Some((limit, "limit")),
        categories: categories.collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::csv_dir;
    use std::fs;

    const HEADER: &str =
        "strategy,trial,limit,offered,admitted,admitted_before_edge,admitted_after_edge,\
max_admitted_in_1s,max_per_limit,admit_span_ms,smooth_bound,boundary_unix_ms,max_late_us";
    const ROWS: &str = "\
incr-window,0,100,200,200,100,100,200,2.0,99,110,0,250
lua-bucket,0,100,200,109,100,9,109,1.09,94,109.4,0,250
incr-window,1,100,200,194,100,94,194,1.94,90,109,0,250
";

    #[test]
    fn renders_bars_per_strategy() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = csv_dir(
            tmp.path(),
            "window-edge",
            WINDOW_EDGE.name(),
            &format!("{HEADER}\n{ROWS}"),
        );
        let paths = render(&dir).unwrap();
        assert_eq!(
            paths,
            ["window-edge.svg", "window-edge.png"].map(|n| dir.join(n))
        );
        let svg = fs::read_to_string(&paths[0]).unwrap();
        for s in ["incr-window", "lua-bucket", "1.97x", "1.09x", "limit"] {
            assert!(svg.contains(s), "svg lacks {s}");
        }
    }

    #[test]
    fn header_only_is_empty() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = csv_dir(
            tmp.path(),
            "window-edge",
            WINDOW_EDGE.name(),
            &format!("{HEADER}\n"),
        );
        let err = render(&dir).unwrap_err();
        assert!(matches!(err, ChartError::Empty(_)), "{err}");
    }

    #[test]
    fn groups_trials_by_strategy() {
        let csv = format!("{HEADER}\n{ROWS}");
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        let rows: Vec<WindowEdgeRow> = reader.deserialize().collect::<Result<_, _>>().unwrap();
        let g = group(&rows);
        assert_eq!(g[0].max, [200.0, 194.0]);
        assert_eq!(g[1].bound, [109.4]);
        assert_eq!(chart(&g).reference.map(|r| r.0), Some(100.0));
    }
}
