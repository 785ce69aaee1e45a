//! The one renderer: turns a `spec::Chart` into SVG. Every plotters call of the chart modules
//! lives here (and in the drawing helpers it uses), so all charts share one look.

use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::axes::{custom_ticks, log_axis};
use super::draw::{
    font, legend, legend_rows, title, Area, CategoryLabels, Marker, Plot as Ctx, FONT,
    LEGEND_ROW_PX,
};
use super::metrics::text_width_px;
use super::place::draw_point_labels;
use super::spec::{Anchor, Axis, Chart, Layer, Plot, Range, Shape, Slot, Ticks};
use super::{plot_err, ChartError};

/// Draws `chart` into `svg`.
pub(crate) fn render(svg: &mut String, chart: &Chart) -> Result<(), ChartError> {
    let items: Vec<(Marker, &str)> = chart.legend.iter().map(|(m, s)| (*m, s.as_str())).collect();
    let (left, right) = (chart.legend_left, chart.size.0 as i32 - 10);
    let rows = legend_rows(&items, left, right) as i32;
    let legend_y = if chart.note.is_empty() { 60 } else { 80 };
    let root: Area = SVGBackend::with_string(svg, chart.size).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let (header, body) =
        root.split_vertically(legend_y - 4 + LEGEND_ROW_PX * rows + chart.header_pad);
    title(&header, &chart.title, &chart.note)?;
    if !chart.legend_last {
        legend(&header, (left, legend_y), right, &items)?;
    }
    match chart.plots.as_slice() {
        [plot] => draw_plot(&body, &root, plot)?,
        plots => {
            let columns = chart.columns.max(1);
            let grid = (plots.len().div_ceil(columns), columns);
            for (plot, area) in plots.iter().zip(body.split_evenly(grid)) {
                draw_plot(&area, &root, plot)?;
            }
        }
    }
    if chart.legend_last {
        legend(&header, (left, legend_y), right, &items)?;
    }
    root.present().map_err(plot_err)
}

/// Picks the plotters coordinate type of the x axis (linear or log), then of the y axis.
fn draw_plot(area: &Area, root: &Area, p: &Plot) -> Result<(), ChartError> {
    let width = area.dim_in_pixel().0;
    match p.x.range {
        Range::Log(lo, hi) => with_x(area, root, width, p, log_axis(lo, hi)),
        ref r => with_x(area, root, width, p, r.lo()..r.hi()),
    }
}

fn with_x<X>(area: &Area, root: &Area, width: u32, p: &Plot, x: X) -> Result<(), ChartError>
where
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
{
    match p.y.range {
        Range::Log(lo, hi) => draw_on(area, root, width, p, x, log_axis(lo, hi)),
        ref r => draw_on(area, root, width, p, x, r.lo()..r.hi()),
    }
}

fn draw_on<X, Y>(
    area: &Area,
    root: &Area,
    width: u32,
    p: &Plot,
    x: X,
    y: Y,
) -> Result<(), ChartError>
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let [top, right, bottom, left] = p.margin;
    let categories = match &p.x.range {
        Range::Category(labels) => {
            let slot_px =
                f64::from(width - left - right - p.y.area_px) / labels.len().max(1) as f64;
            Some((CategoryLabels::new(labels, slot_px), slot_px))
        }
        _ => None,
    };
    let x_area = categories.as_ref().map_or(p.x.area_px, |(c, _)| c.area_px);
    let mut chart = ChartBuilder::on(area)
        .margin_top(top)
        .margin_right(right)
        .margin_bottom(bottom)
        .margin_left(left)
        .x_label_area_size(x_area)
        .y_label_area_size(p.y.area_px)
        .build_cartesian_2d(x, y)
        .map_err(plot_err)?;
    let mut mesh = chart.configure_mesh();
    // Light lines only show between the 1-2-5 ticks of a log axis.
    let log_grid = [&p.x, &p.y]
        .iter()
        .any(|a| a.grid && matches!(a.range, Range::Log(..)));
    mesh.bold_line_style(BLACK.mix(0.12))
        .light_line_style(BLACK.mix(if log_grid { 0.04 } else { 0.0 }))
        .label_style((FONT, p.font_px.0))
        .axis_desc_style((FONT, p.font_px.1))
        .x_desc(p.x.desc.as_str())
        .y_desc(p.y.desc.as_str());
    if !p.x.grid {
        mesh.disable_x_mesh();
    }
    if !p.y.grid {
        mesh.disable_y_mesh();
    }
    let (xf, yf) = (formatter(&p.x), formatter(&p.y));
    let (x_fmt, y_fmt) = (move |v: &f64| xf(*v), move |v: &f64| yf(*v));
    mesh.x_labels(label_count(&p.x))
        .y_labels(label_count(&p.y))
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .draw()
        .map_err(plot_err)?;
    for layer in &p.under {
        draw_layer(&chart, root, layer, 0.0)?;
    }
    let (xt, yt) = (hand_ticks(&p.x), hand_ticks(&p.y));
    if !xt.is_empty() || !yt.is_empty() {
        custom_ticks(&chart, root, xt, yt)?;
    }
    let slot_px = categories.as_ref().map_or(1.0, |(_, px)| *px);
    for layer in &p.layers {
        draw_layer(&chart, root, layer, slot_px)?;
    }
    if let Some((labels, _)) = &categories {
        let y_lo = p.y.range.lo();
        labels.draw(root, |i| chart.backend_coord(&(i as f64, y_lo)))?;
    }
    for layer in &p.over {
        draw_layer(&chart, root, layer, slot_px)?;
    }
    Ok(())
}

