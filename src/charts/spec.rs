//! The chart specification every chart is built as: a frame (title, note, legend) around one or
//! more plots, each with two axes and ordered layers. Chart modules only fill these in; `render`
//! turns them into SVG, so no chart module needs plotters.

pub(crate) use super::draw::{color, Marker};
pub(crate) use plotters::style::RGBColor as Rgb;

/// Black, for means, one-run dots and text.
pub(crate) const BLACK: Rgb = Rgb(0, 0, 0);
/// Red is reserved for limits and thresholds.
pub(crate) const RED: Rgb = Rgb(255, 0, 0);

/// A whole SVG: header band (title, note, legend) above its plots, stacked evenly.
pub(crate) struct Chart {
    /// Width, height in pixels.
    pub size: (u32, u32),
    /// Headline at the top.
    pub title: String,
    /// Grey line under the title saying how to read the chart; empty for none.
    pub note: String,
    /// Legend entries, wrapped within the header from `legend_left`.
    pub legend: Vec<(Marker, String)>,
    /// Left edge of the legend (normally where the plot starts).
    pub legend_left: i32,
    /// Extra pixels between the header band and the plots.
    pub header_pad: i32,
    /// Draw the legend after the plots (the race chart always has).
    pub legend_last: bool,
    /// The plots, top to bottom.
    pub plots: Vec<Plot>,
}

/// One plot: its margins, axes and layers.
pub(crate) struct Plot {
    /// Margins around the plot: top, right, bottom, left.
    pub margin: [u32; 4],
    /// Horizontal axis.
    pub x: Axis,
    /// Vertical axis.
    pub y: Axis,
    /// Font px of tick labels and of the axis descriptions.
    pub font_px: (u32, u32),
    /// Drawn before the hand-drawn ticks, e.g. shaded phases.
    pub under: Vec<Layer>,
    /// The data, in drawing order.
    pub layers: Vec<Layer>,
    /// Drawn last, after category labels: tags right of the plot.
    pub over: Vec<Layer>,
}

/// How an axis maps data: its range in plot coordinates.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Range {
    /// Linear from lo to hi.
    Linear(f64, f64),
    /// plotters' log scale from lo to hi, ticked 1-2-5 (`axes::log_axis`).
    Log(f64, f64),
    /// One slot per label at 0, 1, ..; labels drawn under the slots (x only).
    Category(Vec<String>),
}

impl Range {
    /// Lowest value on the axis.
    pub(crate) fn lo(&self) -> f64 {
        match self {
            Range::Linear(lo, _) | Range::Log(lo, _) => *lo,
            Range::Category(_) => -0.5,
        }
    }

    /// Highest value on the axis.
    pub(crate) fn hi(&self) -> f64 {
        match self {
            Range::Linear(_, hi) | Range::Log(_, hi) => *hi,
            Range::Category(l) => l.len() as f64 - 0.5,
        }
    }
}

/// Tick labels of an axis.
pub(crate) enum Ticks {
    /// plotters picks about `n` ticks, labelled by the function.
    Auto(usize, fn(f64) -> String),
    /// Ticks at these plot coordinates with these labels, drawn by hand.
    Hand(Vec<(f64, String)>),
}

/// One axis.
pub(crate) struct Axis {
    /// Description under / beside the axis.
    pub desc: String,
    /// Data range.
    pub range: Range,
    /// Tick labels.
    pub ticks: Ticks,
    /// Grid lines at the automatic ticks.
    pub grid: bool,
    /// Pixels reserved for labels (a category x axis sizes its own).
    pub area_px: u32,
}

/// Where a text sits relative to its anchor point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Anchor {
    /// Left edge, vertically centred: tags right of a line.
    LeftMid,
    /// Left edge, top: labels hanging from a mark.
    LeftTop,
    /// Centred, top: names at the top of a band.
    CenterTop,
}

/// One bar of a bar slot: colour, height (the mean), one dot per run, and text above it.
pub(crate) struct Bar {
    /// Fill (lightened) and outline colour.
    pub color: Rgb,
    /// Bar height, normally the mean of `dots`.
    pub height: f64,
    /// One value per run, drawn as a dot on the bar.
    pub dots: Vec<f64>,
    /// Printed just above the bar (and its dots); empty for none.
    pub note: String,
}

/// One category slot of bars side by side, with text on a bracket over all of them.
pub(crate) struct Slot {
    /// The slot's bars, left to right.
    pub bars: Vec<Bar>,
    /// Printed over the slot; empty for none.
    pub note: String,
}

/// Something drawn in a plot, in data coordinates.
pub(crate) enum Layer {
    /// A polyline; dashed as (dash, gap) px when given.
    Path {
        points: Vec<(f64, f64)>,
        color: Rgb,
        alpha: f64,
        width: u32,
        dash: Option<(u32, u32)>,
    },
    /// Filled circles.
    Dots {
        points: Vec<(f64, f64)>,
        color: Rgb,
        alpha: f64,
        radius: u32,
    },
    /// A rectangle between two corners: filled, or outlined `width` px when width > 0.
    Rect {
        corners: [(f64, f64); 2],
        color: Rgb,
        alpha: f64,
        width: u32,
    },
    /// Text at a data point, shifted by pixels.
    Text {
        at: (f64, f64),
        shift: (i32, i32),
        text: String,
        size: f64,
        color: Rgb,
        anchor: Anchor,
    },
    /// Names next to points, placed clear of each other (`place`).
    PointLabels {
        points: Vec<((f64, f64), String)>,
        radius: i32,
    },
    /// Bar slots, one per category of the x axis.
    Bars(Vec<Slot>),
}

/// A solid or dashed polyline.
pub(crate) fn path(
    points: Vec<(f64, f64)>,
    color: Rgb,
    width: u32,
    dash: Option<(u32, u32)>,
) -> Layer {
    let alpha = 1.0;
    Layer::Path {
        points,
        color,
        alpha,
        width,
        dash,
    }
}

/// The red dashed line of a limit or threshold.
pub(crate) fn limit_line(from: (f64, f64), to: (f64, f64)) -> Layer {
    path(vec![from, to], RED, 2, Some((8, 4)))
}

/// A red tag just right of `at` (the end of a limit line).
pub(crate) fn tag(at: (f64, f64), text: &str) -> Layer {
    Layer::Text {
        at,
        shift: (6, 0),
        text: text.to_string(),
        size: 14.0,
        color: RED,
        anchor: Anchor::LeftMid,
    }
}

/// Dots coloured per point, as few layers as keep the drawing order.
pub(crate) fn dots_by_color(
    points: impl IntoIterator<Item = ((f64, f64), Rgb)>,
    alpha: f64,
    radius: u32,
) -> Vec<Layer> {
    let mut out: Vec<Layer> = Vec::new();
    for (p, c) in points {
        match out.last_mut() {
            Some(Layer::Dots { points, color, .. }) if *color == c => points.push(p),
            _ => out.push(Layer::Dots {
                points: vec![p],
                color: c,
                alpha,
                radius,
            }),
        }
    }
    out
}

/// The name a CSV gives an enum value (its serde name), for labels of types without Display.
pub(crate) fn csv_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::from("?"),
    }
}
