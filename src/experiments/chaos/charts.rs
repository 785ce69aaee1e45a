//! The chaos charts, from its CSVs alone. `chaos.svg`: per store timeout of the correct client,
//! served and dropped requests per second (offered dashed) above p99 latency (log ms), the fault
//! windows shaded and named: the 5 s pool stops serving, the 30 ms one does not; where an idle
//! service ran beside it, the workers each kept busy. `pool.svg`: the pool drill, its connections
//! failing one at a time. `chaos_flaws.svg`: the misconfigured clients beside the correct one at
//! the same timeout: p99 of the setup-only timeout against the correct client's, degraded answers against the
//! fail-open counter of the unrecorded client, what the never-reconnecting client answers after
//! the reset, the denials of the client whose error path denies against the correct one's, and
//! what the fail-closed client rejects against what the correct one admits. `chaos_limiters.svg`
//! (custom limiters only): each one's answers by Redis and by policy beside the built-in bucket's
//! answers by policy. `after.svg`: the
//! after-drill check per client, allowed / denied / admitted by policy of its 300 requests, the
//! limit as a red line.

use std::path::{Path, PathBuf};

use super::report::BESIDE;
use super::{AfterRow, BinRow, Drill, DrillRow, PoolBinRow, AFTERS, BINS, DRILLS, POOL_BINS};
use crate::charts::axes::log_points;
use crate::charts::bars::{self, si, BarChart};
use crate::charts::spec::{
    color, dots, path, text, Anchor, Axis, Bar, Chart, Layer, Marker, Plot, Range, Shape, Slot,
    Ticks, BLACK,
};
use crate::charts::{read_file, text_width_px, write_spec, ChartError};

const Y_LABEL_PX: u32 = 80;
/// p99 drawn no lower than this (ms) on the log axis.
const FLOOR_MS: f64 = 0.1;

/// One line of a panel: name, colour, dashed, (t s, y) per bin (None: nothing to show, a gap).
struct Line {
    name: String,
    color: crate::charts::spec::Rgb,
    dashed: bool,
    points: Vec<(f64, Option<f64>)>,
}

impl Line {
    /// The runs of consecutive points with a value.
    fn segments(&self) -> Vec<Vec<(f64, f64)>> {
        let mut out: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
        for &(x, y) in &self.points {
            match (y, out.last_mut()) {
                (Some(y), Some(seg)) => seg.push((x, y)),
                (None, Some(seg)) if !seg.is_empty() => out.push(Vec::new()),
                _ => {}
            }
        }
        out.retain(|s| !s.is_empty());
        out
    }
}

/// (drill, start s, end s) of one client's windows, from the switch instants (drills.csv).
fn windows(drills: &[DrillRow], client: &str, timeout_ms: u64) -> Vec<(Drill, f64, f64)> {
    (drills.iter())
        .filter(|d| d.client == client && d.timeout_ms == timeout_ms)
        .map(|d| (d.drill, d.start_ms / 1e3, d.end_ms / 1e3))
        .collect()
}

/// Rows of one (client, timeout), in time order.
fn of<'a>(rows: &'a [BinRow], client: &str, timeout_ms: u64) -> Vec<&'a BinRow> {
    let mut out: Vec<&BinRow> = (rows.iter())
        .filter(|r| r.client == client && r.timeout_ms == timeout_ms)
        .collect();
    out.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    out
}

/// The middle of a bin, where its value is drawn.
fn mid(r: &BinRow) -> f64 {
    r.t_s + r.bin_ms as f64 / 2e3
}

fn per_s(rows: &[&BinRow], f: fn(&BinRow) -> f64) -> Vec<(f64, Option<f64>)> {
    let rate = |r: &BinRow| 1e3 / r.bin_ms.max(1) as f64;
    rows.iter()
        .map(|r| (mid(r), Some(f(r) * rate(r))))
        .collect()
}

