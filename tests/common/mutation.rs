//! Mutations of a claim's rows, derived from the claim's own definition (its statistic,
//! selection, judge, tolerance or range, and the reference rows it is set beside): one moves the
//! judged value inside what the claim accepts, one outside. The judge must then say "holds" and
//! "DIFFERS": a claim that no mutation of its rows can fail judges nothing. Used for the seeds'
//! claims on the reference run (tests/mutations.rs) and for every custom limiter's claims on the
//! runs the tests make.

use ratelab::analysis::claims::{self, Call, Claim, Combine, Judge, OtherStat};
use ratelab::analysis::stats::{median, quantile, Summary};
use ratelab::analysis::table::{first_number, matches, number, read_rows, Row};
use std::collections::BTreeMap;
use std::path::Path;

/// Which side of what the claim accepts a mutation puts the judged value on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Inside,
    Outside,
}

/// The judged value a row (or the mean) should take: `want` is what the claim compares it with.
fn target(claim: &Claim, want: f64, side: Side) -> f64 {
    let margin = |x: f64| 0.5 * x.abs().max(1.0);
    // Beyond the step the statistic is read in: a miss within it is inconclusive by design.
    let m = margin(want) + claim.resolution;
    match (claim.judge, side) {
        (Judge::AllEqual | Judge::MeanWithin, Side::Inside) => want,
        // A quarter margin inside: a statistic written back through a column's subtraction or
        // percentage must not land a rounding error beyond the bound.
        (Judge::AllAtMost, Side::Inside) => want - m / 2.0,
        (Judge::AllAtLeast, Side::Inside) => want + m / 2.0,
        (Judge::AllEqual | Judge::AllAtMost, Side::Outside) => want + m,
        (Judge::AllAtLeast | Judge::AllAbove, Side::Outside) => want - m,
        (Judge::AllAbove, Side::Inside) => want + m,
        (Judge::MeanWithin, Side::Outside) => want + 2.0 * claim.tolerance * want.abs() + m,
        (Judge::Range, side) => {
            let [lo, hi] = claim.range.expect("a range claim has a range");
            match side {
                Side::Inside => (lo + hi) / 2.0,
                Side::Outside => hi + (hi - lo).max(margin(hi)),
            }
        }
        (Judge::Below, Side::Inside) | (Judge::Above | Judge::MeanAbove, Side::Outside) => {
            claim.published - m
        }
        (Judge::Below, Side::Outside) | (Judge::Above | Judge::MeanAbove, Side::Inside) => {
            claim.published + m
        }
        (Judge::TraceOrder | Judge::TraceWrites, _) => {
            unreachable!("a trace is mutated by command")
        }
    }
}

/// A row's statistic as the judge reads it (percent of a column, less a column), and back.
struct Transform<'a> {
    claim: &'a Claim,
}

impl Transform<'_> {
    fn read(&self, row: &Row) -> Option<f64> {
        let mut x = first_number(row, &self.claim.statistic)?;
        if let Some(of) = &self.claim.percent_of {
            x = 100.0 * x / number(row, of).filter(|b| *b != 0.0)?;
        }
        for minus in &self.claim.minus_column {
            x -= number(row, minus)?;
        }
        Some(x)
    }

    /// Writes `x` (as the judge would read it) into the row's statistic.
    fn write(&self, row: &mut Row, x: f64) {
        let mut raw = x;
        for minus in &self.claim.minus_column {
            raw += number(row, minus).unwrap_or(0.0);
        }
        if let Some(of) = &self.claim.percent_of {
            let base = match number(row, of).filter(|b| *b != 0.0) {
                Some(base) => base,
                None => {
                    row.insert(of.clone(), "100".into());
                    100.0
                }
            };
            raw = raw * base / 100.0;
        }
        // A statistic of one column or another (`a?b`) is written into the first.
        let column = self.claim.statistic.split('?').next().unwrap_or_default();
        row.insert(column.to_string(), raw.to_string());
    }
}

/// What each selected row is compared with: `published`, or its column (times a column).
fn want(claim: &Claim, row: &Row) -> f64 {
    if claim.other.is_some() {
        return claim.published;
    }
    let mut want = match &claim.published_column {
        Some(col) => number(row, col).unwrap_or_else(|| panic!("{}: no {col}", claim.id)),
        None => claim.published,
    };
    if let Some(times) = &claim.times_column {
        want *= number(row, times).unwrap_or_else(|| panic!("{}: no {times}", claim.id));
    }
    want
}

