//! Dots and lines on log or linear axes, for charts of a measure against a size (bytes per client
//! against the limit, stall against entries): every measured row is a dot, a line joins the
//! means, and marked x positions (a threshold) get a dashed red line with a label. Log axes are
//! plotted as log10 of the data with hand-drawn 1-2-5 ticks, like the latency chart.

use super::axes::log_points;
use super::draw::text_width;
use super::spec::{
    dots, limit_line, path, text, Anchor, Axis, Chart, Layer, Marker, Plot, Range, Rgb, Shape,
    Ticks, BLACK, RED,
};
use super::{mean, ChartError};

/// Size of a mark's label (`spec::text`'s).
const MARK_FONT: f64 = 14.0;

const Y_LABEL_PX: u32 = 90;

/// Width of the plot area in px (the chart's 1200 less margins and the y labels), and the step
/// down between rows of mark labels.
const PLOT_PX: f64 = (1200 - 40 - 10 - Y_LABEL_PX) as f64;
const MARK_ROW_PX: i32 = 18;

/// The row each mark's label goes in: the first row where it clears the labels already there by
/// their measured widths, so marks close together (the listpack thresholds) do not overprint.
/// `share` places an x between the plot's left (0) and right (1) edge.
fn mark_rows(marks: &[(f64, String)], share: impl Fn(f64) -> f64) -> Vec<i32> {
    let mut ends: Vec<f64> = Vec::new();
    let mut rows = Vec::with_capacity(marks.len());
    for (x, label) in marks {
        let left = share(*x) * PLOT_PX + 4.0;
        let row = ends
            .iter()
            .position(|end| *end + 6.0 < left)
            .unwrap_or(ends.len());
        let right = left + f64::from(text_width(label, MARK_FONT));
        match ends.get_mut(row) {
            Some(end) => *end = right,
            None => ends.push(right),
        }
        rows.push(row as i32);
    }
    rows
}

/// (dash, gap) px of a dashed series, its line and its legend swatch alike.
const DASH: (u32, u32) = (6, 4);

/// How an axis maps data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Scale {
    /// Data as is.
    Linear,
    /// log10 of the data, ticked 1-2-5.
    Log,
}

impl Scale {
    fn to_plot(self, v: f64) -> f64 {
        match self {
            Scale::Linear => v,
            Scale::Log => v.log10(),
        }
    }

    /// Whether a value can be drawn (log axes cannot show 0 or less).
    fn drawable(self, v: f64) -> bool {
        v.is_finite() && (self == Scale::Linear || v > 0.0)
    }

    /// Tick positions (plot coordinates) and labels over the data range `lo..hi`.
    fn ticks(self, lo: f64, hi: f64, label: &dyn Fn(f64) -> String) -> Vec<(f64, String)> {
        match self {
            Scale::Log => {
                let (mut values, light) = log_points(lo, hi);
                // Less than a decade shows too few 1-2-5 ticks to read values off.
                if values.len() < 3 {
                    values.extend(light);
                }
                values.iter().map(|&v| (v.log10(), label(v))).collect()
            }
            Scale::Linear => {
                let raw = (hi - lo).max(1e-9) / 8.0;
                let mag = 10f64.powf(raw.log10().floor());
                let step = [1.0, 2.0, 5.0, 10.0].map(|m| m * mag);
                let step = step.into_iter().find(|s| *s >= raw).unwrap_or(10.0 * mag);
                let first = (lo / step).ceil() as i64;
                let last = (hi / step).floor() as i64;
                (first..=last)
                    .map(|i| i as f64 * step)
                    .map(|v| (v, label(v)))
                    .collect()
            }
        }
    }
}

/// One named series: a dot per measured (x, y), a line through the mean y of each x.
pub(crate) struct Series {
    /// Legend text.
    pub name: String,
    /// Line and dot colour.
    pub color: Rgb,
    /// Dashed line (and legend swatch) instead of solid.
    pub dashed: bool,
    /// Every measured (x, y), in data units.
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// (x, mean y) per distinct x, ascending.
    fn means(&self) -> Vec<(f64, f64)> {
        let mut xs: Vec<f64> = self.points.iter().map(|p| p.0).collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        xs.into_iter()
            .filter_map(|x| {
                let ys: Vec<f64> = (self.points.iter())
                    .filter(|p| p.0 == x)
                    .map(|p| p.1)
                    .collect();
                Some((x, mean(&ys)?))
            })
            .collect()
    }
}

/// A chart of series against one x, with marked x positions.
pub(crate) struct LineChart<'a> {
    /// Headline at the top.
    pub title: &'a str,
    /// Grey line under the title saying how to read the chart.
    pub note: &'a str,
    /// x axis description.
    pub x_desc: &'a str,
    /// y axis description.
    pub y_desc: &'a str,
    /// How x maps data.
    pub x_scale: Scale,
    /// How y maps data.
    pub y_scale: Scale,
    /// Linear y axes start at 0 when true (sizes), else at the data.
    pub y_from_zero: bool,
    /// The series, drawn in order.
    pub series: Vec<Series>,
    /// (x, label): a dashed red vertical line at x with the label at its top.
    pub marks: Vec<(f64, String)>,
    /// (from x, to x, label): a span shaded grey under the data, its label centred at its foot.
    pub shaded: Vec<(f64, f64, String)>,
    /// Formats tick labels of both axes (data units).
    pub label: &'a dyn Fn(f64) -> String,
}

