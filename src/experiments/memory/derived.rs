//! Figures derived from the memory experiment's rows for the report, from the CSV alone: per
//! zset-max-listpack-entries setting T, the cliff (bytes per client at T and at T + 1, their
//! ratio), bytes per entry (per client / limit, the seed's sense) on either side and far past it,
//! the marginal cost of one more skiplist entry, Redis CPU per decision on either side, and what
//! 10,000 busy clients at limit 1,000 cost per strategy.
//!
//! No marginal slope is given below the cliff: a listpack is one allocation rounded up to an
//! allocator size class, so over a few entries its size moves in steps, not per entry.

use super::MemoryRow;
use crate::analysis::stats::Summary;
use crate::analysis::table::short;
use crate::limiter::Strategy;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// How far past the cliff the marginal bytes-per-entry slope may reach.
const SLOPE_REACH: i64 = 16;

/// A figure of one fill.
type Figure = fn(&MemoryRow) -> f64;

/// Mean of `column` over the sliding-log rows of setting `t` at `limit`.
fn log_mean(rows: &[&MemoryRow], t: u64, limit: i64, column: Figure) -> Option<f64> {
    let values: Vec<f64> = rows
        .iter()
        .filter(|r| r.listpack_entries == t && r.limit as i64 == limit)
        .map(|r| column(r))
        .collect();
    Summary::of(&values).map(|s| s.mean)
}

/// Extra bytes per client for each extra entry between two limits.
fn slope(rows: &[&MemoryRow], t: u64, from: i64, to: i64) -> Option<f64> {
    let a = log_mean(rows, t, from, |r| r.bytes_per_client)?;
    let b = log_mean(rows, t, to, |r| r.bytes_per_client)?;
    (to != from).then(|| (b - a) / (to - from) as f64)
}

fn cell(v: Option<f64>) -> String {
    v.map(short).unwrap_or_else(|| "-".into())
}

/// The derived-figures section of the memory summary (empty without sliding-log rows).
pub fn memory(rows: &[MemoryRow]) -> String {
    let log: Vec<&MemoryRow> = rows
        .iter()
        .filter(|r| r.strategy == Strategy::LuaLog)
        .collect();
    let mut settings: BTreeMap<u64, ()> = BTreeMap::new();
    for r in &log {
        settings.insert(r.listpack_entries, ());
    }
    let mut out = String::new();
    if !settings.is_empty() {
        out.push_str("\nThe cliff, per zset-max-listpack-entries T (sliding log; bytes per client; marginal = \
            extra bytes per extra entry; CPU = Redis µs per decision while filling):\n\n");
        out.push_str(
            "| T | at T | at T+1 | jump | B/entry at T | at T+1 | at 1,000 | at 10,000 | marginal \
            past T+1 | CPU at T | CPU at T+1 |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
        );
    }
    for &t in settings.keys() {
        let ti = t as i64;
        let at = log_mean(&log, t, ti, |r| r.bytes_per_client);
        let past = log_mean(&log, t, ti + 1, |r| r.bytes_per_client);
        let limits: Vec<i64> = (log.iter())
            .filter(|r| r.listpack_entries == t)
            .map(|r| r.limit as i64)
            .collect();
        let above = (limits.iter().copied())
            .filter(|&l| l > ti + 1 && l <= ti + 1 + SLOPE_REACH)
            .max();
        let jump = at.zip(past).filter(|(a, _)| *a > 0.0).map(|(a, p)| p / a);
        let per_entry = |limit: i64| cell(log_mean(&log, t, limit, |r| r.bytes_per_entry));
        let cpu = |limit: i64| cell(log_mean(&log, t, limit, |r| r.cpu_us_per_decision));
        let _ = writeln!(
            out,
            "| {t} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(at),
            cell(past),
            jump.map(|j| format!("{j:.2}x"))
                .unwrap_or_else(|| "-".into()),
            per_entry(ti),
            per_entry(ti + 1),
            per_entry(1000),
            per_entry(10_000),
            cell(above.and_then(|l| slope(&log, t, ti + 1, l))),
            cpu(ti),
            cpu(ti + 1),
        );
    }
    out.push_str(&across_settings(
        &log,
        &settings.keys().copied().collect::<Vec<_>>(),
    ));
    out.push_str(&ten_thousand_clients(rows));
    out
}