/// The reference values a selected row is set beside: one per group of `among` (one group
/// without it), each the mean or median of the `other` rows of its pair.
fn references(claim: &Claim, row: &Row, rows: &[Row]) -> Vec<f64> {
    let Some(other) = &claim.other else {
        return Vec::new();
    };
    let t = Transform { claim };
    let same_pair = |o: &Row| claim.pair_by.iter().all(|c| o.get(c) == row.get(c));
    let mut groups: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for o in rows.iter().filter(|o| matches(o, other) && same_pair(o)) {
        let group = claim
            .among
            .as_ref()
            .and_then(|a| o.get(a))
            .cloned()
            .unwrap_or_default();
        if claim.among.is_some() && claim.among.as_ref().and_then(|a| row.get(a)) == Some(&group) {
            continue;
        }
        groups.entry(group).or_default().extend(t.read(o));
    }
    let reduce = |v: &Vec<f64>| match claim.other_stat {
        OtherStat::Mean => Summary::of(v).map(|s| s.mean),
        OtherStat::Median => median(v),
        OtherStat::P99 => quantile(v, 0.99),
    };
    groups.values().filter_map(reduce).collect()
}

/// The statistic that makes a combined value `p` beside the reference `r`.
fn before_combining(claim: &Claim, p: f64, r: f64) -> f64 {
    match claim.combine {
        Combine::Ratio => {
            assert!(r > 0.0, "{}: a ratio to a reference of {r}", claim.id);
            p * r
        }
        Combine::Difference => p + r,
    }
}

/// Rewrites the claim's selected rows so that the judged values land on `side`.
pub fn mutate(claim: &Claim, rows: &[Row], side: Side) -> Vec<Row> {
    match claim.judge {
        Judge::TraceOrder => return mutate_trace(rows, side),
        Judge::TraceWrites => return mutate_trace_writes(rows, side),
        _ if !claim.spread_by.is_empty() => return mutate_spread(claim, rows, side),
        _ => {}
    }
    let t = Transform { claim };
    let mut out = rows.to_vec();
    let selected: Vec<usize> = (0..rows.len())
        .filter(|&i| matches(&rows[i], &claim.select))
        .collect();
    assert!(
        !selected.is_empty(),
        "{}: no selected rows in the reference",
        claim.id
    );
    if let Some(other) = &claim.other {
        let overlap = selected.iter().any(|&i| matches(&rows[i], other));
        assert!(
            !overlap || claim.among.is_some(),
            "{}: selection and reference overlap",
            claim.id
        );
    }
    for &i in &selected {
        let p = target(claim, want(claim, &rows[i]), side);
        let refs = references(claim, &rows[i], rows);
        let x = if claim.other.is_none() {
            p
        } else {
            assert!(
                !refs.is_empty(),
                "{}: no reference rows for a selected row",
                claim.id
            );
            let xs = refs.iter().map(|r| before_combining(claim, p, *r));
            // Inside must beat every group; outside needs to lose to one.
            match (claim.judge, side) {
                (Judge::Below, Side::Inside) => xs.fold(f64::INFINITY, f64::min),
                (Judge::Above | Judge::MeanAbove, Side::Inside) => {
                    xs.fold(f64::NEG_INFINITY, f64::max)
                }
                _ => xs.fold(f64::NEG_INFINITY, f64::max),
            }
        };
        t.write(&mut out[i], x);
    }
    out
}

/// Seed 000's order on the trace key, from one client, or its second and third commands swapped.
fn mutate_trace(rows: &[Row], side: Side) -> Vec<Row> {
    let order = match side {
        Side::Inside => ["HMGET", "HMGET", "HSET", "HSET"],
        Side::Outside => ["HMGET", "HSET", "HMGET", "HSET"],
    };
    let mut out = rows.to_vec();
    let on_key = (0..rows.len())
        .filter(|&i| rows[i].get("on_trace_key").map(String::as_str) == Some("true"));
    let first: Vec<usize> = on_key.take(4).collect();
    let client = rows[first[0]].get("client").cloned().unwrap_or_default();
    for (i, command) in first.into_iter().zip(order) {
        out[i].insert("command".into(), command.into());
        out[i].insert("client".into(), client.clone());
    }
    out
}

/// The trace's writes on the traced key from one client in pairs of one value, a token apart; or
/// the second write one token below the first (each request spent its own token).
fn mutate_trace_writes(rows: &[Row], side: Side) -> Vec<Row> {
    let mut out = rows.to_vec();
    let hsets: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].get("on_trace_key").map(String::as_str) == Some("true"))
        .filter(|&i| rows[i].get("command").map(String::as_str) == Some("HSET"))
        .collect();
    assert!(hsets.len() >= 2, "the trace has fewer than two writes");
    let client = rows[hsets[0]].get("client").cloned().unwrap_or_default();
    let pairs = hsets.len().div_ceil(2);
    for (k, &i) in hsets.iter().enumerate() {
        let mut value = (pairs - k / 2) as i64;
        if side == Side::Outside && k == 1 {
            value -= 1;
        }
        out[i].insert("args".into(), format!("trace tokens {value}"));
        out[i].insert("client".into(), client.clone());
    }
    if side == Side::Inside && hsets.len() % 2 == 1 {
        // An unpaired last write is a difference: inside drops it.
        out.remove(*hsets.last().expect("two or more writes"));
    }
    out
}

