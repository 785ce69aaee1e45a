//! The most common picture here: dots per trial over categories. Each category on the x axis
//! holds one column per series; a column shows every trial as a dot and the trials' mean, as a
//! bar from zero with a number above it ([`spec`], drawn by the bar renderer) or, on a log axis
//! where no bar can stand on zero, as a short black dash ([`dash_spec`]). An experiment hands
//! over its trials per category and series; the mean, the dots and where they go are this file's.

use super::bars::{self, BarChart};
use super::spec::BLACK;
use super::spec::{dots, path, Axis, Bar, Chart, Layer, Marker, Plot, Range, Rgb, Slot, Ticks};

/// One series' trials in one category.
pub(crate) struct Column {
    /// Its series' colour (the bar's; a dash chart's dots).
    pub color: Rgb,
    /// One value per trial, one dot each.
    pub trials: Vec<f64>,
    /// The bar's height: the trials' mean, or what a column without trials stands for.
    pub mean: f64,
    /// Text above the bar (bar charts only); empty for none.
    pub note: String,
}

impl Column {
    /// `trials` in `color`, with `note` (given their mean) above the bar; the mean of no trials
    /// is 0.
    pub(crate) fn new(color: Rgb, trials: Vec<f64>, note: impl FnOnce(f64) -> String) -> Self {
        let mean = super::mean(&trials).unwrap_or(0.0);
        let note = note(mean);
        Column {
            color,
            trials,
            mean,
            note,
        }
    }

    /// A bar of `height` without trial dots: a bound or reference the trials stand beside.
    pub(crate) fn bare(color: Rgb, height: f64) -> Self {
        let (trials, note) = (Vec::new(), String::new());
        Column {
            color,
            trials,
            mean: height,
            note,
        }
    }

    fn bar(self) -> Bar {
        Bar::new(self.color, self.mean, self.trials, self.note)
    }
}

/// One category: its label under the axis, its columns left to right, and the text on a bracket
/// over them (empty for none).
pub(crate) struct Category {
    pub label: String,
    pub columns: Vec<Column>,
    pub note: String,
}

impl Category {
    /// A category of `columns` without a bracket note.
    pub(crate) fn new(label: impl Into<String>, columns: Vec<Column>) -> Self {
        let (label, note) = (label.into(), String::new());
        Category {
            label,
            columns,
            note,
        }
    }
}