fn label_count(a: &Axis) -> usize {
    match a.ticks {
        Ticks::Auto(n, _) => n,
        Ticks::Hand(_) => 0,
    }
}

fn formatter(a: &Axis) -> fn(f64) -> String {
    match a.ticks {
        Ticks::Auto(_, f) => f,
        Ticks::Hand(_) => |v| v.to_string(),
    }
}

fn hand_ticks(a: &Axis) -> &[(f64, String)] {
    match &a.ticks {
        Ticks::Hand(t) => t,
        Ticks::Auto(..) => &[],
    }
}

fn anchor(a: Anchor) -> (HPos, VPos) {
    match a {
        Anchor::LeftMid => (HPos::Left, VPos::Center),
        Anchor::LeftTop => (HPos::Left, VPos::Top),
        Anchor::CenterTop => (HPos::Center, VPos::Top),
    }
}

fn draw_layer<X, Y>(
    chart: &Ctx<X, Y>,
    root: &Area,
    layer: &Layer,
    slot_px: f64,
) -> Result<(), ChartError>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let area = chart.plotting_area();
    let color = layer.color.mix(layer.alpha);
    match &layer.shape {
        Shape::Path(points, width, Some((size, gap))) => {
            let style = color.stroke_width(*width);
            area.draw(&DashedPathElement::new(points.clone(), *size, *gap, style))
        }
        Shape::Path(points, width, None) => area.draw(&PathElement::new(
            points.clone(),
            color.stroke_width(*width),
        )),
        Shape::Dots(points, radius) => {
            for &p in points {
                area.draw(&Circle::new(p, *radius, color.filled()))
                    .map_err(plot_err)?;
            }
            Ok(())
        }
        Shape::Rect(corners, 0) => area.draw(&Rectangle::new(*corners, color.filled())),
        Shape::Rect(corners, width) => {
            area.draw(&Rectangle::new(*corners, color.stroke_width(*width)))
        }
        Shape::Text(at, (dx, dy), text, size, a) => {
            let (x, y) = chart.backend_coord(at);
            let (h, v) = anchor(*a);
            let style = font(*size, &layer.color, h, v);
            root.draw(&Text::new(text.as_str(), (x + dx, y + dy), style))
        }
        Shape::PointLabels(points, radius) => {
            let points: Vec<((f64, f64), &str)> =
                points.iter().map(|(p, s)| (*p, s.as_str())).collect();
            return draw_point_labels(chart, root, &points, *radius);
        }
        Shape::Bars(slots) => {
            let notes = NoteLayout::fit(slots, slot_px);
            for (i, slot) in slots.iter().enumerate() {
                draw_slot(chart, root, i, slot, slot_px, notes)?;
            }
            Ok(())
        }
    }
    .map_err(plot_err)
}

/// Share of a slot's width covered by its bars.
const SLOT_FILL: f64 = 0.7;
const NOTE_GREY: RGBColor = RGBColor(60, 60, 60);
/// Widest a bar gets, so a chart of one or two slots is not a wall of colour.
const MAX_BAR_PX: f64 = 120.0;
/// Largest sideways offset of a per-run dot from its bar's centre.
const JITTER_PX: f64 = 12.0;
/// Radius of a per-run dot.
const DOT_PX: u32 = 3;
/// Sizes a bar note is drawn at.
const NOTE_MIN: f64 = 11.0;
const NOTE_MAX: f64 = 14.0;

