//! A shared bar chart: slots of side-by-side bars (the mean) with one dot per run on each bar,
//! optional numbers above bars and slots, and an optional dashed reference line; used by the
//! cost and calibrate charts.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::draw::{
    font, legend, legend_rows, title, Area, CategoryLabels, Marker, Plot, FONT, LEGEND_ROW_PX,
};
use super::{plot_err, ChartError};

const SIZE: (u32, u32) = (1200, 700);
const MARGIN_LEFT: u32 = 10;
/// Room right of the plot for the reference line's tag.
const MARGIN_RIGHT: u32 = 60;
const Y_LABEL_PX: u32 = 80;
const PLOT_INSET: u32 = MARGIN_LEFT + MARGIN_RIGHT + Y_LABEL_PX;
/// Share of a slot's width covered by its bars.
const SLOT_FILL: f64 = 0.7;
const NOTE_GREY: RGBColor = RGBColor(60, 60, 60);
/// Widest a bar gets, so a chart of one or two slots is not a wall of colour.
const MAX_BAR_PX: f64 = 120.0;
/// Largest sideways offset of a per-run dot from its bar's centre.
const JITTER_PX: f64 = 12.0;
/// Radius of a per-run dot.
const DOT_PX: u32 = 3;

/// One bar: its colour, its height (the mean), one dot per run, and text printed above it.
pub(crate) struct Bar {
    /// Fill (lightened) and outline colour.
    pub color: RGBColor,
    /// Bar height, normally the mean of `dots`.
    pub height: f64,
    /// One value per run, drawn as a dot on the bar.
    pub dots: Vec<f64>,
    /// Printed just above the bar (and its dots); empty for none.
    pub note: String,
}

/// One x-axis slot: a label under it, its bars side by side, and text above the whole slot.
pub(crate) struct Slot {
    /// Category label under the slot; " (" starts a second line.
    pub label: String,
    /// The slot's bars, left to right.
    pub bars: Vec<Bar>,
    /// Printed on a bracket over all the slot's bars; empty for none.
    pub note: String,
}

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
    /// The slots, left to right.
    pub slots: Vec<Slot>,
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
    let bars = c.slots.iter().flat_map(|s| &s.bars);
    let tallest = bars.flat_map(|b| b.dots.iter().chain([&b.height])).copied();
    let reference = c.reference.map(|(r, _)| r);
    let top = tallest.chain(reference).fold(0.0, f64::max);
    let bar_notes = c
        .slots
        .iter()
        .flat_map(|s| &s.bars)
        .any(|b| !b.note.is_empty());
    let slot_notes = c.slots.iter().any(|s| !s.note.is_empty());
    let headroom = 0.06 + 0.07 * (f64::from(u8::from(bar_notes)) + f64::from(u8::from(slot_notes)));
    if top > 0.0 {
        top * (1.0 + headroom)
    } else {
        1.0
    }
}

/// Draws the whole chart into `svg`.
pub(crate) fn draw(svg: &mut String, c: &BarChart) -> Result<(), ChartError> {
    let n = c.slots.len().max(1);
    let labels: Vec<String> = c.slots.iter().map(|s| s.label.clone()).collect();
    let slot_px = f64::from(SIZE.0 - PLOT_INSET) / n as f64;
    let category_labels = CategoryLabels::new(&labels, slot_px);
    let legend_left = (MARGIN_LEFT + Y_LABEL_PX) as i32;
    let legend_right = SIZE.0 as i32 - 10;
    let legend_y = if c.subtitle.is_empty() { 60 } else { 80 };
    let rows = legend_rows(&c.legend, legend_left, legend_right) as i32;
    let header_px = legend_y - 4 + LEGEND_ROW_PX * rows.max(1);

    let root: Area = SVGBackend::with_string(svg, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let (header, body) = root.split_vertically(header_px);
    title(&header, c.title, &c.subtitle)?;
    legend(&header, (legend_left, legend_y), legend_right, &c.legend)?;

    let top = y_top(c);
    let mut chart = ChartBuilder::on(&body)
        .margin_left(MARGIN_LEFT)
        .margin_right(MARGIN_RIGHT)
        .margin_bottom(10)
        .x_label_area_size(category_labels.area_px)
        .y_label_area_size(Y_LABEL_PX)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0.0..top)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(8)
        .bold_line_style(BLACK.mix(0.12))
        .light_line_style(BLACK.mix(0.0))
        .y_label_formatter(&|v| (c.y_format)(*v))
        .x_desc(c.x_desc)
        .y_desc(c.y_desc)
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 16))
        .draw()
        .map_err(plot_err)?;

    if let Some((r, _)) = c.reference {
        let line =
            DashedLineSeries::new([(-0.5, r), (n as f64 - 0.5, r)], 8, 4, RED.stroke_width(2));
        chart.draw_series(line).map_err(plot_err)?;
    }
    for (i, slot) in c.slots.iter().enumerate() {
        draw_slot(&chart, &root, i, slot, slot_px)?;
    }
    category_labels.draw(&root, |i| chart.backend_coord(&(i as f64, 0.0)))?;
    if let Some((r, tag)) = c.reference {
        let (x, y) = chart.backend_coord(&(n as f64 - 0.5, r));
        let red_font = font(14.0, &RED, HPos::Left, VPos::Center);
        root.draw(&Text::new(tag, (x + 6, y), red_font))
            .map_err(plot_err)?;
    }
    root.present().map_err(plot_err)?;
    Ok(())
}

/// Draws slot `i`: its bars, one dot per run, the bar notes, and the slot note on a bracket
/// spanning the bars, above the tallest of them.
fn draw_slot(
    chart: &Plot,
    root: &Area,
    i: usize,
    slot: &Slot,
    slot_px: f64,
) -> Result<(), ChartError> {
    let nb = slot.bars.len().max(1);
    // Slot-relative widths: a slot is 1.0 wide, `slot_px` pixels.
    let band = (SLOT_FILL / nb as f64).min(MAX_BAR_PX / slot_px);
    let (group, half) = (band * nb as f64, band * 0.45);
    let jitter = half.min(JITTER_PX / slot_px);
    let note_size = fit_font(&slot.bars, slot_px / nb as f64);
    let mut slot_top = i32::MAX;
    for (b, bar) in slot.bars.iter().enumerate() {
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
            let style = font(note_size, &NOTE_GREY, HPos::Center, VPos::Bottom);
            root.draw(&Text::new(bar.note.as_str(), (x, y), style))
                .map_err(plot_err)?;
            y -= note_size as i32 + 4;
        }
        slot_top = slot_top.min(y);
    }
    if slot.note.is_empty() {
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
    root.draw(&Text::new(
        slot.note.as_str(),
        ((left + right) / 2, y - 3),
        style,
    ))
    .map_err(plot_err)?;
    Ok(())
}

/// Largest font (10..14) at which every bar note of a slot fits in `bar_px`.
fn fit_font(bars: &[Bar], bar_px: f64) -> f64 {
    let widest = bars
        .iter()
        .map(|b| b.note.chars().count())
        .max()
        .unwrap_or(1)
        .max(1);
    // Same 0.45 em per char as `draw::text_width`.
    let size = (bar_px - 4.0) / (widest as f64 * 0.45);
    size.clamp(10.0, 14.0)
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
