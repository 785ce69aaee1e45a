//! pods' summary for REPORT.md: per strategy, pods, offered rate and round trip, what reached
//! the partner per second (mean, lowest, highest of the measured seconds), beside what the pods
//! decided, the seed's alert rule, the peak second and what the runs cost Redis; then a closing
//! note setting the measured figures beside the seed's (read from analysis/claims.toml).

use super::RUNS;
use super::{PodStrategy, PodsRunRow};
use crate::analysis::claims;
use crate::analysis::table::summary_table;
use crate::analysis::table::{short, Key, Stat};
use crate::analysis::AnalysisError;
use crate::experiments::limiters::{self, Verdict};
use crate::limiter::Strategy;
use crate::record::csv_text;
use std::fmt::Write as _;
use std::path::Path;

/// The runs table and the closing note.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let keys: [Key<PodsRunRow>; 6] = [
        ("strategy", |r| csv_text(&r.strategy)),
        ("pods", |r| r.pods.to_string()),
        ("offered /s", |r| r.offered_rps.to_string()),
        ("+rtt ms", |r| r.rtt_ms.to_string()),
        ("work ms", |r| r.work_ms.to_string()),
        ("clock spread ms", |r| r.skew_ms.to_string()),
    ];
    let stats: [Stat<PodsRunRow>; 13] = [
        ("reached /s", |r| Some(r.reached_per_s)),
        ("lowest s", |r| Some(r.reached_min_per_s as f64)),
        ("highest s", |r| Some(r.reached_max_per_s as f64)),
        ("decided /s", |r| Some(r.decided_per_s)),
        ("offered x rtt", |r| Some(r.offered_within_rtt)),
        ("alert % of s", |r| Some(r.alert_pct)),
        ("peak s", |r| Some(r.peak_reached as f64)),
        ("sent - received", |r| Some(r.lost as f64)),
        ("p99 ms", |r| Some(r.p99_ms)),
        ("check send to decision, mean ms", |r| {
            Some(r.decide_mean_ms)
        }),
        ("most open", |r| Some(r.max_open as f64)),
        ("Redis busy %", |r| Some(r.redis_busy_pct)),
        ("µs / call", |r| Some(r.usec_per_call)),
    ];
    let runs = RUNS.read(dir)?;
    let mut out = summary_table(&runs, &keys, &stats);
    out.push_str(&closing_note(&runs));
    Ok(out)
}

/// What reached the partner for each custom limiter: its run with the highest second (the most
/// that got through in one second, the limit beside it), the run's mean and where it ran.
pub fn verdicts(dir: &Path) -> Result<Vec<Verdict>, AnalysisError> {
    let runs = RUNS.read(dir)?;
    let mut out = Vec::new();
    for l in limiters::recorded(dir)? {
        let mine = (runs.iter()).filter(|r| r.strategy == PodStrategy::Redis(l.strategy));
        let Some(worst) = mine.max_by_key(|r| r.reached_max_per_s) else {
            continue;
        };
        let rtt = match worst.rtt_ms > 0.0 {
            true => format!(", +{} ms round trip", short(worst.rtt_ms)),
            false => String::new(),
        };
        out.push(Verdict {
            limiter: l.strategy.to_string(),
            aspect: "pods: reached the partner per second",
            value: format!(
                "highest second {} on a limit of {}/s (mean {}/s) at {} pods, {}/s offered{rtt}",
                worst.reached_max_per_s,
                worst.limit,
                short(worst.reached_per_s),
                worst.pods,
                short(worst.offered_rps)
            ),
        });
    }
    Ok(out)
}

