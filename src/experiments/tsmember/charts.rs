//! The tsmember chart: admitted / limit against arrival rate, both on log scales, one line per
//! member x clock variant (colour = member, dashed = the caller's clock) through the mean of its
//! trials, a dot per trial; flat-out runs are hollow markers at the rate they achieved.

use super::{CUSTOM, TSMEMBER};
use crate::charts::read_file;
use std::path::{Path, PathBuf};

use super::{CustomRow, TsmemberRow};
use crate::charts::spec::{
    color, csv_name, dots, limit_line, path, tag, Axis, Chart, Layer, Marker, Plot, Range,
};
use crate::charts::spec::{Shape, Ticks, BLACK, RED};
use crate::charts::{index_of, mean, write_spec, ChartError};

const SIZE: (u32, u32) = (1200, 760);
/// Sideways spread of one rate's variants, as a factor on the log x axis, so dots stay apart.
const DODGE: f64 = 0.035;

/// One member x clock variant: its trials per arrival rate, and its flat-out runs.
#[derive(Debug, PartialEq)]
pub(crate) struct Variant {
    name: String,
    member: usize,
    caller_clock: bool,
    /// Arrivals in batches (dotted), not plain Poisson.
    batched: bool,
    /// (rate, admitted / limit of each trial), ascending rate.
    rates: Vec<(f64, Vec<f64>)>,
    /// (achieved rate, admitted / limit) of each flat-out run.
    flat_out: Vec<(f64, f64)>,
}

