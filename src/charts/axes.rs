//! Axis ticks shared by the charts: 1-2-5 log ticks, and hand-drawn ticks for axes whose data
//! was transformed before plotting (symlog error %, log latency, percentiles).

use plotters::coord::combinators::{LogCoord, WithKeyPoints};
use plotters::coord::ranged1d::Ranged;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::draw::{font, Area, Plot};
use super::{plot_err, ChartError};

/// Tick values over `lo..hi` for a log scale: 1-2-5 per decade are labelled ("bold"), the
/// other integers of a decade only get a faint line; past 5 decades only powers of ten are labelled.
pub(crate) fn log_points(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let bold_steps: &[u32] = if (hi / lo).log10() > 5.0 {
        &[1]
    } else {
        &[1, 2, 5]
    };
    let (mut bold, mut light) = (Vec::new(), Vec::new());
    let mut decade = 10f64.powf(lo.log10().floor());
    while decade <= hi {
        for step in 1..10u32 {
            let v = decade * f64::from(step);
            if !(lo..=hi).contains(&v) {
                continue;
            }
            match bold_steps.contains(&step) {
                true => bold.push(v),
                false => light.push(v),
            }
        }
        decade *= 10.0;
    }
    (bold, light)
}

/// Log axis over `lo..hi` ticked by `log_points`; plotters' own log ticks can emit the same
/// value twice, which renders as smeared labels.
pub(crate) fn log_axis(lo: f64, hi: f64) -> WithKeyPoints<LogCoord<f64>> {
    let (bold, light) = log_points(lo, hi);
    (lo..hi)
        .log_scale()
        .with_key_points(bold)
        .with_light_points(light)
}

/// Grid lines, tick marks and labels at hand-picked positions on a linear `chart` whose data
/// is already transformed (symlog, log10, percentile); plotters cannot take custom key points
/// on an f64 axis and still format their labels, so they are drawn here.
pub(crate) fn custom_ticks<X: Ranged<ValueType = f64>, Y: Ranged<ValueType = f64>>(
    chart: &Plot<X, Y>,
    root: &Area,
    x: &[(f64, String)],
    y: &[(f64, String)],
) -> Result<(), ChartError> {
    let (xs, ys) = (chart.x_range(), chart.y_range());
    let grid = BLACK.mix(0.12);
    let (below, left) = (
        font(14.0, &BLACK, HPos::Center, VPos::Top),
        font(14.0, &BLACK, HPos::Right, VPos::Center),
    );
    let ticks = (x
        .iter()
        .map(|(t, text)| ((*t, ys.start), (*t, ys.end), (0, 1), &below, text)))
    .chain(
        y.iter()
            .map(|(t, text)| ((xs.start, *t), (xs.end, *t), (-1, 0), &left, text)),
    );
    for (from, to, (dx, dy), style, text) in ticks {
        let line = PathElement::new(vec![from, to], grid);
        chart.plotting_area().draw(&line).map_err(plot_err)?;
        let (px, py) = chart.backend_coord(&from);
        let mark = PathElement::new(vec![(px, py), (px + 5 * dx, py + 5 * dy)], BLACK);
        root.draw(&mark).map_err(plot_err)?;
        let at = (px + 8 * dx, py + 8 * dy);
        root.draw(&Text::new(text.as_str(), at, style.clone()))
            .map_err(plot_err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use plotters::coord::ranged1d::{BoldPoints, Ranged};

    #[test]
    fn log_axis_labels_1_2_5_without_duplicates() {
        let axis = log_axis(50.0, 1300.0);
        let ticks = axis.key_points(BoldPoints(100));
        assert_eq!(ticks, vec![50.0, 100.0, 200.0, 500.0, 1000.0]);
    }

    #[test]
    fn log_points_keep_only_powers_of_ten_past_five_decades() {
        let (bold, light) = log_points(1.0, 1e6);
        assert_eq!(bold, [1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6]);
        assert!(light.contains(&2.0) && light.contains(&500.0));
    }
}
