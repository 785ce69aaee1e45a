//! The cost charts: Redis CPU per decision as a multiple of a plain GET (`cost.svg`), one bar
//! per strategy and variant, and decisions/s with Redis busy % (`cost_throughput.svg`), on a log
//! axis (pipelined GET is ten times anything else) grouped by pipeline depth; one dot per run
//! so run-to-run spread shows.

use super::COST;
use crate::charts::read_file;
use std::path::{Path, PathBuf};

use super::CostRow;
use crate::charts::bars::si;
use crate::charts::spec::{color, text, Anchor, Layer, Marker, Range, Rgb, Ticks, BLACK, RED};
use crate::charts::trials::{self, dash_spec, Category, Column, DashChart, TrialChart};
use crate::charts::{index_of, mean, write_spec, ChartError};

/// The baseline strategy: a single GET, the cheapest thing Redis can answer.
const BASELINE: &str = "get";
const GREY: Rgb = Rgb(127, 127, 127);

/// One bar: a (strategy, variant) pair and its per-run measurements, in CSV row order.
#[derive(Debug, PartialEq)]
pub(crate) struct Label {
    name: String,
    strategy: String,
    depth: usize,
    cpu: Vec<f64>,
    rate: Vec<f64>,
    busy: Vec<f64>,
}

/// "lua-log (L=100)" for a variant, the bare strategy otherwise.
fn label_name(strategy: &str, variant: &str) -> String {
    match variant {
        "" => strategy.to_string(),
        v => format!("{strategy} ({v})"),
    }
}

/// Groups rows into bars in first-appearance order; pure so it is unit-testable.
pub(crate) fn group(rows: &[CostRow]) -> Vec<Label> {
    let mut names: Vec<String> = Vec::new();
    let mut labels: Vec<Label> = Vec::new();
    for r in rows {
        let strategy = r.strategy.to_string();
        let i = index_of(&mut names, label_name(&strategy, &r.variant));
        if i == labels.len() {
            labels.push(Label {
                name: names[i].clone(),
                strategy,
                depth: r.depth,
                cpu: Vec::new(),
                rate: Vec::new(),
                busy: Vec::new(),
            });
        }
        labels[i].cpu.push(r.cpu_us_per_decision);
        labels[i].rate.push(r.decisions_per_s);
        labels[i].busy.push(r.redis_busy_pct);
    }
    labels
}

/// Mean µs/decision of the plain GET bar, if there is one with a usable value.
fn baseline(labels: &[Label]) -> Option<f64> {
    let get = labels.iter().find(|l| l.name == BASELINE)?;
    mean(&get.cpu).filter(|b| *b > 0.0)
}

/// Bar colour: grey for the baseline, otherwise one palette colour per strategy so variants
/// of one strategy share it.
fn colors<'a>(labels: &'a [Label]) -> Vec<Rgb> {
    let mut strategies: Vec<&'a str> = Vec::new();
    let pick = |l: &'a Label| match l.strategy.as_str() {
        BASELINE => GREY,
        s => color(index_of(&mut strategies, s)),
    };
    labels.iter().map(pick).collect()
}

/// Renders `dir/cost.csv` into `cost.svg/.png` and `cost_throughput.svg/.png`.
pub(crate) fn render(dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let labels = group(&read_file(&COST, dir)?);
    let colors = colors(&labels);
    let mut written = write_spec(dir, "cost", &trials::spec(relative_chart(&labels, &colors)))?;
    let throughput = throughput_chart(&labels, &colors);
    written.extend(write_spec(dir, "cost_throughput", &throughput)?);
    Ok(written)
}

/// µs/decision as a multiple of GET, or absolute µs when the CSV has no `get` rows.
fn relative_chart<'a>(labels: &[Label], colors: &[Rgb]) -> TrialChart<'a> {
    let base = baseline(labels);
    let scale = base.unwrap_or(1.0);
    let categories = labels.iter().zip(colors).map(|(l, &color)| {
        let dots: Vec<f64> = l
            .cpu
            .iter()
            .filter(|v| v.is_finite())
            .map(|v| v / scale)
            .collect();
        let column = Column::new(color, dots, |height| match base {
            Some(_) => format!("{height:.1}x"),
            None => format!("{height:.1}"),
        });
        Category::new(l.name.clone(), vec![column])
    });
    let (y_desc, reference, y_format): (_, _, fn(f64) -> String) = match base {
        Some(_) => ("Redis CPU per decision (x GET)", Some((1.0, "GET")), |v| {
            format!("{}x", si(v))
        }),
        None => (
            "Redis CPU µs per decision (absolute: no `get` rows)",
            None,
            si,
        ),
    };
    let mut legend = vec![(Marker::Dot(BLACK), "one run")];
    if reference.is_some() {
        legend.push((Marker::Dashed(RED), "GET = 1x"));
    }
    TrialChart {
        title: match base {
            Some(_) => "cost: Redis CPU per decision relative to GET",
            None => "cost: Redis CPU per decision (no GET baseline)",
        },
        subtitle: match base {
            Some(b) => format!(
                "bar and number = mean over runs; each run's µs/decision divided by GET's mean ({b:.1} µs)"
            ),
            None => "bar and number = mean over runs (µs); no `get` baseline in the CSV".to_string(),
        },
        x_desc: "strategy (variant)",
        y_desc,
        y_format,
        legend,
        reference,
        categories: categories.collect(),
    }
}

/// A label's decisions/s that a log axis can show.
fn runs(l: &Label) -> impl Iterator<Item = f64> + '_ {
    l.rate.iter().copied().filter(|v| v.is_finite() && *v > 0.0)
}

