//! The outage charts. `outage.svg`: every check's latency (log ms) against its place in the run,
//! the phases shaded behind (healthy, dead, restarted, hung, resumed), one panel with the breaker
//! off and one with it on; dots coloured by how the check was answered, so the 250 ms wall of the
//! hung phase, the near-zero dead checks and the breaker's short circuits read at a glance.
//! `outage_sweep.svg`, seed 000's open question as a trade-off: x = how long the limiter kept
//! answering by policy after Redis was back (log ms), y = how long users waited in total while
//! Redis was hung (full-budget checks plus probes); one point per (K, cooldown) = mean over
//! trials, coloured by K, and the breaker-off point for scale.

use std::path::{Path, PathBuf};

use super::{CheckRow, SweepRow, CHECKS, SWEEP};
use crate::charts::axes::log_points;
use crate::charts::spec::{
    color, csv_name, dots_by_color, text, Anchor, Axis, Chart, Layer, Marker, Plot, Range,
};
use crate::charts::spec::{Shape, Ticks, BLACK};
use crate::charts::{index_of, mean, read_file, write_spec, ChartError};
use crate::store::Reconnect;

const Y_LABEL_PX: u32 = 80;
/// Latencies are drawn no lower than this (ms), so a 0 µs short circuit still has a place.
const FLOOR_MS: f64 = 1e-4;
/// Blind times are drawn no lower than this (ms) on the log axis.
const BLIND_FLOOR_MS: f64 = 0.1;
const POINT_PX: i32 = 6;

/// How a check was answered: the dot's colour.
const KINDS: [&str; 5] = [
    "answered by Redis",
    "timed out (paid the budget)",
    "connection failed",
    "breaker open: no call",
    "probe",
];

fn kind(r: &CheckRow) -> usize {
    let failure = r.failure.as_ref().map(csv_name);
    match (csv_name(&r.route).as_str(), failure.as_deref()) {
        ("open", _) => 3,
        ("probe", _) => 4,
        (_, Some("timeout")) => 1,
        (_, Some("connection")) | (_, Some("server")) => 2,
        _ => 0,
    }
}

/// One panel: its breaker setting, the phases in order with their check counts, and the dots
/// as (x = place in the run, log10 ms, kind).
#[derive(Debug, Default)]
pub(crate) struct Panel {
    /// A custom limiter's name; none for the built-in's.
    custom: Option<String>,
    breaker: String,
    phases: Vec<String>,
    per_phase: Vec<u64>,
    dots: Vec<(f64, f64, usize)>,
}

/// Splits rows into panels (breaker off, on; then each custom limiter's) in first-appearance
/// order; each policy's run is drawn over the same x, since the phases have the same length in
/// every run. The panels are the seed's client's; the fail-fast runs are a table in the summary.
pub(crate) fn panels(rows: &[CheckRow]) -> Vec<Panel> {
    let mut keys: Vec<(Option<String>, String)> = Vec::new();
    let mut out: Vec<Panel> = Vec::new();
    // (phase index, seq) per dot until every phase's length is known.
    let mut places: Vec<Vec<(usize, u64)>> = Vec::new();
    for r in rows.iter().filter(|r| r.reconnect == Reconnect::InCheck) {
        let custom = (r.limiter.filter(|l| l.is_custom())).map(|l| l.to_string());
        let i = index_of(&mut keys, (custom.clone(), r.breaker.clone()));
        if i == out.len() {
            out.push(Panel {
                custom,
                breaker: r.breaker.clone(),
                ..Panel::default()
            });
            places.push(Vec::new());
        }
        let p = &mut out[i];
        let phase = index_of(&mut p.phases, r.phase.to_string());
        if phase == p.per_phase.len() {
            p.per_phase.push(0);
        }
        p.per_phase[phase] = p.per_phase[phase].max(r.seq + 1);
        let ms = (r.latency_us / 1e3).max(FLOOR_MS);
        p.dots.push((0.0, ms.log10(), kind(r)));
        places[i].push((phase, r.seq));
    }
    for (p, places) in out.iter_mut().zip(places) {
        let starts: Vec<u64> = (0..p.per_phase.len())
            .map(|i| p.per_phase[..i].iter().sum())
            .collect();
        for (d, (phase, seq)) in p.dots.iter_mut().zip(places) {
            d.0 = (starts[phase] + seq) as f64;
        }
    }
    out
}

/// One sweep point: its label, colour index (by K; off is 0) and mean (blind ms, hung cost ms).
#[derive(Debug, PartialEq)]
pub(crate) struct Point {
    label: String,
    series: usize,
    x: f64,
    y: f64,
}