/// p99 per bin, log10 ms; a bin that served nothing is a gap.
fn p99_log(rows: &[&BinRow]) -> Vec<(f64, Option<f64>)> {
    (rows.iter())
        .map(|r| (mid(r), r.p99_ms.map(|p| p.max(FLOOR_MS).log10())))
        .collect()
}

/// A panel over time with the fault windows shaded; `log` plots y as log10 values.
fn panel(
    title: &str,
    y_desc: &str,
    lines: &[Line],
    shaded: &[(Drill, f64, f64)],
    log: bool,
) -> Plot {
    let xs = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let x_hi = shaded.iter().map(|w| w.2).chain(xs).fold(1.0, f64::max);
    let ys: Vec<f64> = lines
        .iter()
        .flat_map(|l| l.points.iter().filter_map(|p| p.1))
        .collect();
    let (lo, hi) = ys
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &y| (a.min(y), b.max(y)));
    let (y_lo, y_hi, ticks) = match log {
        true => {
            let (lo, hi) = (lo.min(0.0) - 0.1, hi.max(1.0) + 0.5);
            let (values, _) = log_points(10f64.powf(lo), 10f64.powf(hi));
            let t = values.iter().map(|v| (v.log10(), format!("{v}"))).collect();
            (lo, hi, Ticks::Hand(t))
        }
        false => (0.0, hi.max(1.0) * 1.2, Ticks::Auto(6, si)),
    };
    let mut under = Vec::new();
    for (drill, start, end) in shaded.iter().filter(|w| w.0.is_fault()) {
        under.push(Layer::new(Shape::Rect([(*start, y_lo), (*end, y_hi)], 0), BLACK).faded(0.08));
        under.push(text(
            ((start + end) / 2.0, y_hi),
            (0, 4),
            &drill.to_string(),
            BLACK,
            Anchor::CenterTop,
        ));
    }
    let dy = if name_clashes(title, shaded, x_hi) {
        24
    } else {
        4
    };
    under.push(text((0.0, y_hi), (6, dy), title, BLACK, Anchor::LeftTop));
    let layers = (lines.iter())
        .flat_map(|l| l.segments().into_iter().map(move |seg| (seg, l)))
        // A lone point (one bin with a value between gaps) is a dot: a path of one point is
        // invisible.
        .map(|(seg, l)| match seg.len() {
            1 => dots(seg, l.color, 3),
            _ => path(seg, l.color, 2, l.dashed.then_some((6, 4))),
        })
        .collect();
    let mut x = Axis::new(
        "s after traffic started",
        Range::Linear(0.0, x_hi),
        Ticks::Auto(10, seconds),
        40,
    );
    x.grid = false;
    let y = Axis::new(y_desc, Range::Linear(y_lo, y_hi), ticks, Y_LABEL_PX);
    let mut plot = Plot::new([10, 30, 0, 10], x, y, layers);
    (plot.font_px, plot.under) = ((13, 15), under);
    plot
}

/// A time tick: whole seconds plain, others to a tenth (a quick run's drills last seconds).
fn seconds(v: f64) -> String {
    match (v - v.round()).abs() < 1e-9 {
        true => format!("{v:.0}"),
        false => format!("{v:.1}"),
    }
}

/// Whether the panel's name, top left, would run into the first shaded drill's name centred
/// over its window (measured widths on the plot's width); then the panel's name goes a row lower.
fn name_clashes(title: &str, shaded: &[(Drill, f64, f64)], x_hi: f64) -> bool {
    let plot_px = f64::from(1200 - 30 - 10 - Y_LABEL_PX);
    let title_end = 6.0 + text_width_px(title, 14.0);
    let first = shaded.iter().find(|w| w.0.is_fault());
    first.is_some_and(|(drill, start, end)| {
        let half = text_width_px(&drill.to_string(), 14.0) / 2.0;
        (start + end) / 2.0 / x_hi * plot_px - half < title_end + 6.0
    })
}

fn line(name: &str, i: usize, dashed: bool, points: Vec<(f64, Option<f64>)>) -> Line {
    let (name, color) = (name.to_string(), color(i));
    Line {
        name,
        color,
        dashed,
        points,
    }
}

