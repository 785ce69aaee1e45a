//! The chart specification every chart is built as: a frame (title, note, legend) around one or
//! more plots, each with two axes and ordered layers. Chart modules only fill these in; `render`
//! turns them into SVG, so no chart module needs plotters.

pub(crate) use super::draw::{color, Marker};
pub(crate) use plotters::style::RGBColor as Rgb;

/// Black, for means, one-run dots and text.
pub(crate) const BLACK: Rgb = Rgb(0, 0, 0);
/// Red is reserved for limits and thresholds.
pub(crate) const RED: Rgb = Rgb(255, 0, 0);

/// A whole SVG: header band (title, note, legend) above its plots, stacked evenly (in a grid of
/// `columns` when there are more than one).
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
    /// The plots, top to bottom (left to right first when `columns` > 1).
    pub plots: Vec<Plot>,
    /// Plots per row: small multiples side by side.
    pub columns: usize,
}

impl Chart {
    /// A chart of `plots` under a header whose legend starts at `legend_left`.
    pub(crate) fn new(
        size: (u32, u32),
        title: impl Into<String>,
        note: impl Into<String>,
        plots: Vec<Plot>,
    ) -> Self {
        let (title, note) = (title.into(), note.into());
        let (legend, legend_left, header_pad, legend_last) = (Vec::new(), 90, 0, false);
        Chart {
            size,
            title,
            note,
            legend,
            legend_left,
            header_pad,
            legend_last,
            plots,
            columns: 1,
        }
    }

    /// The same chart with this legend from `left`.
    pub(crate) fn legend(mut self, left: i32, items: Vec<(Marker, String)>) -> Self {
        (self.legend_left, self.legend) = (left, items);
        self
    }
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

impl Plot {
    /// A plot with 14/16 px fonts and nothing under or over its layers.
    pub(crate) fn new(margin: [u32; 4], x: Axis, y: Axis, layers: Vec<Layer>) -> Self {
        let (font_px, under, over) = ((14, 16), Vec::new(), Vec::new());
        Plot {
            margin,
            x,
            y,
            font_px,
            under,
            layers,
            over,
        }
    }
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

impl Axis {
    /// An axis with grid lines at its automatic ticks (hand ticks draw their own).
    pub(crate) fn new(desc: impl Into<String>, range: Range, ticks: Ticks, area_px: u32) -> Self {
        let grid = matches!(ticks, Ticks::Auto(..));
        Axis {
            desc: desc.into(),
            range,
            ticks,
            grid,
            area_px,
        }
    }

    /// A category x axis: one slot per label.
    pub(crate) fn category(desc: impl Into<String>, labels: Vec<String>) -> Self {
        Axis::new(desc, Range::Category(labels), Ticks::Hand(Vec::new()), 0)
    }
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

impl Bar {
    /// A bar of `height` with its per-run dots and the text above it.
    pub(crate) fn new(color: Rgb, height: f64, dots: Vec<f64>, note: impl Into<String>) -> Self {
        let note = note.into();
        Bar {
            color,
            height,
            dots,
            note,
        }
    }
}

/// One category slot: bars side by side and text on a bracket over them (empty for none).
pub(crate) struct Slot(pub Vec<Bar>, pub String);

/// Something drawn in a plot, in data coordinates, in one colour.
pub(crate) struct Layer {
    /// What is drawn.
    pub shape: Shape,
    /// Its colour.
    pub color: Rgb,
    /// Its opacity.
    pub alpha: f64,
}

/// The shapes a layer can draw.
pub(crate) enum Shape {
    /// A polyline: points, width px, dashed as (dash, gap) px when given.
    Path(Vec<(f64, f64)>, u32, Option<(u32, u32)>),
    /// Filled circles: centres, radius px.
    Dots(Vec<(f64, f64)>, u32),
    /// A rectangle between two corners: filled when the width is 0, else outlined that many px.
    Rect([(f64, f64); 2], u32),
    /// Text at a data point shifted by pixels: at, shift, text, font px, anchor.
    Text((f64, f64), (i32, i32), String, f64, Anchor),
    /// Names next to points (radius px), placed clear of each other (`place`).
    PointLabels(Vec<((f64, f64), String)>, i32),
    /// Bar slots, one per category of the x axis.
    Bars(Vec<Slot>),
}

impl Layer {
    /// `shape` in `color`, opaque.
    pub(crate) fn new(shape: Shape, color: Rgb) -> Self {
        Layer {
            shape,
            color,
            alpha: 1.0,
        }
    }

    /// The same layer at opacity `alpha`.
    pub(crate) fn faded(self, alpha: f64) -> Self {
        Layer { alpha, ..self }
    }
}

/// A solid or dashed polyline.
pub(crate) fn path(
    points: Vec<(f64, f64)>,
    color: Rgb,
    width: u32,
    dash: Option<(u32, u32)>,
) -> Layer {
    Layer::new(Shape::Path(points, width, dash), color)
}

/// Filled circles.
pub(crate) fn dots(points: Vec<(f64, f64)>, color: Rgb, radius: u32) -> Layer {
    Layer::new(Shape::Dots(points, radius), color)
}

/// Text at `at` shifted by `shift` pixels.
pub(crate) fn text(
    at: (f64, f64),
    shift: (i32, i32),
    text: &str,
    color: Rgb,
    anchor: Anchor,
) -> Layer {
    Layer::new(
        Shape::Text(at, shift, text.to_string(), 14.0, anchor),
        color,
    )
}

/// The red dashed line of a limit or threshold.
pub(crate) fn limit_line(from: (f64, f64), to: (f64, f64)) -> Layer {
    path(vec![from, to], RED, 2, Some((8, 4)))
}

/// A red tag just right of `at` (the end of a limit line).
pub(crate) fn tag(at: (f64, f64), tag: &str) -> Layer {
    text(at, (6, 0), tag, RED, Anchor::LeftMid)
}

/// Dots coloured per point, as few layers as keep the drawing order.
pub(crate) fn dots_by_color(
    points: impl IntoIterator<Item = ((f64, f64), Rgb)>,
    alpha: f64,
    r: u32,
) -> Vec<Layer> {
    let mut out: Vec<Layer> = Vec::new();
    for (p, c) in points {
        match out.last_mut() {
            Some(Layer {
                shape: Shape::Dots(points, _),
                color,
                ..
            }) if *color == c => points.push(p),
            _ => out.push(dots(vec![p], c, r).faded(alpha)),
        }
    }
    out
}

/// The name a CSV gives an enum value (its serde name), for labels of types without Display.
pub(crate) use crate::record::csv_text as csv_name;