/// Means over trials per (breaker, K, cooldown, who probes), in first-appearance order; a point
/// whose every trial failed to recover has no blind time and is left out (the CSV keeps it).
pub(crate) fn points(rows: &[SweepRow]) -> (Vec<String>, Vec<Point>) {
    let mut keys: Vec<(String, u32, u64, String)> = Vec::new();
    let mut groups: Vec<Vec<&SweepRow>> = Vec::new();
    let mut series: Vec<String> = Vec::new();
    for r in rows {
        let key = (r.breaker.clone(), r.k, r.cooldown_ms, r.probe_by.clone());
        let i = index_of(&mut keys, key);
        if i == groups.len() {
            groups.push(Vec::new());
        }
        groups[i].push(r);
    }
    let mut out = Vec::new();
    for ((breaker, k, cooldown, probe_by), rows) in keys.iter().zip(&groups) {
        let background = probe_by == "background";
        let name = match (breaker.as_str(), background) {
            ("on", false) => format!("K = {k}"),
            ("on", true) => format!("K = {k}, background probe"),
            _ => "breaker off".to_string(),
        };
        let s = index_of(&mut series, name);
        let blind: Vec<f64> = rows.iter().filter_map(|r| r.blind_ms).collect();
        let cost: Vec<f64> = rows.iter().map(|r| r.hung_cost_ms).collect();
        let (Some(x), Some(y)) = (mean(&blind), mean(&cost)) else {
            continue;
        };
        let label = match (breaker.as_str(), background) {
            ("on", false) => format!("K={k}, {cooldown} ms"),
            ("on", true) => format!("K={k}, {cooldown} ms, bg"),
            _ => "off".to_string(),
        };
        out.push(Point {
            label,
            series: s,
            x: x.max(BLIND_FLOOR_MS).log10(),
            y: y / 1e3,
        });
    }
    (series, out)
}

/// Renders `dir/outage.csv` into `outage.svg/.png`, and the breaker sweep if its CSV is there.
pub(crate) fn render(dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let rows = read_file(&CHECKS, dir)?;
    let mut policies: Vec<String> = Vec::new();
    for r in rows.iter().filter(|r| r.reconnect == Reconnect::InCheck) {
        index_of(&mut policies, crate::record::csv_text(&r.policy));
    }
    let mut written = write_spec(dir, "outage", &outage_chart(&panels(&rows), &policies))?;
    if SWEEP.path(dir).is_file() {
        written.extend(render_sweep(dir)?);
    }
    Ok(written)
}

/// Renders `dir/breaker_sweep.csv` into `outage_sweep.svg/.png`.
fn render_sweep(dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let (series, points) = points(&read_file(&SWEEP, dir)?);
    if points.is_empty() {
        return Err(ChartError::Empty(SWEEP.path(dir)));
    }
    write_spec(dir, "outage_sweep", &sweep_chart(&series, &points))
}