/// A dots-per-trial chart with the mean as a bar: the frame of a [`BarChart`] (titles, axes,
/// legend, a dashed reference line) around categories of columns.
pub(crate) struct TrialChart<'a> {
    pub title: &'a str,
    pub subtitle: String,
    pub x_desc: &'a str,
    pub y_desc: &'a str,
    pub y_format: fn(f64) -> String,
    pub legend: Vec<(Marker, &'a str)>,
    pub reference: Option<(f64, &'a str)>,
    pub categories: Vec<Category>,
}

/// The chart spec: one bar per column at its mean, one dot per trial on it.
pub(crate) fn spec(c: TrialChart) -> Chart {
    let slots = (c.categories.into_iter())
        .map(|k| {
            let bars = k.columns.into_iter().map(Column::bar).collect();
            (k.label, Slot(bars, k.note))
        })
        .collect();
    bars::spec(BarChart {
        title: c.title,
        subtitle: c.subtitle,
        x_desc: c.x_desc,
        y_desc: c.y_desc,
        y_format: c.y_format,
        legend: c.legend,
        reference: c.reference,
        slots,
    })
}

/// Share of a category's width the columns use.
const CATEGORY_FILL: f64 = 0.8;
/// Plot margins: top, right (room for tags), bottom, left.
const DASH_MARGIN: [u32; 4] = [0, 60, 10, 10];

/// A dots-per-trial chart with the mean as a dash, for a y axis a bar cannot stand on (a log
/// axis): series `s` takes the `s`-th column of every category.
pub(crate) struct DashChart {
    pub size: (u32, u32),
    pub title: String,
    pub x_desc: String,
    pub y_desc: String,
    /// The y range (trials below its low end sit on the bottom edge) and its ticks.
    pub y: Range,
    pub y_ticks: Ticks,
    /// Pixels for the y tick labels.
    pub y_label_px: u32,
    /// The series' names and colours, in column order.
    pub series: Vec<(String, Rgb)>,
    /// Legend entries after the series' and the mean's.
    pub legend_extra: Vec<(Marker, String)>,
    /// Each category with the group it belongs to: a darker separator where the group changes.
    pub categories: Vec<(Category, String)>,
    /// Drawn after the separators and before the trials (limits, thresholds).
    pub marks: Vec<Layer>,
    /// Drawn last, right of the plot (tags).
    pub over: Vec<Layer>,
}

/// The chart spec: per category and series a black dash at the mean and the trials as dots,
/// spread sideways by a deterministic golden-ratio jitter so identical trials form a cluster.
pub(crate) fn dash_spec(c: DashChart) -> Chart {
    let (lo, hi) = (c.y.lo(), c.y.hi());
    let (n, ns) = (c.categories.len(), c.series.len().max(1));
    let inset = DASH_MARGIN[1] + DASH_MARGIN[3] + c.y_label_px;
    let slot_px = f64::from(c.size.0 - inset) / n.max(1) as f64;
    let mut legend: Vec<(Marker, String)> = (c.series.iter())
        .map(|(name, color)| (Marker::Dot(*color), name.clone()))
        .collect();
    legend.push((Marker::Line(BLACK), "mean of trials".into()));
    legend.extend(c.legend_extra);
    let mut layers: Vec<Layer> = (1..n)
        .map(|i| {
            let strong = c.categories[i].1 != c.categories[i - 1].1;
            let (alpha, width) = if strong { (0.45, 2) } else { (0.12, 1) };
            let x = i as f64 - 0.5;
            path(vec![(x, lo), (x, hi)], BLACK, width, None).faded(alpha)
        })
        .collect();
    layers.extend(c.marks);
    let band = CATEGORY_FILL / ns as f64;
    // Jitter and dash scale with the column but stay compact when categories are wide.
    let spread = (band * 0.5).min(20.0 / slot_px);
    let half_dash = (band * 0.4).min(12.0 / slot_px);
    for (i, (category, _)) in c.categories.iter().enumerate() {
        for (s, column) in category.columns.iter().enumerate() {
            if column.trials.is_empty() {
                continue;
            }
            let cx = i as f64 - CATEGORY_FILL / 2.0 + (s as f64 + 0.5) * band;
            // The mean first so the trial dots stay visible on top of it.
            let mean = column.mean.max(lo);
            layers.push(path(
                vec![(cx - half_dash, mean), (cx + half_dash, mean)],
                BLACK,
                2,
                None,
            ));
            let at = column.trials.iter().enumerate().map(|(k, &v)| {
                let j = ((k as f64 * 0.618_034) % 1.0 - 0.5) * spread;
                (cx + j, v.max(lo))
            });
            layers.push(dots(at.collect(), column.color, 4).faded(0.6));
        }
    }
    let labels = c.categories.into_iter().map(|(k, _)| k.label).collect();
    let x = Axis::category(c.x_desc, labels);
    let y = Axis::new(c.y_desc, c.y, c.y_ticks, c.y_label_px);
    let mut plot = Plot::new(DASH_MARGIN, x, y, layers);
    plot.over = c.over;
    let legend_left = (DASH_MARGIN[3] + c.y_label_px) as i32;
    let mut chart = Chart::new(c.size, c.title, "", vec![plot]).legend(legend_left, legend);
    chart.legend_last = true;
    chart
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::spec::{color, Shape};

    #[test]
    fn a_column_is_its_trials_mean_and_a_bare_one_its_height() {
        let c = Column::new(BLACK, vec![1.0, 2.0, f64::NAN, 6.0], |m| format!("{m}"));
        assert_eq!((c.mean, c.note.as_str()), (3.0, "3"));
        let none = Column::new(BLACK, Vec::new(), |m| format!("{m}"));
        assert_eq!(none.mean, 0.0);
        let bare = Column::bare(BLACK, 7.5).bar();
        assert_eq!((bare.height, bare.dots.len()), (7.5, 0));
    }

    /// Two categories in two groups, two series: one strong separator, a dash and the dots of
    /// every non-empty column, trials below the axis on its bottom edge.
    #[test]
    fn dash_columns_put_every_trial_in_its_slot() {
        let category = |label: &str, a: Vec<f64>, b: Vec<f64>| {
            let columns = vec![Column::new(color(0), a, |_| String::new()), {
                Column::new(color(1), b, |_| String::new())
            }];
            Category::new(label, columns)
        };
        let chart = dash_spec(DashChart {
            size: (800, 400),
            title: "t".into(),
            x_desc: "x".into(),
            y_desc: "y".into(),
            y: Range::Log(1.0, 100.0),
            y_ticks: Ticks::Auto(5, |v| format!("{v}")),
            y_label_px: 70,
            series: vec![("a".into(), color(0)), ("b".into(), color(1))],
            legend_extra: Vec::new(),
            categories: vec![
                (category("one", vec![10.0, 10.0, 0.0], vec![]), "g".into()),
                (category("two", vec![50.0], vec![20.0, 30.0]), "h".into()),
            ],
            marks: Vec::new(),
            over: Vec::new(),
        });
        let layers = &chart.plots[0].layers;
        // A separator, then (dash, dots) for three columns: the empty one draws nothing.
        assert_eq!(layers.len(), 1 + 3 * 2);
        assert!(matches!(layers[0].shape, Shape::Path(_, 2, None)));
        let Shape::Dots(first, _) = &layers[2].shape else {
            panic!("dots expected");
        };
        // Category 0, series 0: x within its column (0 - 0.4 .. 0), the 0 trial on the edge.
        assert!(first.iter().all(|p| (-0.4..0.0).contains(&p.0)));
        assert_eq!(
            first.iter().map(|p| p.1).collect::<Vec<_>>(),
            [10.0, 10.0, 1.0]
        );
        let Shape::Dots(last, _) = &layers[6].shape else {
            panic!("dots expected");
        };
        assert!(last.iter().all(|p| (1.0..1.4).contains(&p.0)));
        assert_eq!(chart.legend.len(), 3);
    }
}