/// One limit under every setting: a listpack under one, a skiplist under another, so what a
/// higher threshold saves in memory and costs in CPU per decision reads off one line.
fn across_settings(log: &[&MemoryRow], settings: &[u64]) -> String {
    let mut limits: Vec<i64> = Vec::new();
    for r in log {
        let l = r.limit as i64;
        let shared =
            (settings.iter()).all(|&t| log_mean(log, t, l, |r| r.bytes_per_client).is_some());
        if shared && !limits.contains(&l) {
            limits.push(l);
        }
    }
    if settings.len() < 2 || limits.is_empty() {
        return String::new();
    }
    limits.sort_unstable();
    let heads: Vec<String> = settings.iter().map(|t| format!("T={t}")).collect();
    let mut out = format!(
        "
One limit under each setting (bytes per client / Redis CPU µs per decision while filling; * = listpack):

| limit | {} |\n|---|{}\n",
        heads.join(" | "),
        "---|".repeat(settings.len())
    );
    for l in limits {
        let cells: Vec<String> = (settings.iter())
            .map(|&t| {
                let listpack =
                    log_mean(log, t, l, |r| f64::from(r.listpack)).is_some_and(|v| v >= 0.5);
                format!(
                    "{} / {}{}",
                    cell(log_mean(log, t, l, |r| r.bytes_per_client)),
                    cell(log_mean(log, t, l, |r| r.cpu_us_per_decision)),
                    if listpack { " *" } else { "" }
                )
            })
            .collect();
        let _ = writeln!(out, "| {l} | {} |", cells.join(" | "));
    }
    out
}

/// One line: 10,000 busy clients at limit 1,000, per strategy (first setting's rows).
fn ten_thousand_clients(rows: &[MemoryRow]) -> String {
    let mut per: Vec<(String, Vec<f64>)> = Vec::new();
    for r in rows.iter().filter(|r| r.limit == 1000) {
        let (s, mb) = (r.strategy.to_string(), r.mb_per_10k_clients);
        match per.iter_mut().find(|p| p.0 == s) {
            Some(p) => p.1.push(mb),
            None => per.push((s, vec![mb])),
        }
    }
    if per.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = per
        .iter()
        .filter_map(|(s, v)| Some(format!("{s} {} MB", short(Summary::of(v)?.mean))))
        .collect();
    format!(
        "\n10,000 busy clients at limit 1,000 (bytes per client x 10,000): {}.\n",
        parts.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(strategy: &str, t: u64, limit: u64, bpc: f64, cpu: f64) -> MemoryRow {
        MemoryRow {
            strategy: serde_json::from_value(serde_json::json!(strategy)).unwrap(),
            limit,
            clients: 1,
            listpack_entries: t,
            listpack_setting: "set".into(),
            over_threshold: limit as i64 - t as i64,
            repeat: 0,
            bytes_per_client: bpc,
            bytes_per_entry: bpc / limit as f64,
            mb_per_10k_clients: bpc * 1e4 / 1e6,
            used_memory_before: 0,
            used_memory_after: 0,
            keys: 1,
            sample_key_bytes: 0,
            encoding: String::new(),
            listpack: u8::from(limit <= t),
            member_len: 0.0,
            member_bytes: 0,
            key_len: 0,
            key_name_bytes: 40,
            sample_state: String::new(),
            decisions: limit,
            denied: 0,
            cpu_us_per_decision: cpu,
            decisions_per_s: 0.0,
            fill_s: 0.0,
        }
    }

    #[test]
    fn cliff_jump_and_slopes_from_rows() {
        let rows = vec![
            row("lua-log", 128, 120, 3600.0, 10.0),
            row("lua-log", 128, 128, 4000.0, 12.0),
            row("lua-log", 128, 129, 19000.0, 11.0),
            row("lua-log", 128, 140, 20650.0, 11.0),
            row("lua-log", 128, 1000, 126000.0, 11.0),
            row("lua-swc", 128, 1000, 200.0, 9.0),
        ];
        let text = memory(&rows);
        let line = text.lines().find(|l| l.starts_with("| 128 |")).unwrap();
        // jump 19000 / 4000; past the cliff (20650 - 19000) / 11 = 150 per entry.
        assert_eq!(
            line,
            "| 128 | 4000 | 19000 | 4.75x | 31.25 | 147.3 | 126 | - | 150 | 12 | 11 |"
        );
        assert!(text.contains("lua-log 1260 MB, lua-swc 2 MB"), "{text}");
        assert!(
            !text.contains("One limit under each setting"),
            "one setting only"
        );
        let mut two = rows.clone();
        two.push(row("lua-log", 512, 128, 3900.0, 20.0));
        let text = memory(&two);
        assert!(
            text.contains("| 128 | 4000 / 12 * | 3900 / 20 * |"),
            "{text}"
        );
        assert!(memory(&[]).is_empty());
    }
}