/// Per group of selected rows equal on `spread_by`: every row at the first row's value, and the
/// first row moved by the target spread.
fn mutate_spread(claim: &Claim, rows: &[Row], side: Side) -> Vec<Row> {
    let t = Transform { claim };
    let mut out = rows.to_vec();
    // A spread is never negative: a target below it is every row alike.
    let spread = target(claim, claim.published, side).max(0.0);
    let mut firsts: BTreeMap<Vec<Option<String>>, f64> = BTreeMap::new();
    for (i, row) in rows.iter().enumerate() {
        if !matches(row, &claim.select) {
            continue;
        }
        let key: Vec<Option<String>> = claim
            .spread_by
            .iter()
            .map(|c| row.get(c).cloned())
            .collect();
        match firsts.get(&key) {
            Some(&base) => t.write(&mut out[i], base),
            None => {
                let base = t
                    .read(row)
                    .unwrap_or_else(|| panic!("{}: no {}", claim.id, claim.statistic));
                firsts.insert(key, base);
                t.write(&mut out[i], base + spread);
            }
        }
    }
    assert!(
        !firsts.is_empty(),
        "{}: no selected rows in the reference",
        claim.id
    );
    out
}

fn write_csv(path: &Path, rows: &[Row]) {
    let mut writer = csv::Writer::from_path(path).unwrap();
    writer.write_record(rows[0].keys()).unwrap();
    for row in rows {
        writer.write_record(row.values()).unwrap();
    }
    writer.flush().unwrap();
}

/// The rows the judge reads for this claim (its selection, its reference rows, the trace).
pub fn read_by(claim: &Claim, rows: &[Row]) -> Vec<Row> {
    let wanted = |r: &Row| {
        matches(r, &claim.select)
            || claim.other.as_ref().is_some_and(|o| matches(r, o))
            || matches!(claim.judge, Judge::TraceOrder | Judge::TraceWrites)
    };
    rows.iter().filter(|r| wanted(r)).cloned().collect()
}

/// The claim's verdict on `rows` written as its file in a fresh directory: whether it holds
/// (a machine-dependent figure's own reading: the report shows it, its `judged_by` judge it).
pub fn judged(claim: &Claim, rows: &[Row]) -> (Call, String) {
    let dir = tempfile::tempdir().unwrap();
    write_csv(&dir.path().join(&claim.file), rows);
    let verdict = claims::judge(claim, dir.path());
    let call = match (claim.machine_dependent, verdict.holds) {
        (true, Some(true)) => Call::Holds,
        (true, Some(false)) if !verdict.inconclusive => Call::Differs,
        _ => Call::of(claim, &verdict),
    };
    (call, verdict.measured)
}

/// What is wrong with `claim` judged on mutations of `rows` (the rows of its file), each a line;
/// empty when it holds on the inside mutation and differs on the outside one.
pub fn cannot_move(claim: &Claim, rows: &[Row]) -> Vec<String> {
    let rows = &read_by(claim, rows);
    let mut failures = Vec::new();
    for (side, wanted) in [(Side::Inside, Call::Holds), (Side::Outside, Call::Differs)] {
        let (call, measured) = judged(claim, &mutate(claim, rows, side));
        if call != wanted {
            failures.push(format!(
                "{} {side:?}: {} ({measured})",
                claim.id,
                call.label()
            ));
        }
    }
    failures
}

/// Every custom limiter's claim that the experiments generate for the results under `out`
/// (a run's directory), each moved both ways by its own rows; panics naming those that cannot
/// be. Returns how many were checked.
pub fn every_limiter_claim_can_hold_and_fail(out: &Path) -> usize {
    let mut checked = 0;
    let mut failures = Vec::new();
    for e in ratelab::experiments::ALL {
        let dir = out.join(e.id());
        let generated = e
            .limiter_claims(&dir)
            .unwrap_or_else(|err| panic!("{}: {err}", e.id()));
        for l in generated {
            let path = dir.join(&l.claim.file);
            let rows = read_rows(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
            failures.extend(cannot_move(&l.claim, &rows));
            checked += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{} limiter claims cannot be moved both ways by their rows:\n{}",
        failures.len(),
        failures.join("\n")
    );
    checked
}