/// Groups rows into variants in first-appearance order; pure so it is unit-testable.
pub(crate) fn group(rows: &[TsmemberRow]) -> Vec<Variant> {
    let (mut members, mut names) = (Vec::new(), Vec::new());
    let mut out: Vec<Variant> = Vec::new();
    for r in rows.iter().filter(|r| r.limit > 0) {
        let member = index_of(&mut members, r.member);
        let clock = csv_name(&r.clock);
        let batched = r.batch > 1;
        let name = match batched {
            true => format!("{} / {clock}, {} per arrival", csv_name(&r.member), r.batch),
            false => format!("{} / {clock}", csv_name(&r.member)),
        };
        let i = index_of(&mut names, name);
        if i == out.len() {
            out.push(Variant {
                name: names[i].clone(),
                member,
                caller_clock: clock == "caller",
                batched,
                rates: Vec::new(),
                flat_out: Vec::new(),
            });
        }
        let ratio = r.admitted as f64 / r.limit as f64;
        match r.rate.parse::<f64>() {
            Ok(rate) if rate > 0.0 => {
                let v = &mut out[i].rates;
                match v.iter_mut().find(|(x, _)| *x == rate) {
                    Some((_, trials)) => trials.push(ratio),
                    None => v.push((rate, vec![ratio])),
                }
            }
            _ if r.requests_per_s > 0.0 => out[i].flat_out.push((r.requests_per_s, ratio)),
            _ => {}
        }
    }
    for v in &mut out {
        v.rates.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

/// Custom limiters' runs (`tsmember_custom.csv`) as variants of their own, each in the next
/// colour after `colours_used`, dashed when the manifest hands the script the caller's clock.
pub(crate) fn group_custom(rows: &[CustomRow], colours_used: usize) -> Vec<Variant> {
    let mut names: Vec<String> = Vec::new();
    let mut out: Vec<Variant> = Vec::new();
    for r in rows.iter().filter(|r| r.limit > 0) {
        let i = index_of(&mut names, r.strategy.to_string());
        if i == out.len() {
            out.push(Variant {
                name: names[i].clone(),
                member: colours_used + i,
                caller_clock: r.caller_clock,
                batched: false,
                rates: Vec::new(),
                flat_out: Vec::new(),
            });
        }
        let ratio = r.admitted as f64 / r.limit as f64;
        match r.rate.parse::<f64>() {
            Ok(rate) if rate > 0.0 => match out[i].rates.iter_mut().find(|(x, _)| *x == rate) {
                Some((_, trials)) => trials.push(ratio),
                None => out[i].rates.push((rate, vec![ratio])),
            },
            _ if r.requests_per_s > 0.0 => out[i].flat_out.push((r.requests_per_s, ratio)),
            _ => {}
        }
    }
    for v in &mut out {
        v.rates.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

/// Renders `dir/tsmember.csv` (and custom limiters' runs beside it) into `dir/tsmember.svg` and
/// `dir/tsmember.png`.
pub(crate) fn render(dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let mut variants = group(&read_file(&TSMEMBER, dir)?);
    let custom = CUSTOM.path(dir);
    if custom.is_file() {
        let colours = variants.iter().map(|v| v.member + 1).max().unwrap_or(0);
        variants.extend(group_custom(&read_file(&CUSTOM, dir)?, colours));
    }
    if variants
        .iter()
        .all(|v| v.rates.is_empty() && v.flat_out.is_empty())
    {
        return Err(ChartError::Empty(TSMEMBER.path(dir)));
    }
    write_spec(dir, "tsmember", &chart(&variants))
}

/// Log ranges that hold every point, the limit line at 1, and some room around them.
fn ranges(variants: &[Variant]) -> ((f64, f64), (f64, f64)) {
    let xs = variants.iter().flat_map(|v| {
        let rates = v.rates.iter().map(|r| r.0);
        rates.chain(v.flat_out.iter().map(|f| f.0))
    });
    let ys = variants.iter().flat_map(|v| {
        let trials = v.rates.iter().flat_map(|r| r.1.iter().copied());
        trials.chain(v.flat_out.iter().map(|f| f.1))
    });
    let (x_lo, x_hi) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let (y_lo, y_hi) =
        (ys.filter(|y| *y > 0.0)).fold((1.0f64, 1.0f64), |(a, b), y| (a.min(y), b.max(y)));
    (
        (x_lo / 2.0, x_hi * 2.0),
        (y_lo / 1.5, (y_hi * 1.5).max(y_lo * 4.0)),
    )
}

/// How a variant's line is dashed, (dash, gap) px: dotted when batched, dashed on the caller's
/// clock, solid otherwise; the legend swatch uses the same pattern.
fn dashes(v: &Variant) -> Option<(u32, u32)> {
    match (v.batched, v.caller_clock) {
        (true, _) => Some((2, 3)),
        (false, true) => Some((7, 4)),
        (false, false) => None,
    }
}

/// The chart spec; `variants` has at least one point.
fn chart(variants: &[Variant]) -> Chart {
    let ((x_lo, x_hi), (y_lo, y_hi)) = ranges(variants);
    let mut legend: Vec<(Marker, String)> = (variants.iter())
        .map(|v| match dashes(v) {
            Some((dash, gap)) => (Marker::Pattern(color(v.member), dash, gap), v.name.clone()),
            None => (Marker::Line(color(v.member)), v.name.clone()),
        })
        .collect();
    if variants.iter().any(|v| !v.flat_out.is_empty()) {
        legend.push((
            Marker::Square(BLACK),
            "flat out (closed loop), at the rate reached".into(),
        ));
    }
    legend.push((Marker::Dashed(RED), "limit".into()));
    let mut layers = vec![limit_line((x_lo, 1.0), (x_hi, 1.0))];
    let n = variants.len() as f64;
    for (k, v) in variants.iter().enumerate() {
        let c = color(v.member);
        let dodge = 1.0 + DODGE * (k as f64 - (n - 1.0) / 2.0);
        let means: Vec<(f64, f64)> = (v.rates.iter())
            .filter_map(|(rate, trials)| Some((*rate, mean(trials)?)))
            .collect();
        layers.push(path(means, c, 2, dashes(v)));
        let dots_at = (v.rates.iter())
            .flat_map(|(rate, trials)| trials.iter().map(move |&y| (rate * dodge, y)));
        layers.push(dots(dots_at.collect(), c, 4).faded(0.7));
        for &(x, y) in &v.flat_out {
            layers.push(Layer::new(
                Shape::Rect([(x / 1.04, y / 1.04), (x * 1.04, y * 1.04)], 2),
                c,
            ));
        }
    }
    let x = Axis::new(
        "arrival rate, requests/s (log)",
        Range::Log(x_lo, x_hi),
        Ticks::Auto(11, |v| format!("{v}")),
        60,
    );
    let y = Axis::new(
        "admitted / limit (log)",
        Range::Log(y_lo, y_hi),
        Ticks::Auto(11, |v| format!("{v}x")),
        80,
    );
    let mut plot = Plot::new([0, 60, 10, 10], x, y, layers);
    plot.over = vec![tag((x_hi, 1.0), "limit")];
    let note = "line = mean of trials, dot = one trial (dodged sideways); hollow square = flat out (closed loop), \
at the rate it reached";
    let mut chart = Chart::new(
        SIZE,
        "tsmember: admitted / limit by arrival rate",
        note,
        vec![plot],
    )
    .legend(90, legend);
    chart.header_pad = 8;
    chart
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::csv_dir;
    use std::fs;

    const HEADER: &str = "member,clock,rate,batch,trial,duration_s,offered,admitted,denied,limit,admitted_per_limit,\
log_entries,p50_us,p99_us,max_us,p99_late_us,max_late_us,late_starts,generator_cpu_s,requests_per_s";
    const ROWS: &str = "\
time-ms,redis,1000,1,0,2,2000,189,1811,100,1,189,1,1,1,1,1,0,0,1000
time-ms,redis,100,1,0,2,200,109,91,100,1,109,1,1,1,1,1,0,0,100
time-ms,redis,1000,1,1,2,2000,191,1809,100,1,191,1,1,1,1,1,0,0,1000
unique-id,caller,100,1,0,2,200,100,100,100,1,100,1,1,1,1,1,0,0,100
time-ms,redis,flat-out,0,0,2,90000,51000,39000,1000,1,51000,1,1,1,1,1,0,0,45000
time-ms,redis,1000,4,0,2,2000,254,1746,100,1,254,1,1,1,1,1,0,0,1000
";

    #[test]
    fn renders_svg_and_png_with_variants() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = csv_dir(
            tmp.path(),
            "tsmember",
            TSMEMBER.name(),
            &format!("{HEADER}\n{ROWS}"),
        );
        let paths = render(&dir).unwrap();
        assert_eq!(paths, ["tsmember.svg", "tsmember.png"].map(|n| dir.join(n)));
        let svg = fs::read_to_string(&paths[0]).unwrap();
        for s in [
            "time-ms / redis",
            "unique-id / caller",
            "4 per arrival",
            "limit",
            "1000",
        ] {
            assert!(svg.contains(s), "svg lacks {s}");
        }
    }

    #[test]
    fn header_only_is_empty() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = csv_dir(
            tmp.path(),
            "tsmember",
            TSMEMBER.name(),
            &format!("{HEADER}\n"),
        );
        let err = render(&dir).unwrap_err();
        assert!(matches!(err, ChartError::Empty(_)), "{err}");
    }

    #[test]
    fn groups_trials_by_rate_and_keeps_flat_out_apart() {
        let csv = format!("{HEADER}\n{ROWS}");
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        let rows: Vec<TsmemberRow> = reader.deserialize().collect::<Result<_, _>>().unwrap();
        let g = group(&rows);
        assert_eq!(g.len(), 3);
        assert!(g[2].batched && g[2].name == "time-ms / redis, 4 per arrival" && g[2].member == 0);
        assert_eq!(
            g[0].rates,
            vec![(100.0, vec![1.09]), (1000.0, vec![1.89, 1.91])]
        );
        assert_eq!(g[0].flat_out, vec![(45000.0, 51.0)]);
        assert!(g[1].caller_clock && g[1].member == 1);
        let ((x_lo, x_hi), (y_lo, y_hi)) = ranges(&g);
        assert_eq!((x_lo, x_hi), (50.0, 90000.0));
        assert!(y_lo < 1.0 && y_hi > 51.0);
    }
}
