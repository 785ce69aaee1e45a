//! Stacked bars: per category one bar split into segments (counts of outcomes), the total above
//! it, one panel per group (phases), panels stacked top to bottom on a shared scale.

use super::bars::si;
use super::spec::{
    text, Anchor, Axis, Chart, Layer, Marker, Plot, Range, Rgb, Shape, Ticks, BLACK,
};

/// One panel: its name (drawn in its top-left corner) and its bars, left to right.
pub(crate) struct Panel {
    pub name: String,
    /// Per category: its label, one height per segment in legend order, and the text above it.
    pub bars: Vec<(String, Vec<f64>, String)>,
}

/// Everything a stacked bar chart shows.
pub(crate) struct StackedChart<'a> {
    pub title: &'a str,
    /// Grey line under the title saying how to read the chart.
    pub subtitle: String,
    pub x_desc: &'a str,
    pub y_desc: &'a str,
    /// The segments bottom to top: name and colour.
    pub segments: Vec<(&'a str, Rgb)>,
    pub panels: Vec<Panel>,
}

const HALF_WIDTH: f64 = 0.32;
const PANEL_PX: u32 = 250;

/// The chart spec: one plot per panel, every plot on the same y scale.
pub(crate) fn spec(c: StackedChart) -> Chart {
    let tallest = c
        .panels
        .iter()
        .flat_map(|p| &p.bars)
        .map(|(_, hs, _)| hs.iter().sum::<f64>());
    // Headroom for a bar's note and, above it, the panel's name in the top-left corner.
    let top = tallest.fold(0.0, f64::max).max(1.0) * 1.45;
    let plots = c
        .panels
        .iter()
        .map(|panel| plot(&c, panel, top))
        .collect::<Vec<_>>();
    let legend = (c.segments.iter())
        .map(|(name, color)| (Marker::Dot(*color), name.to_string()))
        .collect();
    let height = 130 + PANEL_PX * plots.len().max(1) as u32;
    // As wide as the widest panel's labels need, no wider: the PNG's cost grows with its area.
    let slots = c.panels.iter().map(|p| p.bars.len()).max().unwrap_or(1) as u32;
    let width = (200 + 140 * slots).clamp(900, 1400);
    Chart::new((width, height), c.title, c.subtitle, plots).legend(90, legend)
}

fn plot(c: &StackedChart, panel: &Panel, top: f64) -> Plot {
    let mut layers = Vec::new();
    for (x, (_, heights, note)) in panel.bars.iter().enumerate() {
        let x = x as f64;
        let mut base = 0.0;
        for (h, (_, color)) in heights.iter().zip(&c.segments) {
            if *h > 0.0 {
                let rect = Shape::Rect([(x - HALF_WIDTH, base), (x + HALF_WIDTH, base + h)], 0);
                layers.push(Layer::new(rect, *color).faded(0.75));
            }
            base += h;
        }
        layers.push(text((x, base), (0, -20), note, BLACK, Anchor::CenterTop));
    }
    let labels = panel.bars.iter().map(|(label, ..)| label.clone()).collect();
    layers.push(text(
        (-0.45, top),
        (0, 4),
        &panel.name,
        BLACK,
        Anchor::LeftTop,
    ));
    let y = Axis::new(c.y_desc, Range::Linear(0.0, top), Ticks::Auto(6, si), 80);
    Plot::new(
        [10, 20, 10, 10],
        Axis::category(c.x_desc, labels),
        y,
        layers,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_plot_per_panel_on_a_shared_scale() {
        let chart = spec(StackedChart {
            title: "t",
            subtitle: String::new(),
            x_desc: "x",
            y_desc: "y",
            segments: vec![("ok", Rgb(0, 200, 0)), ("failed", Rgb(200, 0, 0))],
            panels: vec![
                Panel {
                    name: "a".into(),
                    bars: vec![("v".into(), vec![300.0, 700.0], "700 failed".into())],
                },
                Panel {
                    name: "b".into(),
                    bars: vec![
                        ("v".into(), vec![10.0, 0.0], String::new()),
                        ("w".into(), vec![0.0; 2], String::new()),
                    ],
                },
            ],
        });
        assert_eq!(chart.plots.len(), 2);
        assert_eq!(chart.plots[1].y.range.hi(), chart.plots[0].y.range.hi());
        assert!(chart.plots[0].y.range.hi() > 1000.0);
    }
}