/// The chart of `panels`, whose runs had `policies` (each drawn over the others).
fn outage_chart(panels: &[Panel], policies: &[String]) -> Chart {
    let all = panels.iter().flat_map(|p| p.dots.iter().map(|d| d.1));
    let (lo, hi) = all.fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(y), b.max(y)));
    // Headroom above the 250 ms wall so the phase names sit clear of the hung checks.
    let (y_lo, y_hi) = (lo.min(-1.0) - 0.15, hi.max(2.5) + 0.5);
    let (values, _) = log_points(10f64.powf(y_lo), 10f64.powf(y_hi));
    let y_ticks: Vec<(f64, String)> = (values.iter())
        .map(|v| (v.log10(), format!("{v}")))
        .collect();
    let plots = panels.iter().map(|panel| {
        let (mut under, mut start) = (Vec::new(), 0.0);
        for (i, (name, n)) in panel.phases.iter().zip(&panel.per_phase).enumerate() {
            let end = start + *n as f64;
            let band = Layer::new(Shape::Rect([(start, y_lo), (end, y_hi)], 0), BLACK);
            under.push(band.faded(if i % 2 == 0 { 0.06 } else { 0.0 }));
            under.push(text(
                ((start + end) / 2.0, y_hi),
                (0, 4),
                name,
                BLACK,
                Anchor::CenterTop,
            ));
            start = end;
        }
        let x_hi = panel.per_phase.iter().sum::<u64>().max(1) as f64;
        let x_desc = match &panel.custom {
            Some(name) => format!(
                "check, in run order ({name} deciding, breaker {})",
                panel.breaker
            ),
            None => format!("check, in run order (breaker {})", panel.breaker),
        };
        let mut x = Axis::new(
            x_desc,
            Range::Linear(0.0, x_hi),
            Ticks::Auto(8, |v| format!("{v:.0}")),
            40,
        );
        x.grid = false;
        let y_range = Range::Linear(y_lo, y_hi);
        let y = Axis::new(
            "latency ms (log)",
            y_range,
            Ticks::Hand(y_ticks.clone()),
            Y_LABEL_PX,
        );
        let dots = panel.dots.iter().map(|&(x, y, k)| ((x, y), color(k)));
        let mut plot = Plot::new([10, 30, 0, 10], x, y, dots_by_color(dots, 0.7, 2));
        (plot.font_px, plot.under) = ((13, 15), under);
        plot
    });
    let note = match policies {
        [one] => format!("every check of every run, in order; policy {one}"),
        _ => format!(
            "every check of every run, in order; the policies {} drawn over each other (the policy changes the \
answer, not the time)",
            policies.join(" and ")
        ),
    };
    let legend =
        (KINDS.iter().enumerate()).map(|(i, name)| (Marker::Dot(color(i)), name.to_string()));
    let title = "outage: latency of each check (log ms)";
    // Two panels fill the seed's picture; each custom limiter's two get the same height.
    let height = 900 + 350 * panels.len().saturating_sub(2) as u32;
    Chart::new((1200, height), title, note, plots.collect())
        .legend(10 + Y_LABEL_PX as i32, legend.collect())
}