fn legend(lines: &[Line]) -> Vec<(Marker, String)> {
    (lines.iter())
        .map(|l| match l.dashed {
            true => (Marker::Dashed(l.color), l.name.clone()),
            false => (Marker::Line(l.color), l.name.clone()),
        })
        .collect()
}

/// The correct client's panels: per timeout, rates then p99.
fn correct_chart(rows: &[BinRow], drills: &[DrillRow]) -> Option<Chart> {
    let mut timeouts: Vec<u64> = (rows.iter())
        .filter(|r| r.client == "correct")
        .map(|r| r.timeout_ms)
        .collect();
    timeouts.sort_unstable_by(|a, b| b.cmp(a));
    timeouts.dedup();
    let mut plots = Vec::new();
    let mut names = Vec::new();
    for t in &timeouts {
        let rs = of(rows, "correct", *t);
        let shaded = windows(drills, "correct", *t);
        let rates = [
            line("served /s", 0, false, per_s(&rs, |r| r.served as f64)),
            line(
                "dropped /s (no worker in time)",
                1,
                false,
                per_s(&rs, |r| r.dropped as f64),
            ),
            line("offered /s", 7, true, per_s(&rs, |r| r.offered as f64)),
        ];
        let p99 = [line("p99 ms", 2, false, p99_log(&rs))];
        let title = format!("store timeout {t} ms");
        plots.push(panel(&title, "requests /s", &rates, &shaded, false));
        plots.push(panel(&title, "p99 ms (log)", &p99, &shaded, true));
        if names.is_empty() {
            names = legend(&rates).into_iter().chain(legend(&p99)).collect();
        }
        let idle = of(rows, "idle", *t);
        if !idle.is_empty() {
            let busy = |rs: &[&BinRow]| rs.iter().map(|r| (mid(r), Some(r.busy_mean))).collect();
            let lines = [
                line("loaded service: workers busy (mean)", 3, false, busy(&rs)),
                line("idle service: workers busy (mean)", 9, true, busy(&idle)),
            ];
            let title = format!("the same drills on an idle service, store timeout {t} ms");
            plots.push(panel(&title, "workers busy", &lines, &shaded, false));
            names.extend(legend(&lines));
        }
    }
    if plots.is_empty() {
        return None;
    }
    let note = "correct client (whole-call timeout, fail-open, counted); fault windows shaded; \
                latency from the intended start";
    let title =
        "chaos: a 40-worker service through a store blackhole and +latency, per store timeout";
    Some(
        Chart::new((1200, 280 * plots.len() as u32 + 110), title, note, plots)
            .legend(10 + Y_LABEL_PX as i32, names),
    )
}

/// What the flaws chart draws of one misconfigured client (`rows`) at timeout `t`, beside the
/// correct client: the panel's title, its y axis, its lines, and whether y is log10.
fn flaw_panel(client: &str, rows: &[&BinRow], correct: &[&BinRow], t: u64) -> Option<SidePanel> {
    let degraded = |r: &BinRow| r.degraded as f64;
    let denied = |r: &BinRow| r.denied as f64;
    Some(match client {
        "setup-timeout-only" => (
            format!("timeout covers connecting only ({t} ms)"),
            "p99 ms (log)",
            vec![
                line("setup-timeout-only p99", 3, false, p99_log(rows)),
                line("correct p99", 2, true, p99_log(correct)),
            ],
            true,
        ),
        "unrecorded" => (
            "fail-open path records nothing".into(),
            "requests /s",
            vec![
                line(
                    "unrecorded: answered by policy /s",
                    4,
                    false,
                    per_s(rows, degraded),
                ),
                line(
                    "unrecorded: its fail-open counter /s",
                    5,
                    true,
                    per_s(rows, |r| r.fail_open_counter as f64),
                ),
            ],
            false,
        ),
        "never-reconnects" => (
            "client never reconnects".into(),
            "requests /s",
            vec![
                line(
                    "never-reconnects: answered by Redis /s",
                    6,
                    false,
                    per_s(rows, |r| (r.allowed + r.denied) as f64),
                ),
                line(
                    "never-reconnects: answered by policy /s",
                    8,
                    true,
                    per_s(rows, degraded),
                ),
            ],
            false,
        ),
        "denies-on-error" => (
            "error path answers a denial (configured fail-open)".into(),
            "requests /s",
            vec![
                line("denies-on-error: denied /s", 7, false, per_s(rows, denied)),
                line("correct: denied /s", 2, true, per_s(correct, denied)),
            ],
            false,
        ),
        "fail-closed" => (
            "configured fail-closed: the policy rejects".into(),
            "requests /s",
            vec![
                line(
                    "fail-closed: rejected by policy /s",
                    10,
                    false,
                    per_s(rows, degraded),
                ),
                line(
                    "correct (fail-open): admitted by policy /s",
                    2,
                    true,
                    per_s(correct, degraded),
                ),
            ],
            false,
        ),
        _ => return None,
    })
}