/// Decisions/s per strategy on a log axis, grouped by pipeline depth: each run a dot, the mean
/// a dash, the mean Redis busy % under the lowest run.
fn throughput_chart(labels: &[Label], colors: &[Rgb]) -> crate::charts::spec::Chart {
    let lowest = |l: &Label| runs(l).fold(f64::INFINITY, f64::min);
    let (lo, hi) = labels
        .iter()
        .flat_map(runs)
        .fold((f64::INFINITY, 0.0), |(lo, hi), v| {
            (f64::min(lo, v), f64::max(hi, v))
        });
    let (lo, hi) = if lo < hi {
        (lo / 2.0, hi * 1.5)
    } else {
        (1.0, 10.0)
    };
    let mut marks: Vec<Layer> = Vec::new();
    for (i, l) in labels.iter().enumerate() {
        if let (Some(busy), true) = (mean(&l.busy), lowest(l).is_finite()) {
            let note = format!("{busy:.0}% busy");
            marks.push(text(
                (i as f64, lowest(l)),
                (0, 10),
                &note,
                GREY,
                Anchor::CenterTop,
            ));
        }
        if i == 0 || labels[i - 1].depth != l.depth {
            let group = format!("pipeline depth {}", l.depth);
            marks.push(text(
                (i as f64 - 0.45, hi),
                (0, 4),
                &group,
                BLACK,
                Anchor::LeftTop,
            ));
        }
    }
    let categories = labels.iter().zip(colors).map(|(l, &color)| {
        let column = Column::new(color, runs(l).collect(), |_| String::new());
        (
            Category::new(l.name.clone(), vec![column]),
            l.depth.to_string(),
        )
    });
    dash_spec(DashChart {
        size: (1200, 700),
        title: "cost: decisions/s per strategy (log scale), by pipeline depth".into(),
        x_desc: "strategy (variant); text under the runs = mean Redis busy % (100% = its one core)"
            .into(),
        y_desc: "decisions/s (log)".into(),
        y: Range::Log(lo, hi),
        y_ticks: Ticks::Auto(10, si),
        y_label_px: 70,
        series: vec![("one run (colour: strategy)".into(), BLACK)],
        legend_extra: Vec::new(),
        categories: categories.collect(),
        marks,
        over: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::csv_dir;
    use std::fs;

    const HEADER: &str = "strategy,variant,run,depth,client,clients,keys,limit,window_ms,log_entries_per_key,\
log_entries_min,duration_s,decisions,decisions_per_s,allowed,denied,errors,redis_cpu_us,cpu_us_per_decision,\
redis_busy_pct,busiest_command,usec_per_call,command_usec_per_decision,client_cpu_s";
    const ROWS: &str = "\
get,,0,1,redis-rs,8,1,100,1000,,,1,1000,90000,1000,0,0,8000,8.0,72,get,7.9,7.9,1
get,,1,1,redis-rs,8,1,100,1000,,,1,1000,91000,1000,0,0,8200,8.2,73,get,8.1,8.1,1
lua-bucket,,0,1,redis-rs,8,1,100,1000,,,1,1000,40000,900,100,0,24000,24.0,96,get,23.5,23.5,1
lua-log,L=100,0,1,redis-rs,8,1,100,1000,100,100,1,1000,20000,900,100,0,41000,41.0,99,get,40.2,40.2,1
lua-log,L=100,1,1,redis-rs,8,1,100,1000,100,99,1,1000,21000,900,100,0,40000,40.0,99,get,39.8,39.8,1
";

    #[test]
    fn renders_both_charts_with_labels() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = csv_dir(
            tmp.path(),
            "cost",
            COST.name(),
            &format!("{HEADER}\n{ROWS}"),
        );
        let paths = render(&dir).unwrap();
        let names = [
            "cost.svg",
            "cost.png",
            "cost_throughput.svg",
            "cost_throughput.png",
        ];
        assert_eq!(paths, names.map(|n| dir.join(n)));
        assert!(paths.iter().all(|p| p.is_file()));
        let svg = fs::read_to_string(dir.join("cost.svg")).unwrap();
        for s in ["get", "lua-bucket", "lua-log", "(L=100)", "x GET"] {
            assert!(svg.contains(s), "cost.svg lacks {s}");
        }
        let svg = fs::read_to_string(dir.join("cost_throughput.svg")).unwrap();
        assert!(svg.contains("99% busy") && svg.contains("lua-bucket"));
    }

    #[test]
    fn header_only_is_empty_and_missing_is_missing() {
        let tmp = tempfile::tempdir().unwrap();
        let err = render(&tmp.path().join("cost")).unwrap_err();
        assert!(matches!(err, ChartError::Missing(_)), "{err}");
        let dir = csv_dir(tmp.path(), "cost", COST.name(), &format!("{HEADER}\n"));
        let err = render(&dir).unwrap_err();
        assert!(matches!(err, ChartError::Empty(_)), "{err}");
    }

    #[test]
    fn ratios_are_relative_to_mean_get_and_absolute_without_get() {
        let csv = format!("{HEADER}\n{ROWS}");
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        let rows: Vec<CostRow> = reader.deserialize().collect::<Result<_, _>>().unwrap();
        let labels = group(&rows);
        let names: Vec<&str> = labels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["get", "lua-bucket", "lua-log (L=100)"]);
        let chart = relative_chart(&labels, &colors(&labels));
        let heights: Vec<f64> = (chart.categories.iter())
            .map(|k| k.columns[0].mean)
            .collect();
        assert!((heights[0] - 1.0).abs() < 1e-9 && (heights[2] - 40.5 / 8.1).abs() < 1e-9);
        let no_get = relative_chart(&labels[1..], &colors(&labels[1..]));
        assert!(no_get.y_desc.contains("absolute") && no_get.reference.is_none());
        assert!((no_get.categories[0].columns[0].mean - 24.0).abs() < 1e-9);
    }
}
