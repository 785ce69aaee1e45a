//! A shared bar chart: slots of side-by-side bars (the mean) with one dot per run on each bar,
//! optional numbers above bars and slots, and an optional dashed reference line. Charts of trials
//! build it through [`super::trials`] (the mean of each column's trials is its bar); charts of
//! totals (chaos, replication) use it directly. The plot keeps 60 px right of it for the tag.

use super::spec::{
    limit_line, tag, Axis, Chart, Layer, Marker, Plot, Range, Shape, Slot, Ticks, BLACK,
};

const Y_LABEL_PX: u32 = 80;

/// Everything a bar chart shows; empty strings mean "no such text".
pub(crate) struct BarChart<'a> {
    /// Headline at the top.
    pub title: &'a str,
    /// Grey line under the title saying how to read the chart.
    pub subtitle: String,
    /// x axis description.
    pub x_desc: &'a str,
    /// y axis description.
    pub y_desc: &'a str,
    /// Formats y tick labels.
    pub y_format: fn(f64) -> String,
    /// Legend entries in the header band.
    pub legend: Vec<(Marker, &'a str)>,
    /// A dashed red line at this height, tagged with the text right of the plot.
    pub reference: Option<(f64, &'a str)>,
    /// The slots left to right, each under its category label (" (" starts a second line).
    pub slots: Vec<(String, Slot)>,
}

/// 1234567 -> "1.23M", 150000 -> "150k", 950 -> "950": compact axis and note numbers.
pub(crate) fn si(v: f64) -> String {
    let (scaled, unit) = match v.abs() {
        a if a >= 1e6 => (v / 1e6, "M"),
        a if a >= 1e3 => (v / 1e3, "k"),
        _ => (v, ""),
    };
    let digits = match scaled.abs() {
        a if a >= 100.0 || a == 0.0 => 0,
        a if a >= 10.0 => 1,
        _ => 2,
    };
    let text = format!("{scaled:.digits$}");
    let text = match text.contains('.') {
        true => text.trim_end_matches('0').trim_end_matches('.').to_string(),
        false => text,
    };
    format!("{text}{unit}")
}

/// Top of the y axis: the highest bar, dot or reference line, plus headroom for the notes.
fn y_top(c: &BarChart) -> f64 {
    let bars = || c.slots.iter().flat_map(|s| &s.1 .0);
    let tallest = bars()
        .flat_map(|b| b.dots.iter().chain([&b.height]))
        .copied();
    let top = tallest
        .chain(c.reference.map(|(r, _)| r))
        .fold(0.0, f64::max);
    let bar_notes = bars().any(|b| !b.note.is_empty());
    let slot_notes = c.slots.iter().any(|s| !s.1 .1.is_empty());
    let headroom = 0.06 + 0.07 * (f64::from(u8::from(bar_notes)) + f64::from(u8::from(slot_notes)));
    if top > 0.0 {
        top * (1.0 + headroom)
    } else {
        1.0
    }
}

/// The chart spec: one category slot per `slots` entry, a dashed reference line under the bars
/// and its tag right of the plot.
pub(crate) fn spec(c: BarChart) -> Chart {
    let top = y_top(&c);
    let n = c.slots.len().max(1) as f64;
    let (labels, slots): (Vec<String>, Vec<Slot>) = c.slots.into_iter().unzip();
    let (mut layers, mut over) = (Vec::new(), Vec::new());
    if let Some((r, text)) = c.reference {
        layers.push(limit_line((-0.5, r), (n - 0.5, r)));
        over.push(tag((n - 0.5, r), text));
    }
    layers.push(Layer::new(Shape::Bars(slots), BLACK));
    let y = Axis::new(
        c.y_desc,
        Range::Linear(0.0, top),
        Ticks::Auto(8, c.y_format),
        Y_LABEL_PX,
    );
    let mut plot = Plot::new([0, 60, 10, 10], Axis::category(c.x_desc, labels), y, layers);
    plot.over = over;
    let legend = c
        .legend
        .into_iter()
        .map(|(m, s)| (m, s.to_string()))
        .collect();
    Chart::new((1200, 700), c.title, c.subtitle, vec![plot]).legend(10 + Y_LABEL_PX as i32, legend)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn si_is_compact() {
        assert_eq!(si(0.0), "0");
        assert_eq!(si(950.0), "950");
        assert_eq!(si(2.5), "2.5");
        assert_eq!(si(150_000.0), "150k");
        assert_eq!(si(12_345.0), "12.3k");
        assert_eq!(si(1_234_567.0), "1.23M");
    }
}