/// The misconfigured clients and the fail-closed one (the seed's side clients).
const SIDE: [&str; 5] = [
    "setup-timeout-only",
    "unrecorded",
    "never-reconnects",
    "denies-on-error",
    "fail-closed",
];

/// What one panel of a side chart draws: its title, its y axis, its lines, whether y is log10.
type SidePanel = (String, &'static str, Vec<Line>, bool);

/// The misconfigured clients and the fail-closed one beside the correct one at their timeout, a
/// panel each.
fn flaws_chart(rows: &[BinRow], drills: &[DrillRow]) -> Option<Chart> {
    let note =
        "the seed's misconfigurations and a fail-closed client, each its own service through the \
                same drills";
    side_chart(rows, drills, (&SIDE, "correct"), flaw_panel, note, |t| {
        format!("chaos: misconfigured clients and a fail-closed one at a {t} ms timeout")
    })
}

/// Each custom limiter (`--limiter`: a script, or a library's own client through the proxy) beside
/// the built-in bucket's client of the same sequence, a panel each.
fn limiters_chart(rows: &[BinRow], drills: &[DrillRow]) -> Option<Chart> {
    let mut customs: Vec<&str> = Vec::new();
    for r in rows {
        let known = ["correct", "idle", BESIDE].contains(&r.client.as_str())
            || SIDE.contains(&r.client.as_str());
        if !known && !customs.contains(&r.client.as_str()) {
            customs.push(&r.client);
        }
    }
    let note = "each custom limiter its own service through the same drills, fail-open, counted";
    side_chart(rows, drills, (&customs, BESIDE), limiter_panel, note, |t| {
        format!("chaos: custom limiters beside the built-in bucket at a {t} ms timeout")
    })
}

/// What a custom limiter's service had answered by Redis and by policy, beside the correct
/// client's answers by policy.
fn limiter_panel(client: &str, rows: &[&BinRow], correct: &[&BinRow], t: u64) -> Option<SidePanel> {
    let by_redis = |r: &BinRow| (r.allowed + r.denied) as f64;
    let by_policy = |r: &BinRow| r.degraded as f64;
    let lines = vec![
        line("answered by Redis /s", 6, false, per_s(rows, by_redis)),
        line("answered by policy /s", 8, false, per_s(rows, by_policy)),
        line(
            "built-in bucket: answered by policy /s",
            2,
            true,
            per_s(correct, by_policy),
        ),
    ];
    Some((
        format!("{client}, fail-open, {t} ms timeout"),
        "requests /s",
        lines,
        false,
    ))
}

/// A chart of `clients` (those that ran) beside the client `reference` at their timeout, a panel
/// each from `panel_of`.
fn side_chart(
    rows: &[BinRow],
    drills: &[DrillRow],
    (clients, reference): (&[&str], &str),
    panel_of: fn(&str, &[&BinRow], &[&BinRow], u64) -> Option<SidePanel>,
    note: &str,
    title: impl Fn(u64) -> String,
) -> Option<Chart> {
    // The correct client's own sequences (the idle service's too) run longer drills: the correct
    // client drawn over the side clients' span.
    let beside = |r: &&BinRow| clients.contains(&r.client.as_str());
    let first = rows.iter().find(beside)?;
    let t = first.timeout_ms;
    let span = (rows.iter().filter(beside)).fold(0.0, |hi, r| mid(r).max(hi));
    let mut correct = of(rows, reference, t);
    correct.retain(|r| mid(r) <= span);
    let (mut plots, mut names) = (Vec::new(), Vec::new());
    for &client in clients {
        let mine = of(rows, client, t);
        if mine.is_empty() {
            continue;
        }
        if let Some((title, y_desc, lines, log)) = panel_of(client, &mine, &correct, t) {
            plots.push(panel(
                &title,
                y_desc,
                &lines,
                &windows(drills, client, t),
                log,
            ));
            // A line every panel draws alike is named once.
            for entry in legend(&lines) {
                if !names.iter().any(|(_, name)| *name == entry.1) {
                    names.push(entry);
                }
            }
        }
    }
    if plots.is_empty() {
        return None;
    }
    Some(
        Chart::new(
            (1200, 280 * plots.len() as u32 + 130),
            title(t),
            note,
            plots,
        )
        .legend(10 + Y_LABEL_PX as i32, names),
    )
}

fn after_chart(rows: &[AfterRow]) -> Chart {
    let slots = (rows.iter())
        .map(|r| {
            let label = format!("{} ({} ms)", r.client, r.timeout_ms);
            let bars = vec![
                Bar::new(color(0), r.allowed as f64, vec![], si(r.allowed as f64)),
                Bar::new(color(1), r.denied as f64, vec![], si(r.denied as f64)),
                Bar::new(
                    color(4),
                    r.degraded_allowed as f64,
                    vec![],
                    si(r.degraded_allowed as f64),
                ),
            ];
            (label, Slot(bars, String::new()))
        })
        .collect();
    let capacity = rows.first().map_or(0.0, |r| r.capacity as f64);
    let requests = rows.first().map_or(0, |r| r.requests);
    let chart = BarChart {
        title: "chaos: after the drill, is the limit enforced again?",
        subtitle: format!(
            "{requests} checks one after another on one fresh key, healed; an enforcing limiter \
             allows its capacity ({capacity}) plus what refills while they run"
        ),
        x_desc: "client (store timeout)",
        y_desc: "requests",
        y_format: si,
        legend: vec![
            (Marker::Dot(color(0)), "allowed by Redis"),
            (Marker::Dot(color(1)), "denied by Redis"),
            (Marker::Dot(color(4)), "allowed by policy (fail-open)"),
        ],
        reference: Some((capacity, "capacity")),
        slots,
    };
    bars::spec(chart)
}

/// The pool drill over time: the share of checks answered by policy beside the connections that
/// failed and those the pool had replaced since the fault, as shares of the pool.
fn pool_chart(rows: &[PoolBinRow]) -> Option<Chart> {
    let first = rows.first()?;
    let mut shaded: Vec<(Drill, f64, f64)> = Vec::new();
    for r in rows {
        let end = r.t_s + r.bin_ms / 1e3;
        match shaded.last_mut() {
            Some(w) if w.0 == r.drill => w.2 = end,
            _ => shaded.push((r.drill, r.t_s, end)),
        }
    }
    let at = |r: &PoolBinRow| r.t_s + r.bin_ms / 2e3;
    let of_pool = |n: u64, r: &PoolBinRow| Some(100.0 * n as f64 / r.connections.max(1) as f64);
    let lines = [
        line(
            "checks answered by policy %",
            0,
            false,
            rows.iter()
                .map(|r| (at(r), Some(100.0 * r.by_policy_fraction)))
                .collect(),
        ),
        line(
            "connections failing, % of the pool",
            1,
            false,
            rows.iter()
                .map(|r| (at(r), of_pool(r.connections_failing, r)))
                .collect(),
        ),
        line(
            "connections replaced since new ones were refused, % of the pool",
            7,
            true,
            (rows.iter())
                .map(|r| match r.drill {
                    Drill::Refused => (at(r), of_pool(r.connections_replaced, r)),
                    _ => (at(r), None),
                })
                .collect(),
        ),
    ];
    let title = format!("a pool of {} connections", first.connections);
    let plot = panel(&title, "%", &lines, &shaded, false);
    let note =
        "new connections refused, open ones untouched (shaded); each connection replaced at its \
                first check-out past its maximum age; fail-open";
    let chart_title = "chaos: a connection pool hides an outage until it turns over";
    Some(
        Chart::new((1200, 390), chart_title, note, vec![plot])
            .legend(10 + Y_LABEL_PX as i32, legend(&lines)),
    )
}

/// Renders chaos.svg, chaos_flaws.svg (when misconfigured clients ran), after.svg and pool.svg (when
/// the pool drill ran); the fault windows come from drills.csv.
pub(crate) fn render(dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let rows = read_file(&BINS, dir)?;
    let drills = read_file(&DRILLS, dir)?;
    let mut written = Vec::new();
    if let Some(chart) = correct_chart(&rows, &drills) {
        written.extend(write_spec(dir, "chaos", &chart)?);
    }
    if let Some(chart) = flaws_chart(&rows, &drills) {
        written.extend(write_spec(dir, "chaos_flaws", &chart)?);
    }
    if let Some(chart) = limiters_chart(&rows, &drills) {
        written.extend(write_spec(dir, "chaos_limiters", &chart)?);
    }
    if AFTERS.path(dir).is_file() {
        let after = read_file(&AFTERS, dir)?;
        written.extend(write_spec(dir, "after", &after_chart(&after))?);
    }
    if POOL_BINS.path(dir).is_file() {
        if let Some(chart) = pool_chart(&read_file(&POOL_BINS, dir)?) {
            written.extend(write_spec(dir, "pool", &chart)?);
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::csv_dir;

    const CSV: &str = "\
client,timeout_ms,drill,t_s,bin_ms,offered,served,dropped,p50_ms,p99_ms,max_ms,allowed,denied,degraded,\
fail_open_counter,busy_max,busy_mean,queue_max
correct,5000,baseline,0,500,400,400,0,5.3,6.1,7,300,100,0,0,6,4.2,0
correct,5000,blackhole,0.5,500,400,40,300,2000,4900,5000,0,0,40,0,40,40,200
correct,30,baseline,0,500,400,400,0,5.3,6.1,7,300,100,0,0,6,4.2,0
idle,5000,blackhole,0.5,500,1,0,0,,,,0,0,0,0,1,0.8,0
correct,30,blackhole,0.5,500,400,400,0,35,36,37,0,0,400,400,30,28,3
unrecorded,30,blackhole,0.5,500,400,400,0,35,36,37,0,0,400,0,30,28,3
setup-timeout-only,30,latency,0.5,500,400,60,300,600,900,950,50,10,0,0,40,40,200
never-reconnects,30,reset,0.5,500,400,400,0,5,6,7,0,0,400,400,6,4,0
";
    const AFTER: &str = "\
client,timeout_ms,requests,capacity,refill_per_sec,elapsed_ms,max_allowed,allowed,denied,degraded_allowed,\
degraded_denied,reconnects,enforced
correct,30,300,20,6,80,21,20,280,0,0,0,true
never-reconnects,30,300,20,6,10,21,0,0,300,0,0,false
";

    const POOL_CSV: &str = "\
drill,bin,last_in_window,t_s,bin_ms,connections,checks,by_policy,by_policy_fraction,connections_failing,\
connections_replaced
baseline,0,true,0,500,8,100,0,0,0,1
refused,0,false,0.5,500,8,100,10,0.1,1,1
refused,1,true,1,500,8,100,100,1,8,8
after-refused,0,true,1.5,500,8,100,0,0,0,0
";

    /// drills.csv for every (client, timeout) of CSV: baseline 0-0.5 s, then its second drill.
    fn drills_csv() -> String {
        let mut w = csv::Writer::from_writer(Vec::new());
        let mut reader = csv::Reader::from_reader(CSV.as_bytes());
        let rows: Vec<BinRow> = reader.deserialize().collect::<Result<_, _>>().unwrap();
        for r in rows.iter().filter(|r| r.drill != Drill::Baseline) {
            for (drill, start_ms, end_ms) in
                [(Drill::Baseline, 0.0, 510.0), (r.drill, 510.0, 1000.0)]
            {
                let row = super::super::tally::tests_row(
                    &r.client,
                    r.timeout_ms,
                    drill,
                    start_ms,
                    end_ms,
                );
                w.serialize(row).unwrap();
            }
        }
        String::from_utf8(w.into_inner().unwrap()).unwrap()
    }

    #[test]
    fn windows_come_from_the_switch_instants_and_rates_are_per_second() {
        let mut reader = csv::Reader::from_reader(CSV.as_bytes());
        let rows: Vec<BinRow> = reader.deserialize().collect::<Result<_, _>>().unwrap();
        let text = drills_csv();
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let drills: Vec<DrillRow> = reader.deserialize().collect::<Result<_, _>>().unwrap();
        let w = windows(&drills, "correct", 5000);
        assert_eq!(
            w,
            [(Drill::Baseline, 0.0, 0.51), (Drill::Blackhole, 0.51, 1.0)]
        );
        let rs = of(&rows, "correct", 5000);
        assert_eq!(
            per_s(&rs, |r| r.served as f64),
            [(0.25, Some(800.0)), (0.75, Some(80.0))]
        );
        let gap = line(
            "p99",
            0,
            false,
            vec![
                (0.0, Some(1.0)),
                (1.0, None),
                (2.0, Some(2.0)),
                (3.0, Some(3.0)),
            ],
        );
        assert_eq!(
            gap.segments(),
            [vec![(0.0, 1.0)], vec![(2.0, 2.0), (3.0, 3.0)]]
        );
    }

    #[test]
    fn renders_every_chart_with_its_windows_and_clients() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = csv_dir(tmp.path(), "chaos", BINS.name(), CSV);
        std::fs::write(AFTERS.path(&dir), AFTER).unwrap();
        std::fs::write(DRILLS.path(&dir), drills_csv()).unwrap();
        std::fs::write(POOL_BINS.path(&dir), POOL_CSV).unwrap();
        let paths = render(&dir).unwrap();
        let names: Vec<String> = (paths.iter())
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        let want = [
            "chaos.svg",
            "chaos.png",
            "chaos_flaws.svg",
            "chaos_flaws.png",
            "after.svg",
            "after.png",
            "pool.svg",
            "pool.png",
        ];
        assert_eq!(names, want);
        let svg = std::fs::read_to_string(dir.join("chaos.svg")).unwrap();
        for s in [
            "store timeout 5000 ms",
            "store timeout 30 ms",
            "blackhole",
            "dropped /s",
            "idle service: workers busy",
        ] {
            assert!(svg.contains(s), "chaos.svg lacks {s}");
        }
        let flaws = std::fs::read_to_string(dir.join("chaos_flaws.svg")).unwrap();
        for s in [
            "setup-timeout-only p99",
            "its fail-open counter",
            "never-reconnects",
        ] {
            assert!(flaws.contains(s), "chaos_flaws.svg lacks {s}");
        }
        let after = std::fs::read_to_string(dir.join("after.svg")).unwrap();
        assert!(after.contains("never-reconnects") && after.contains("(30 ms)"));
        let pool = std::fs::read_to_string(dir.join("pool.svg")).unwrap();
        assert!(pool.contains("a pool of 8 connections") && pool.contains("refused"));
    }
}
