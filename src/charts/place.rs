//! Point labels on a scatter plot, placed greedily: each label takes the first spot near its
//! point that covers no other label and no point and stays inside the plot, so names never
//! pile up where strategies cluster.

use plotters::coord::ranged1d::Ranged;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::draw::{color, font, text_width, Area, Plot};
use super::{plot_err, ChartError};

const LABEL_PX: f64 = 15.0;

/// An axis-aligned box in backend pixels (`x0 <= x1`, `y0 <= y1`).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Rect {
    x0: i32,
    y0: i32,
    x1: i32,
    y1: i32,
}

impl Rect {
    /// The box of width `w` and height `h` whose left edge is `x` and vertical centre is `y`.
    fn left_centre(x: i32, y: i32, (w, h): (i32, i32)) -> Self {
        Self {
            x0: x,
            y0: y - h / 2,
            x1: x + w,
            y1: y + h - h / 2,
        }
    }

    fn overlaps(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    fn inside(&self, o: &Rect) -> bool {
        self.x0 >= o.x0 && self.x1 <= o.x1 && self.y0 >= o.y0 && self.y1 <= o.y1
    }

    /// Vertical centre, where a left-anchored, centre-aligned text goes.
    fn mid_y(&self) -> i32 {
        (self.y0 + self.y1) / 2
    }
}

/// Where one label went, and whether it sits far enough from its point to need a leader line.
#[derive(Debug, PartialEq)]
struct Placement {
    rect: Rect,
    leader: bool,
}

/// Candidate boxes for a `size` label next to point `p`, nearest first: right, left, above,
/// below, then right and left stepping away one label height at a time.
fn candidates((px, py): (i32, i32), size: (i32, i32), gap: i32) -> Vec<(Rect, bool)> {
    let (w, h) = size;
    let right = |dy: i32| Rect::left_centre(px + gap, py + dy, size);
    let left = |dy: i32| Rect::left_centre(px - gap - w, py + dy, size);
    let mut out = vec![
        (right(0), false),
        (left(0), false),
        (Rect::left_centre(px - w / 2, py - gap - h / 2, size), false),
        (Rect::left_centre(px - w / 2, py + gap + h / 2, size), false),
    ];
    for step in 1..=10 {
        for dy in [-(h + 2) * step, (h + 2) * step] {
            out.push((right(dy), true));
            out.push((left(dy), true));
        }
    }
    out
}

/// Names each point (chart coordinates, coloured like series `i`) clear of the other names and
/// points, with a leader line when a name had to move away from its point.
pub(crate) fn draw_point_labels<X: Ranged<ValueType = f64>, Y: Ranged<ValueType = f64>>(
    chart: &Plot<X, Y>,
    root: &Area,
    points: &[((f64, f64), &str)],
    point_r: i32,
) -> Result<(), ChartError> {
    let pixels: Vec<(i32, i32)> = points.iter().map(|(p, _)| chart.backend_coord(p)).collect();
    let sizes: Vec<(i32, i32)> = (points.iter())
        .map(|(_, name)| (text_width(name, LABEL_PX), LABEL_PX as i32 + 2))
        .collect();
    let (xs, ys) = chart.plotting_area().get_pixel_range();
    let bounds = Rect {
        x0: xs.start,
        y0: ys.start,
        x1: xs.end,
        y1: ys.end,
    };
    let placed = place(&pixels, &sizes, bounds, point_r);
    let style = font(LABEL_PX, &BLACK, HPos::Left, VPos::Center);
    for (i, ((_, name), spot)) in points.iter().zip(&placed).enumerate() {
        let ((px, py), r) = (pixels[i], spot.rect);
        if spot.leader {
            let end = if r.x0 > px { r.x0 - 2 } else { r.x1 + 2 };
            let line = PathElement::new(vec![(px, py), (end, r.mid_y())], color(i).mix(0.6));
            root.draw(&line).map_err(plot_err)?;
        }
        // A white backing keeps the name legible where whiskers or grid lines pass under it.
        let backing = Rectangle::new(
            [(r.x0 - 2, r.y0), (r.x1 + 2, r.y1)],
            WHITE.mix(0.85).filled(),
        );
        root.draw(&backing).map_err(plot_err)?;
        root.draw(&Text::new(*name, (r.x0, r.mid_y()), style.clone()))
            .map_err(plot_err)?;
    }
    Ok(())
}

/// Places a label of `sizes[i]` (w, h px) next to each of `points`, in order; a point is an
/// obstacle of radius `point_r`. When nothing fits, the label goes right of its point anyway.
fn place(
    points: &[(i32, i32)],
    sizes: &[(i32, i32)],
    bounds: Rect,
    point_r: i32,
) -> Vec<Placement> {
    let mut taken: Vec<Rect> = (points.iter())
        .map(|&(x, y)| Rect {
            x0: x - point_r,
            y0: y - point_r,
            x1: x + point_r,
            y1: y + point_r,
        })
        .collect();
    let mut placed = Vec::with_capacity(points.len());
    for (&p, &size) in points.iter().zip(sizes) {
        let options = candidates(p, size, point_r + 4);
        let free = options
            .iter()
            .find(|(r, _)| r.inside(&bounds) && !taken.iter().any(|t| t.overlaps(r)));
        let (rect, leader) = free.copied().unwrap_or(options[0]);
        taken.push(rect);
        placed.push(Placement { rect, leader });
    }
    placed
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS: Rect = Rect {
        x0: 0,
        y0: 0,
        x1: 400,
        y1: 300,
    };

    #[test]
    fn lone_label_goes_right_of_its_point() {
        let placed = place(&[(100, 100)], &[(50, 14)], BOUNDS, 5);
        let want = Rect::left_centre(109, 100, (50, 14));
        assert_eq!(
            placed,
            vec![Placement {
                rect: want,
                leader: false
            }]
        );
    }

    #[test]
    fn crowded_labels_never_overlap_and_stay_inside() {
        // Five points almost on top of each other, one against the right edge.
        let points = [
            (200, 150),
            (204, 151),
            (208, 149),
            (212, 150),
            (216, 150),
            (395, 150),
        ];
        let placed = place(&points, &[(60, 14); 6], BOUNDS, 5);
        for (i, a) in placed.iter().enumerate() {
            assert!(a.rect.inside(&BOUNDS), "{a:?}");
            for b in &placed[i + 1..] {
                assert!(!a.rect.overlaps(&b.rect), "{a:?} overlaps {b:?}");
            }
        }
        assert!(
            placed[5].rect.x1 <= 395,
            "edge label must flip left: {placed:?}"
        );
        assert!(placed.iter().any(|p| p.leader));
    }
}
