//! Chart-agnostic drawing helpers (palette, fonts, title, category labels, header legend), kept
//! apart from any one chart so later charts share one look.

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::metrics::text_width_px;
use super::{plot_err, ChartError};

/// The drawing area every chart renders into.
pub(crate) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// A built x/y plot on the SVG backend (linear or log axes), for helpers that draw on it.
pub(crate) type Plot<'a, 'b, X, Y> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>;

/// Generic family: resvg maps it to an installed sans face (see `png.rs`).
pub(crate) const FONT: &str = "sans-serif";

/// Series colours (Tableau 10 minus red, which is reserved for limits/thresholds).
pub(crate) const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
    RGBColor(188, 189, 34),
];

/// Colour of series `i`; past the palette it repeats darker, so a 9th series never looks
/// exactly like the 1st.
pub(crate) fn color(i: usize) -> RGBColor {
    let RGBColor(r, g, b) = PALETTE[i % PALETTE.len()];
    let shade = 0.55f64.powi((i / PALETTE.len()).min(3) as i32);
    let dim = |c: u8| (f64::from(c) * shade).round() as u8;
    RGBColor(dim(r), dim(g), dim(b))
}

/// A text style anchored at `h`/`v`; plotters' tuple-to-font conversions are verbose.
pub(crate) fn font(size: f64, color: &RGBColor, h: HPos, v: VPos) -> TextStyle<'static> {
    (FONT, size).into_font().color(color).pos(Pos::new(h, v))
}

/// Rendered width of `text` in px (measured in the charts' font), for laying out text plotters
/// does not place.
pub(crate) fn text_width(text: &str, size: f64) -> i32 {
    text_width_px(text, size).ceil() as i32
}

/// Category labels under x slots. A " (" in a label starts a second line; when even the
/// smallest font collides with neighbours, odd slots drop below even ones (stagger).
pub(crate) struct CategoryLabels {
    lines: Vec<Vec<String>>,
    size: f64,
    stagger: bool,
    max_lines: usize,
    row_px: i32,
    /// Height the x label area needs: labels plus the axis description below them.
    pub(crate) area_px: u32,
}

impl CategoryLabels {
    /// Lays out `labels` for slots `slot_px` wide; runs before the chart is built so the
    /// x label area can be sized to fit.
    pub(crate) fn new(labels: &[String], slot_px: f64) -> Self {
        let lines: Vec<Vec<String>> = labels
            .iter()
            .map(|l| match l.split_once(" (") {
                Some((head, rest)) => vec![head.to_string(), format!("({rest}")],
                None => vec![l.clone()],
            })
            .collect();
        // Width at size 1 (width is linear in size), with a space's margin.
        let widest = lines
            .iter()
            .flatten()
            .map(|l| text_width_px(&format!("{l} "), 1.0));
        let per_px = widest.fold(0.0, f64::max).max(0.5);
        let size = (slot_px / per_px).clamp(11.0, 15.0);
        let stagger = size * per_px > slot_px - 4.0;
        let max_lines = lines.iter().map(Vec::len).max().unwrap_or(1);
        let row_px = size as i32 + 3;
        let rows = if stagger { 2 * max_lines } else { max_lines };
        let area_px = (12 + rows as i32 * row_px + 26).max(0) as u32;
        Self {
            lines,
            size,
            stagger,
            max_lines,
            row_px,
            area_px,
        }
    }

    /// Draws label `i` centred below `axis_px(i)`, the pixel where slot `i` meets the x axis.
    pub(crate) fn draw(
        &self,
        area: &Area,
        axis_px: impl Fn(usize) -> (i32, i32),
    ) -> Result<(), ChartError> {
        let style = font(self.size, &BLACK, HPos::Center, VPos::Top);
        for (i, parts) in self.lines.iter().enumerate() {
            let (x, y) = axis_px(i);
            let first_row = if self.stagger && i % 2 == 1 {
                self.max_lines
            } else {
                0
            };
            if first_row > 0 {
                // A faint leader ties a dropped label back to its slot.
                let bottom = y + 4 + first_row as i32 * self.row_px;
                let leader = PathElement::new(vec![(x, y + 2), (x, bottom)], BLACK.mix(0.25));
                area.draw(&leader).map_err(plot_err)?;
            }
            for (row, part) in parts.iter().enumerate() {
                let pos = (x, y + 6 + (first_row + row) as i32 * self.row_px);
                area.draw(&Text::new(part.as_str(), pos, style.clone()))
                    .map_err(plot_err)?;
            }
        }
        Ok(())
    }
}