/// Draws slot `i`: its bars, one dot per run, the bar notes, and the slot note on a bracket
/// spanning the bars, above the tallest of them.
fn draw_slot<X, Y>(
    chart: &Ctx<X, Y>,
    root: &Area,
    i: usize,
    Slot(bars, note): &Slot,
    slot_px: f64,
    notes: NoteLayout,
) -> Result<(), ChartError>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let nb = bars.len().max(1);
    // Slot-relative widths: a slot is 1.0 wide, `slot_px` pixels.
    let band = (SLOT_FILL / nb as f64).min(MAX_BAR_PX / slot_px);
    let (group, half) = (band * nb as f64, band * 0.45);
    let jitter = half.min(JITTER_PX / slot_px);
    let mut slot_top = i32::MAX;
    for (b, bar) in bars.iter().enumerate() {
        let cx = i as f64 - group / 2.0 + (b as f64 + 0.5) * band;
        let corners = [(cx - half, 0.0), (cx + half, bar.height)];
        let fill = Rectangle::new(corners, bar.color.mix(0.55).filled());
        let edge = Rectangle::new(corners, bar.color.stroke_width(1));
        chart.plotting_area().draw(&fill).map_err(plot_err)?;
        chart.plotting_area().draw(&edge).map_err(plot_err)?;
        // Deterministic golden-ratio jitter keeps identical runs from hiding each other.
        for (k, &v) in bar.dots.iter().enumerate() {
            let j = ((k as f64 * 0.618_034) % 1.0 - 0.5) * 2.0 * jitter;
            let dot = Circle::new((cx + j, v), DOT_PX, BLACK.mix(0.75).filled());
            chart.plotting_area().draw(&dot).map_err(plot_err)?;
        }
        let high = bar.dots.iter().copied().fold(bar.height, f64::max);
        let (x, mut y) = chart.backend_coord(&(cx, high));
        y -= DOT_PX as i32 + 4;
        if !bar.note.is_empty() {
            let row = notes.row_px();
            if notes.stagger && b % 2 == 1 {
                // Raised a row clear of its neighbours' notes, with a tick down to its bar.
                let tick = PathElement::new(vec![(x, y), (x, y - row + 2)], NOTE_GREY.mix(0.4));
                root.draw(&tick).map_err(plot_err)?;
                y -= row;
            }
            let style = font(notes.size, &NOTE_GREY, HPos::Center, VPos::Bottom);
            root.draw(&Text::new(bar.note.as_str(), (x, y), style))
                .map_err(plot_err)?;
            y -= row;
        }
        slot_top = slot_top.min(y);
    }
    if note.is_empty() {
        return Ok(());
    }
    let edge = group / 2.0 - (band / 2.0 - half);
    let (left, _) = chart.backend_coord(&(i as f64 - edge, 0.0));
    let (right, _) = chart.backend_coord(&(i as f64 + edge, 0.0));
    let y = slot_top - 2;
    let bracket = vec![(left, y + 5), (left, y), (right, y), (right, y + 5)];
    root.draw(&PathElement::new(bracket, NOTE_GREY.stroke_width(1)))
        .map_err(plot_err)?;
    let style = font(15.0, &BLACK, HPos::Center, VPos::Bottom);
    let at = ((left + right) / 2, y - 3);
    root.draw(&Text::new(note.as_str(), at, style))
        .map_err(plot_err)?;
    Ok(())
}

/// One size for every bar note of a chart, and whether odd bars' notes are raised a row.
#[derive(Clone, Copy, Debug, PartialEq)]
struct NoteLayout {
    size: f64,
    stagger: bool,
}

impl NoteLayout {
    /// The largest size (11..14) at which the widest note fits over its bar, measured; when even
    /// the smallest is too wide, every other bar's note is raised a row so neighbours never overlap.
    fn fit(slots: &[Slot], slot_px: f64) -> Self {
        let bar_px = |Slot(bars, _): &Slot| {
            let band = (SLOT_FILL / bars.len().max(1) as f64).min(MAX_BAR_PX / slot_px);
            band * slot_px
        };
        let room = slots.iter().map(bar_px).fold(f64::INFINITY, f64::min) - 4.0;
        let notes = slots
            .iter()
            .flat_map(|Slot(bars, _)| bars.iter().map(|b| b.note.as_str()));
        let widest = notes.map(|n| text_width_px(n, 1.0)).fold(0.0, f64::max);
        if widest == 0.0 {
            return Self {
                size: NOTE_MAX,
                stagger: false,
            };
        }
        // Compared before clamping: at exactly the size that fits, a product could round past it.
        let fits_at = room / widest;
        Self {
            size: fits_at.clamp(NOTE_MIN, NOTE_MAX),
            stagger: fits_at < NOTE_MIN,
        }
    }

    fn row_px(self) -> i32 {
        self.size as i32 + 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::spec::Bar;
    use plotters::style::RGBColor;

    fn slot(notes: &[&str]) -> Slot {
        let bars = notes
            .iter()
            .map(|n| Bar::new(RGBColor(0, 0, 0), 1.0, vec![], *n))
            .collect();
        Slot(bars, String::new())
    }

    #[test]
    fn notes_share_one_size_and_stagger_only_when_too_wide_at_the_smallest() {
        let roomy = NoteLayout::fit(&[slot(&["0%"]), slot(&["100%", "1%"])], 400.0);
        assert_eq!(
            roomy,
            NoteLayout {
                size: NOTE_MAX,
                stagger: false
            }
        );
        let crowded = NoteLayout::fit(&[slot(&["100%", "100%", "100%"])], 80.0);
        assert_eq!(
            crowded,
            NoteLayout {
                size: NOTE_MIN,
                stagger: true
            }
        );
    }
}