fn sweep_chart(series: &[String], points: &[Point]) -> Chart {
    let x_lo = points.iter().map(|p| p.x).fold(f64::MAX, f64::min) - 0.2;
    let x_hi = points.iter().map(|p| p.x).fold(f64::MIN, f64::max) + 0.3;
    let y_hi = points.iter().map(|p| p.y).fold(0.0, f64::max) * 1.15 + 0.1;
    let (values, _) = log_points(10f64.powf(x_lo), 10f64.powf(x_hi));
    let x_ticks: Vec<(f64, String)> = (values.iter())
        .map(|v| (v.log10(), format!("{v}")))
        .collect();
    let dots = points.iter().map(|p| ((p.x, p.y), color(p.series)));
    let mut layers = dots_by_color(dots, 1.0, POINT_PX as u32);
    let labels = points.iter().map(|p| ((p.x, p.y), p.label.clone()));
    layers.push(Layer::new(
        Shape::PointLabels(labels.collect(), POINT_PX),
        BLACK,
    ));
    let x_desc = "blind after SIGCONT: ms until the first normal answer (log)";
    let x = Axis::new(x_desc, Range::Linear(x_lo, x_hi), Ticks::Hand(x_ticks), 60);
    let y_desc = "users' total wait while hung, s (budget timeouts + probes)";
    let y = Axis::new(
        y_desc,
        Range::Linear(0.0, y_hi),
        Ticks::Auto(11, |v| format!("{v:.1}")),
        70,
    );
    let note = "one point per (K, cooldown), mean over trials; lower = users waited less while Redis hung, left = \
enforcement back sooner after SIGCONT";
    let legend = (series.iter().enumerate()).map(|(i, name)| (Marker::Dot(color(i)), name.clone()));
    let title = "outage: circuit breaker sweep, time users waited vs time blind";
    let plot = Plot::new([0, 40, 10, 10], x, y, layers);
    Chart::new((1200, 750), title, note, vec![plot]).legend(90, legend.collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::csv_dir;
    use std::fs;

    const CSV: &str = "\
policy,breaker,k,cooldown_ms,reconnect,phase,seq,at_ms,latency_us,outcome,route,failure,breaker_state,\
reconnected,script_reloaded,suspended
fail-open,off,0,0,in-check,healthy,0,0,300,allowed,redis,,closed,false,false,false
fail-open,off,0,0,in-check,healthy,1,2,250,allowed,redis,,closed,false,false,false
fail-open,off,0,0,in-check,dead,0,0,60,degraded-allowed,redis,connection,closed,true,false,false
fail-open,off,0,0,in-check,hung,0,0,251000,degraded-allowed,redis,timeout,closed,false,false,false
fail-open,on,3,250,in-check,healthy,0,0,280,allowed,redis,,closed,false,false,false
fail-open,on,3,250,in-check,hung,0,0,250900,degraded-allowed,redis,timeout,open,false,false,false
fail-open,on,3,250,in-check,hung,1,251,0.6,degraded-allowed,open,,open,false,false,false
fail-open,on,3,250,in-check,hung,2,253,0,degraded-allowed,probe,timeout,open,true,false,false
fail-open,off,0,0,background,hung,0,0,999999,degraded-allowed,redis,timeout,closed,false,false,false
";

    #[test]
    fn panels_lay_phases_end_to_end() {
        let mut reader = csv::Reader::from_reader(CSV.as_bytes());
        let rows: Vec<CheckRow> = reader.deserialize().collect::<Result<_, _>>().unwrap();
        let p = panels(&rows);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].phases, ["healthy", "dead", "hung"]);
        assert_eq!(p[0].per_phase, [2, 1, 1]);
        let xs: Vec<f64> = p[0].dots.iter().map(|d| d.0).collect();
        assert_eq!(xs, [0.0, 1.0, 2.0, 3.0]);
        let kinds: Vec<usize> = p[1].dots.iter().map(|d| d.2).collect();
        assert_eq!(kinds, [0, 1, 3, 4]);
        assert_eq!(p[1].dots[3].1, FLOOR_MS.log10(), "0 µs sits on the floor");
    }

    #[test]
    fn renders_svg_and_png_with_phases() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = csv_dir(tmp.path(), "outage", CHECKS.name(), CSV);
        let paths = render(&dir).unwrap();
        assert_eq!(paths, ["outage.svg", "outage.png"].map(|n| dir.join(n)));
        let svg = fs::read_to_string(&paths[0]).unwrap();
        for s in ["healthy", "hung", "breaker open: no call", "breaker on"] {
            assert!(svg.contains(s), "svg lacks {s}");
        }
    }

    const SWEEP: &str = "\
breaker,k,cooldown_ms,probe_budget_ms,trial,jitter_ms,hung_ms,hung_checks,paid_budget,probes,hung_cost_ms,\
blind_checks,blind_ms,suspended_checks
off,0,0,25,0,100,3100,12,12,0,3010,0,0.05,0
on,1,50,25,0,10,3010,1200,1,40,1250,5,20,0
on,1,50,25,1,30,3030,1200,1,40,1270,7,30,0
on,3,3000,25,0,10,3010,1200,3,1,775,800,1600,0
on,3,250,25,0,10,3010,1200,3,11,1025,0,,0
";

    #[test]
    fn means_over_trials_and_unrecovered_points_left_out() {
        let mut reader = csv::Reader::from_reader(SWEEP.as_bytes());
        let rows: Vec<SweepRow> = reader.deserialize().collect::<Result<_, _>>().unwrap();
        let (series, points) = points(&rows);
        assert_eq!(series, ["breaker off", "K = 1", "K = 3"]);
        let labels: Vec<&str> = points.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(labels, ["off", "K=1, 50 ms", "K=3, 3000 ms"]);
        assert_eq!(points[1].x, 25f64.log10());
        assert_eq!(points[1].y, 1.26);
        assert_eq!(
            points[0].x,
            0.1f64.log10(),
            "below the floor is drawn on it"
        );
    }

    #[test]
    fn a_background_probe_is_a_series_of_its_own() {
        let csv = "\
breaker,k,cooldown_ms,probe_budget_ms,probe_by,trial,jitter_ms,hung_ms,hung_checks,paid_budget,probes,\
background_probes,hung_cost_ms,blind_checks,blind_ms,suspended_checks
on,3,250,25,check,0,10,3010,1200,3,11,0,1025,100,280,0
on,3,250,25,background,0,10,3010,1200,3,0,11,750,100,275,0
";
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        let rows: Vec<SweepRow> = reader.deserialize().collect::<Result<_, _>>().unwrap();
        let (series, points) = points(&rows);
        assert_eq!(series, ["K = 3", "K = 3, background probe"]);
        let labels: Vec<&str> = points.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(labels, ["K=3, 250 ms", "K=3, 250 ms, bg"]);
    }

    #[test]
    fn sweep_renders_svg_and_png() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = csv_dir(tmp.path(), "outage", super::SWEEP.name(), SWEEP);
        let paths = render_sweep(&dir).unwrap();
        assert_eq!(
            paths,
            ["outage_sweep.svg", "outage_sweep.png"].map(|n| dir.join(n))
        );
        let svg = fs::read_to_string(&paths[0]).unwrap();
        for s in ["K=1, 50 ms", "breaker off", "blind after SIGCONT"] {
            assert!(svg.contains(s), "svg lacks {s}");
        }
    }
}