/// What the seed claimed (from the claims file) beside what these rows measured.
fn closing_note(runs: &[PodsRunRow]) -> String {
    let all = claims::all().unwrap_or_default();
    let seed = |id: &str| -> String {
        let Some(c) = all.iter().find(|c| c.id == id) else {
            return "?".into();
        };
        match c.range {
            Some([lo, hi]) => format!("{}-{}", short(lo), short(hi)),
            None => short(c.published),
        }
    };
    let naive = PodStrategy::Redis(Strategy::NaiveWindow);
    let of = |s: PodStrategy, pods: u32, rtt: f64| -> Vec<&PodsRunRow> {
        (runs.iter())
            .filter(|r| r.strategy == s && r.pods == pods && r.rtt_ms == rtt)
            .filter(|r| r.offered_rps == 400.0 && r.work_ms == 0.0 && r.skew_ms == 0.0)
            .collect()
    };
    let span = |rows: &[&PodsRunRow]| -> String {
        let mean = rows.iter().map(|r| r.reached_per_s).sum::<f64>() / rows.len().max(1) as f64;
        let lo = rows.iter().map(|r| r.reached_min_per_s).min().unwrap_or(0);
        let hi = rows.iter().map(|r| r.reached_max_per_s).max().unwrap_or(0);
        format!("{}/s (seconds {lo}-{hi})", short(mean))
    };
    let mut note = String::from(
        "\nMeasured here beside seed 001 (its figures from analysis/claims.toml):\n\n",
    );
    let four = of(naive, 4, 0.0);
    if !four.is_empty() {
        let _ = writeln!(
            note,
            "- naive window, 4 pods, 400/s, plain loopback: {} reached the partner; seed {} per second.",
            span(&four),
            seed("pods.naive-4-pods")
        );
    }
    // The shortest added round trip at which 4 pods at 400/s reached the seed's range on average.
    let mut swept: Vec<&PodsRunRow> = (runs.iter())
        .filter(|r| r.strategy == naive && r.pods == 4 && r.offered_rps == 400.0 && r.rtt_ms > 0.0)
        .collect();
    swept.sort_by(|a, b| a.rtt_ms.total_cmp(&b.rtt_ms));
    for r in &swept {
        let _ = writeln!(
            note,
            "- the same through the proxy, +{} ms: {}/s (limit + offered x round trip predicts {}).",
            short(r.rtt_ms),
            short(r.reached_per_s),
            short(r.limit as f64 + r.offered_within_rtt)
        );
    }
    let one = of(naive, 1, 0.0);
    if !one.is_empty() {
        let _ = writeln!(
            note,
            "- naive window, one pod, 400/s: {}; seed ~{}.",
            span(&one),
            seed("pods.naive-1-pod")
        );
    }
    let lua = PodStrategy::Redis(Strategy::LuaBucket);
    let lua_rows: Vec<&PodsRunRow> = (runs.iter())
        .filter(|r| r.strategy == lua && (r.pods == 4 || r.pods == 12) && r.rtt_ms == 0.0)
        .collect();
    if !lua_rows.is_empty() {
        let lo = lua_rows
            .iter()
            .map(|r| r.reached_min_per_s)
            .min()
            .unwrap_or(0);
        let hi = lua_rows
            .iter()
            .map(|r| r.reached_max_per_s)
            .max()
            .unwrap_or(0);
        let _ = writeln!(
            note,
            "- Lua token bucket, 4 and 12 pods, plain loopback: every measured second {lo}-{hi}; seed {}.",
            seed("pods.lua-bucket-per-second")
        );
    }
    let memory: Vec<&PodsRunRow> = (runs.iter())
        .filter(|r| r.strategy == PodStrategy::InMemory && r.pods > 1)
        .collect();
    for r in &memory {
        let _ = writeln!(
            note,
            "- in-memory per pod, {} pods, {}/s: {}/s, {}x limit x pods; seed: limit x pods.",
            r.pods,
            short(r.offered_rps),
            short(r.reached_per_s),
            short(r.reached_per_pod_limit)
        );
    }
    event_loop_lines(&mut note, runs);
    let alerts = runs.iter().filter(|r| r.alert_pct > 0.0).count();
    let lost = runs.iter().filter(|r| r.lost != 0).count();
    let _ = writeln!(
        note,
        "- decided allowed and reached per second: the seed's alert (reached > decided by 2%) fired in {alerts} of \
        {} runs; sent and received differ in {lost}.",
        runs.len()
    );
    note
}

/// The event-loop sweep's naive window, per pods x work: reached, the race window, requests open.
fn event_loop_lines(note: &mut String, runs: &[PodsRunRow]) {
    let naive = PodStrategy::Redis(Strategy::NaiveWindow);
    // Each configuration's rows (pods, work, skew), in the order configurations first appear.
    type Config = (u32, f64, f64);
    let mut configs: Vec<(Config, Vec<&PodsRunRow>)> = Vec::new();
    for r in (runs.iter()).filter(|r| r.strategy == naive && r.partner_ms > 0.0) {
        let config = (r.pods, r.work_ms, r.skew_ms);
        match configs.iter_mut().find(|(c, _)| *c == config) {
            Some((_, rows)) => rows.push(r),
            None => configs.push((config, vec![r])),
        }
    }
    for ((pods, work, skew), rows) in configs {
        let n = rows.len() as f64;
        let mean = |f: fn(&PodsRunRow) -> f64| rows.iter().map(|r| f(r)).sum::<f64>() / n;
        let clocks = match skew > 0.0 {
            true => format!(", clocks spread over {} ms", short(skew)),
            false => String::new(),
        };
        let _ = writeln!(
            note,
            "- event loop, naive window, {pods} pod{}, {} ms work per request{clocks}: {}/s reached \
            ({} trials), GET to EXEC {} ms on average, at most {} requests open in a pod.",
            if pods == 1 { "" } else { "s" },
            short(work),
            short(mean(|r| r.reached_per_s)),
            rows.len(),
            short(mean(|r| r.decide_mean_ms)),
            rows.iter().map(|r| r.max_open).max().unwrap_or(0)
        );
    }
}