/// How a legend entry is marked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Marker {
    /// A filled dot: one point per run or trial.
    Dot(RGBColor),
    /// A solid line swatch.
    Line(RGBColor),
    /// A dashed line swatch: limits, thresholds, alternative clocks.
    Dashed(RGBColor),
    /// A line swatch dashed as (dash, gap) px, the pattern of the line it names.
    Pattern(RGBColor, u32, u32),
    /// A hollow square: a point measured another way (e.g. flat out).
    Square(RGBColor),
}

/// Height of one legend row.
pub(crate) const LEGEND_ROW_PX: i32 = 24;
const LEGEND_SIZE: f64 = 15.0;

/// Where each legend item starts when rows begin at `start.0` and wrap before `right`.
fn legend_layout(items: &[(Marker, &str)], (left, top): (i32, i32), right: i32) -> Vec<(i32, i32)> {
    let (mut x, mut y) = (left, top);
    let mut at = Vec::with_capacity(items.len());
    for (_, name) in items {
        let width = 26 + text_width(name, LEGEND_SIZE);
        if x > left && x + width > right {
            (x, y) = (left, y + LEGEND_ROW_PX);
        }
        at.push((x, y));
        x += width + 26;
    }
    at
}

/// Rows a legend wrapped between `left` and `right` needs, so a header band can be sized first.
pub(crate) fn legend_rows(items: &[(Marker, &str)], left: i32, right: i32) -> usize {
    let layout = legend_layout(items, (left, 0), right);
    layout
        .last()
        .map_or(0, |(_, y)| (y / LEGEND_ROW_PX) as usize + 1)
}

/// Draws a legend from `(x, y)`, wrapping to a new row before `right`; charts put it in a
/// header band so it can never cover data.
pub(crate) fn legend(
    area: &Area,
    start: (i32, i32),
    right: i32,
    items: &[(Marker, &str)],
) -> Result<(), ChartError> {
    let style = font(LEGEND_SIZE, &BLACK, HPos::Left, VPos::Center);
    for ((marker, name), (x, y)) in items.iter().zip(legend_layout(items, start, right)) {
        let swatch = vec![(x, y), (x + 20, y)];
        match marker {
            Marker::Dot(c) => area.draw(&Circle::new((x + 10, y), 5, c.filled())),
            Marker::Line(c) => area.draw(&PathElement::new(swatch, c.stroke_width(2))),
            Marker::Dashed(c) => {
                area.draw(&DashedPathElement::new(swatch, 7, 4, c.stroke_width(2)))
            }
            Marker::Pattern(c, dash, gap) => area.draw(&DashedPathElement::new(
                swatch,
                *dash,
                *gap,
                c.stroke_width(2),
            )),
            Marker::Square(c) => {
                let corners = [(x + 5, y - 5), (x + 15, y + 5)];
                area.draw(&Rectangle::new(corners, c.stroke_width(2)))
            }
        }
        .map_err(plot_err)?;
        area.draw(&Text::new(*name, (x + 26, y), style.clone()))
            .map_err(plot_err)?;
    }
    Ok(())
}

/// Draws a centred title at the top of `area` and, when `note` is not empty, a grey line
/// under it saying how to read the chart.
pub(crate) fn title(area: &Area, text: &str, note: &str) -> Result<(), ChartError> {
    let mid = area.dim_in_pixel().0 as i32 / 2;
    let big = font(22.0, &BLACK, HPos::Center, VPos::Top);
    area.draw(&Text::new(text, (mid, 14), big))
        .map_err(plot_err)?;
    if !note.is_empty() {
        let grey = RGBColor(90, 90, 90);
        let small = font(14.0, &grey, HPos::Center, VPos::Top);
        area.draw(&Text::new(note, (mid, 44), small))
            .map_err(plot_err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_stagger_only_when_crowded() {
        let labels: Vec<String> = vec!["1x1".into(), "1x500 (seed 001)".into()];
        let roomy = CategoryLabels::new(&labels, 200.0);
        assert!(!roomy.stagger);
        assert_eq!(roomy.lines[1], ["1x500", "(seed 001)"]);
        assert!(CategoryLabels::new(&labels, 30.0).stagger);
    }

    #[test]
    fn legend_wraps_before_the_right_edge() {
        let items: Vec<(Marker, &str)> = (0..6)
            .map(|i| (Marker::Dot(color(i)), "strategy"))
            .collect();
        assert_eq!(legend_rows(&items, 0, 10_000), 1);
        // Each item is a 26 px swatch plus its measured name, then a 26 px gap: room for two.
        let item = 26 + text_width("strategy", LEGEND_SIZE);
        let right = 100 + 3 * item + 2 * 26 - 1;
        let layout = legend_layout(&items, (100, 50), right);
        assert!(layout.iter().all(|&(x, _)| x >= 100 && x + item <= right));
        assert_eq!(layout[..3], [(100, 50), (100 + item + 26, 50), (100, 74)]);
        assert_eq!(legend_rows(&items, 100, right), 3);
    }
}