/// Data bounds of every drawable point, or None when nothing can be drawn.
fn bounds(c: &LineChart) -> Option<((f64, f64), (f64, f64))> {
    let pts: Vec<(f64, f64)> = (c.series.iter().flat_map(|s| s.points.iter().copied()))
        .filter(|p| c.x_scale.drawable(p.0) && c.y_scale.drawable(p.1))
        .collect();
    let fold = |f: fn(&(f64, f64)) -> f64| {
        (pts.iter().map(f)).fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        })
    };
    (!pts.is_empty()).then(|| (fold(|p| p.0), fold(|p| p.1)))
}

/// Plot-coordinate range with room around the data (a factor on log axes, a share on linear).
fn padded(scale: Scale, (lo, hi): (f64, f64), from_zero: bool) -> (f64, f64) {
    match scale {
        Scale::Log => ((lo / 1.5).log10(), (hi * 1.5).log10()),
        Scale::Linear => {
            let lo = if from_zero { lo.min(0.0) } else { lo };
            let pad = ((hi - lo) * 0.06).max(0.5);
            (if from_zero { lo } else { lo - pad }, hi + pad)
        }
    }
}

/// The chart spec; `ChartError::Plot` when no point is drawable.
pub(crate) fn spec(c: LineChart) -> Result<Chart, ChartError> {
    let ((x_lo, x_hi), (y_lo, y_hi)) =
        bounds(&c).ok_or_else(|| ChartError::Plot("no drawable point".into()))?;
    let (px0, px1) = padded(c.x_scale, (x_lo, x_hi), false);
    let (py0, py1) = padded(c.y_scale, (y_lo, y_hi), c.y_from_zero);
    let unplot = |s: Scale, v: f64| if s == Scale::Log { 10f64.powf(v) } else { v };
    let ticks =
        |s: Scale, lo: f64, hi: f64| Ticks::Hand(s.ticks(unplot(s, lo), unplot(s, hi), c.label));
    let mut layers = Vec::new();
    let rows = mark_rows(&c.marks, |x| (c.x_scale.to_plot(x) - px0) / (px1 - px0));
    for ((x, label), row) in c.marks.iter().zip(rows) {
        let x = c.x_scale.to_plot(*x);
        layers.push(limit_line((x, py0), (x, py1)));
        layers.push(text(
            (x, py1),
            (4, 4 + MARK_ROW_PX * row),
            label,
            RED,
            Anchor::LeftTop,
        ));
    }
    let to_plot = |&(x, y): &(f64, f64)| (c.x_scale.to_plot(x), c.y_scale.to_plot(y));
    let ok = |p: &&(f64, f64)| c.x_scale.drawable(p.0) && c.y_scale.drawable(p.1);
    for s in &c.series {
        let line: Vec<(f64, f64)> = s.means().iter().filter(ok).map(to_plot).collect();
        layers.push(path(line, s.color, 2, s.dashed.then_some(DASH)));
        layers.push(
            dots(
                s.points.iter().filter(ok).map(to_plot).collect(),
                s.color,
                3,
            )
            .faded(0.7),
        );
    }
    let legend = (c.series.iter())
        .map(|s| match s.dashed {
            true => (Marker::Pattern(s.color, DASH.0, DASH.1), s.name.clone()),
            false => (Marker::Line(s.color), s.name.clone()),
        })
        .collect();
    let x = Axis::new(
        c.x_desc,
        Range::Linear(px0, px1),
        ticks(c.x_scale, px0, px1),
        60,
    );
    let y = Axis::new(
        c.y_desc,
        Range::Linear(py0, py1),
        ticks(c.y_scale, py0, py1),
        Y_LABEL_PX,
    );
    let mut plot = Plot::new([10, 40, 10, 10], x, y, layers);
    for (from, to, label) in &c.shaded {
        let (from, to) = (c.x_scale.to_plot(*from), c.x_scale.to_plot(*to));
        let area = Layer::new(Shape::Rect([(from, py0), (to, py1)], 0), BLACK).faded(0.08);
        plot.under.push(area);
        // A label wider than a narrow span would sit on the data beside it: the shade says enough.
        if (to - from) / (px1 - px0) >= 0.15 {
            let at = ((from + to) / 2.0, py0);
            plot.under
                .push(text(at, (0, -22), label, BLACK, Anchor::CenterTop));
        }
    }
    Ok(Chart::new((1200, 700), c.title, c.note, vec![plot]).legend(10 + Y_LABEL_PX as i32, legend))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_ticks_are_round_and_log_ticks_fill_short_ranges() {
        let label = |v: f64| format!("{v}");
        let lin = Scale::Linear.ticks(118.0, 142.0, &label);
        let at: Vec<f64> = lin.iter().map(|t| t.0).collect();
        assert_eq!(at, [120.0, 125.0, 130.0, 135.0, 140.0]);
        let log = Scale::Log.ticks(150.0, 450.0, &label);
        assert!(log.len() >= 3, "{log:?}");
        assert!(!Scale::Log.drawable(0.0) && Scale::Linear.drawable(0.0));
    }

    #[test]
    fn means_join_repeats_per_x() {
        let s = Series {
            name: "s".into(),
            color: Rgb(0, 0, 0),
            dashed: false,
            points: vec![(10.0, 1.0), (1.0, 5.0), (10.0, 3.0)],
        };
        assert_eq!(s.means(), [(1.0, 5.0), (10.0, 2.0)]);
    }

    #[test]
    fn mark_labels_close_together_go_down_a_row() {
        let marks: Vec<(f64, String)> = [0.1, 0.12, 0.14, 0.6]
            .iter()
            .map(|x| (*x, "129th entry".to_string()))
            .collect();
        assert_eq!(mark_rows(&marks, |x| x), [0, 1, 2, 0]);
    }
}
