//! The numeric judges: per row, or per run set beside its own reference rows, against what the
//! seed published. A row that lacks what the claim reads fails the claim instead of vanishing.

use super::claim::{Claim, Combine, Figures, Judge, OtherStat, Verdict};
use super::stats::{median, quantile, Summary};
use super::table::{first_number, matches, number, short, Row};
use std::collections::BTreeSet;

/// One judged value and what the claim says it should be.
#[derive(Debug, Clone, Copy)]
struct Value {
    got: f64,
    want: f64,
}

/// Judges `selected` (rows of `all_rows`) by the claim's numeric judge.
pub(super) fn numbers(claim: &Claim, selected: &[&Row], all_rows: &[Row]) -> Verdict {
    let direct = match row_values(claim, selected) {
        Ok(values) => values,
        Err(why) => return Verdict::fails(why),
    };
    if !claim.spread_by.is_empty() {
        let label = format!("spread across trials per {}: ", claim.spread_by.join(" x "));
        return match spreads(claim, selected, &direct) {
            Ok(spreads) => verdict(claim, &spreads, &label),
            Err(why) => why,
        };
    }
    let Some(other) = &claim.other else {
        return verdict(claim, &direct, "");
    };
    let others: Vec<&Row> = all_rows.iter().filter(|r| matches(r, other)).collect();
    let Some(among) = &claim.among else {
        return match combined(claim, selected, &direct, &others) {
            Ok(values) => verdict(claim, &values, label(claim)),
            Err(why) => why,
        };
    };
    // One comparison per group: the selection must win against every other option.
    let mine: BTreeSet<&str> = selected
        .iter()
        .filter_map(|r| r.get(among))
        .map(String::as_str)
        .collect();
    let groups: BTreeSet<&str> = others
        .iter()
        .filter_map(|r| r.get(among))
        .map(String::as_str)
        .filter(|g| !mine.contains(g))
        .collect();
    if groups.is_empty() {
        return Verdict::no_data(format!("no other {among} to compare with"));
    }
    let mut verdicts = Vec::new();
    for group in groups {
        let rows: Vec<&Row> = others
            .iter()
            .copied()
            .filter(|r| r.get(among).map(String::as_str) == Some(group))
            .collect();
        let v = match combined(claim, selected, &direct, &rows) {
            Ok(values) => verdict(claim, &values, label(claim)),
            Err(why) => why,
        };
        verdicts.push((group, v));
    }
    let failed: Vec<&(&str, Verdict)> = verdicts
        .iter()
        .filter(|(_, v)| v.holds != Some(true))
        .collect();
    match failed.first() {
        None => Verdict {
            measured: format!(
                "against each of {} others: {}",
                verdicts.len(),
                names(&verdicts)
            ),
            holds: Some(true),
            ..Verdict::default()
        },
        Some((group, v)) => Verdict {
            measured: format!(
                "vs {among} {group}: {} ({} of {} others not beaten)",
                v.measured,
                failed.len(),
                verdicts.len()
            ),
            holds: if failed.iter().any(|(_, v)| v.holds == Some(false)) {
                Some(false)
            } else {
                None
            },
            // Only noise if every option it did not beat is within noise.
            inconclusive: failed.iter().all(|(_, v)| v.inconclusive),
            figures: v.figures.clone(),
        },
    }
}

fn names(verdicts: &[(&str, Verdict)]) -> String {
    verdicts
        .iter()
        .map(|(g, v)| format!("{g} {}", v.measured))
        .collect::<Vec<_>>()
        .join("; ")
}

fn label(claim: &Claim) -> &'static str {
    match claim.combine {
        Combine::Ratio => "ratio ",
        Combine::Difference => "difference ",
    }
}

/// Each row's statistic (as a percentage of `percent_of`, less `minus_column`) and what it
/// should be (`published`, its `published_column`, times `times_column`).
fn row_values(claim: &Claim, rows: &[&Row]) -> Result<Vec<Value>, String> {
    let one = |r: &Row| -> Option<Value> {
        let mut got = first_number(r, &claim.statistic)?;
        if let Some(of) = &claim.percent_of {
            let base = number(r, of).filter(|b| *b != 0.0)?;
            got = 100.0 * got / base;
        }
        for minus in &claim.minus_column {
            got -= number(r, minus)?;
        }
        let mut want = match &claim.published_column {
            Some(col) => number(r, col)?,
            None => claim.published,
        };
        if let Some(times) = &claim.times_column {
            want *= number(r, times)?;
        }
        Some(Value { got, want })
    };
    let values: Vec<Option<Value>> = rows.iter().map(|r| one(r)).collect();
    let missing = values.iter().filter(|v| v.is_none()).count();
    if missing > 0 {
        // A measurement that did not happen fails the claim; it never drops out of it.
        return Err(format!(
            "{missing} of {} rows have no {}",
            values.len(),
            claim.statistic.replace('?', " or ")
        ));
    }
    Ok(values.into_iter().flatten().collect())
}

/// Per group of rows equal on the claim's `spread_by` columns (a configuration's trials), its
/// highest value less its lowest, against `published`; groups in the order they first appear. A
/// group of one trial has no spread to judge (`--set trials=1`): no data, not a difference.
fn spreads(claim: &Claim, selected: &[&Row], direct: &[Value]) -> Result<Vec<Value>, Verdict> {
    let mut groups: Vec<(Vec<Option<&String>>, f64, f64, usize)> = Vec::new();
    for (row, v) in selected.iter().zip(direct) {
        let key: Vec<Option<&String>> = claim.spread_by.iter().map(|c| row.get(c)).collect();
        match groups.iter_mut().find(|(k, ..)| *k == key) {
            Some((_, lo, hi, n)) => (*lo, *hi, *n) = (lo.min(v.got), hi.max(v.got), *n + 1),
            None => groups.push((key, v.got, v.got, 1)),
        }
    }
    if groups.iter().any(|g| g.3 < 2) {
        return Err(Verdict::no_data(
            "one trial of a configuration: a spread across trials needs two or more",
        ));
    }
    Ok((groups.into_iter())
        .map(|(_, lo, hi, _)| Value {
            got: hi - lo,
            want: claim.published,
        })
        .collect())
}

/// The selection set beside `others`: per pair (the same `pair_by` values) when the claim
/// pairs runs, each row beside the others' one value when `per_row`, else the two means once.
/// Errors are verdicts: a run without its reference fails.
fn combined(
    claim: &Claim,
    selected: &[&Row],
    direct: &[Value],
    others: &[&Row],
) -> Result<Vec<Value>, Verdict> {
    let other_values = |rows: &[&Row]| -> Result<Vec<f64>, Verdict> {
        row_values(claim, rows)
            .map(|v| v.iter().map(|v| v.got).collect())
            .map_err(Verdict::fails)
    };
    let reduce = |values: &[f64]| match claim.other_stat {
        OtherStat::Mean => Summary::of(values).map(|s| s.mean),
        OtherStat::Median => median(values),
        OtherStat::P99 => quantile(values, 0.99),
    };
    let combine = |got: f64, reference: f64| -> Option<f64> {
        match claim.combine {
            Combine::Ratio => (reference != 0.0).then(|| got / reference),
            Combine::Difference => Some(got - reference),
        }
    };
    let value = |got: f64| Value {
        got,
        want: claim.published,
    };
    if claim.pair_by.is_empty() && claim.per_row {
        let reference = reduce(&other_values(others)?)
            .ok_or_else(|| Verdict::no_data("no rows to compare with"))?;
        return direct
            .iter()
            .map(|mine| combine(mine.got, reference).map(value))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| Verdict::no_data("the reference rows average 0"));
    }
    if claim.pair_by.is_empty() {
        let mine = Summary::of(&direct.iter().map(|v| v.got).collect::<Vec<_>>());
        let reference = reduce(&other_values(others)?);
        return match (mine, reference) {
            (Some(mine), Some(reference)) => combine(mine.mean, reference)
                .map(|v| vec![value(v)])
                .ok_or_else(|| Verdict::no_data("the reference rows average 0")),
            (None, _) => Err(Verdict::no_data("no matching rows")),
            (_, None) => Err(Verdict::no_data("no rows to compare with")),
        };
    }
    let mut values = Vec::with_capacity(selected.len());
    for (row, mine) in selected.iter().zip(direct) {
        let same_run: Vec<&Row> = others
            .iter()
            .copied()
            .filter(|o| claim.pair_by.iter().all(|c| o.get(c) == row.get(c)))
            .collect();
        let run = claim
            .pair_by
            .iter()
            .map(|c| format!("{c} {}", row.get(c).map(String::as_str).unwrap_or("?")))
            .collect::<Vec<_>>()
            .join(", ");
        let reference = reduce(&other_values(&same_run)?)
            .ok_or_else(|| Verdict::fails(format!("no row to compare with at {run}")))?;
        let v = combine(mine.got, reference)
            .ok_or_else(|| Verdict::fails(format!("the reference at {run} is 0")))?;
        values.push(value(v));
    }
    Ok(values)
}

/// Whether one row meets what it should be.
type RowTest = fn(&Value) -> bool;

/// The verdict on judged values; `label` says what they are ("ratio ", "difference ", "").
fn verdict(claim: &Claim, values: &[Value], label: &str) -> Verdict {
    // A mean of rows that each have their own figure (a `published_column`) is a mean of unlike
    // things, and its spread would be theirs: judge each row's share of its own figure instead.
    let shares: Vec<Value>;
    let (values, label) = match (&claim.published_column, claim.judge) {
        (Some(col), Judge::MeanWithin) => {
            if values.iter().any(|v| v.want == 0.0) {
                return Verdict::fails(format!("a row's {col} is 0: no share of it to judge"));
            }
            shares = values
                .iter()
                .map(|v| Value {
                    got: v.got / v.want,
                    want: 1.0,
                })
                .collect();
            (&shares[..], format!("{label}share of its {col}: "))
        }
        _ => (values, label.to_string()),
    };
    let gots: Vec<f64> = values.iter().map(|v| v.got).collect();
    let Some(s) = Summary::of(&gots) else {
        return Verdict::no_data("no matching rows");
    };
    let mut measured = if s.n == 1 {
        format!("{label}{} (one measurement)", short(s.mean))
    } else {
        format!(
            "{label}mean {}, min {}, max {} (n = {})",
            short(s.mean),
            short(s.min),
            short(s.max),
            s.n
        )
    };
    let count = |ok: &dyn Fn(&Value) -> bool| values.iter().filter(|v| ok(v)).count();
    // Row by row against a column, the mean alone reads oddly ("300 (= checks)": mean 233.3 where
    // the rows' checks differ): say how many rows met their own.
    let per_row: Option<(&str, RowTest)> = match claim.judge {
        Judge::AllEqual => Some(("=", |v| v.got == v.want)),
        Judge::AllAtLeast => Some((">=", |v| v.got >= v.want)),
        Judge::AllAbove => Some((">", |v| v.got > v.want)),
        Judge::AllAtMost => Some(("<=", |v| v.got <= v.want)),
        _ => None,
    };
    let met = per_row.map(|(rel, ok)| (rel, count(&ok)));
    let ci = confidence_interval(&s);
    if let (Some(col), Some((rel, met))) = (&claim.published_column, met) {
        let of = match &claim.times_column {
            Some(times) => format!("{col} x {times}"),
            None => col.clone(),
        };
        measured.push_str(&format!("; {met} of {} rows {rel} their {of}", s.n));
    }
    let holds = match claim.judge {
        Judge::AllEqual | Judge::AllAtLeast | Judge::AllAbove | Judge::AllAtMost => {
            met.is_some_and(|(_, met)| met == s.n)
        }
        // The evidence must lie inside: the mean's whole 95% interval, not only the mean.
        Judge::MeanWithin => holding_region(claim, values).is_some_and(|(lo, hi)| match ci {
            Some((ci_lo, ci_hi)) => lo <= ci_lo && ci_hi <= hi,
            None => lo <= s.mean && s.mean <= hi,
        }),
        Judge::Range => {
            let Some([lo, hi]) = claim.range else {
                return Verdict::no_data("the claim has no range");
            };
            let inside = count(&|v| lo <= v.got && v.got <= hi);
            if s.n > 1 {
                measured.push_str(&format!("; {inside} of {} inside", s.n));
            }
            inside == s.n
        }
        Judge::Below | Judge::Above => {
            let below = claim.judge == Judge::Below;
            let beyond = count(&|v| {
                if below {
                    v.got < v.want
                } else {
                    v.got > v.want
                }
            });
            let gap = if below {
                claim.published - s.mean
            } else {
                s.mean - claim.published
            };
            let side = if below { "below" } else { "above" };
            if s.n < 2 {
                // One run on the claim's side is no difference yet; one on the other side is
                // evidence against it.
                measured.push_str("; one run cannot show a difference beyond its spread");
                return Verdict {
                    inconclusive: beyond == 1,
                    ..Verdict::fails(measured)
                };
            }
            measured.push_str(&format!(
                "; {beyond} of {} {side} {}, gap {} vs spread {}",
                s.n,
                short(claim.published),
                short(gap),
                short(s.sd)
            ));
            beyond == s.n && gap > s.sd
        }
        Judge::MeanAbove => {
            if s.n < 2 {
                measured.push_str("; one run has no interval to judge a mean by");
                return Verdict {
                    inconclusive: s.mean > claim.published,
                    ..Verdict::fails(measured)
                };
            }
            ci.is_some_and(|(lo, _)| lo > claim.published)
        }
        Judge::TraceOrder | Judge::TraceWrites => {
            return Verdict::no_data("a trace is not numeric")
        }
    };
    // A verdict rests on its spread: a miss whose confidence interval still reaches the region
    // the seed's figure allows is noise this run cannot rule out, not a difference.
    // An interval wholly inside the region means single runs missed (a difference for a claim
    // about every run); a claim judged run by run with no run in the region differs outright.
    let straddles = |(lo, hi): (f64, f64)| {
        ci.is_some_and(|(ci_lo, ci_hi)| {
            let inside = |x: f64| x.is_finite() && ci_lo <= x && x <= ci_hi;
            inside(lo) || inside(hi)
        })
    };
    let some_run_in = |(lo, hi): (f64, f64)| match claim.judge {
        Judge::Range | Judge::Below | Judge::Above => {
            count(&|v| lo <= v.got && v.got <= hi && v.got != claim.published) > 0
        }
        _ => true,
    };
    let within_step =
        !holds && per_row.is_some_and(|(_, ok)| misses_within_step(claim, values, ok));
    let inconclusive = !holds
        && (holding_region(claim, values)
            .is_some_and(|region| straddles(region) && some_run_in(region))
            || within_step);
    if within_step {
        let step = short(claim.resolution);
        measured.push_str(&format!(
            "; every miss within the {step} step the statistic is read in"
        ));
    }
    // Beside a mean the interval always shows, so a reader sees how close a call was.
    let mean_judged = matches!(claim.judge, Judge::MeanWithin | Judge::MeanAbove);
    if let Some((lo, hi)) = ci.filter(|_| inconclusive || mean_judged) {
        measured.push_str(&format!("; 95% CI {} to {}", short(lo), short(hi)));
        if let Some((a, b)) =
            holding_region(claim, values).filter(|(a, b)| a.is_finite() && b.is_finite())
        {
            measured.push_str(&format!(", accepted {} to {}", short(a), short(b)));
        }
    }
    Verdict {
        measured,
        holds: Some(holds),
        inconclusive,
        figures: Some(Box::new(figures(claim, values, &s, ci, &label))),
    }
}

/// Whether every row a per-row judge (`ok`) misses, misses by no more than the claim's
/// resolution: read in whole steps, such a row could lie on either side of its bound.
fn misses_within_step(claim: &Claim, values: &[Value], ok: RowTest) -> bool {
    let r = claim.resolution;
    let near = |v: &Value| match claim.judge {
        Judge::AllEqual => (v.got - v.want).abs() <= r,
        Judge::AllAtMost => v.got <= v.want + r,
        Judge::AllAtLeast => v.got >= v.want - r,
        Judge::AllAbove => v.got > v.want - r,
        _ => false,
    };
    r > 0.0 && values.iter().all(|v| ok(v) || near(v))
}

/// The numbers behind a verdict, for claims.json: `label` says how the values were combined.
fn figures(
    claim: &Claim,
    values: &[Value],
    s: &Summary,
    ci: Option<(f64, f64)>,
    label: &str,
) -> Figures {
    let mut statistic = claim.statistic.replace('?', " or ");
    if let Some(of) = &claim.percent_of {
        statistic = format!("{statistic} as % of {of}");
    }
    if !claim.minus_column.is_empty() {
        statistic = format!("{statistic} minus {}", claim.minus_column.join(" and "));
    }
    let label = label.trim().trim_end_matches(':');
    if !label.is_empty() {
        statistic = format!("{label}: {statistic}");
    }
    let dimensionless = claim.other.is_some() && claim.combine == Combine::Ratio
        || (claim.published_column.is_some() && claim.judge == Judge::MeanWithin);
    let unit = match () {
        _ if dimensionless => None,
        _ if claim.percent_of.is_some() => Some("%".to_string()),
        _ => crate::record::fields::unit_of(&claim.statistic),
    };
    let finite = |x: f64| x.is_finite().then_some(x);
    // A judge of every row: what it accepts is the rows' own figures, from the lowest to the highest.
    let wants = values.iter().map(|v| v.want);
    let (low, high) = (
        wants.clone().fold(f64::INFINITY, f64::min),
        wants.fold(f64::NEG_INFINITY, f64::max),
    );
    let accepted = match (holding_region(claim, values), claim.judge) {
        (Some((lo, hi)), _) => (finite(lo), finite(hi)),
        (None, Judge::AllEqual) => (finite(low), finite(high)),
        (None, Judge::AllAtMost) => (None, finite(high)),
        (None, _) => (finite(low), None),
    };
    Figures {
        statistic,
        n: s.n,
        mean: s.mean,
        min: s.min,
        max: s.max,
        ci,
        accepted,
        unit,
    }
}

/// Where the mean would have to lie for the claim to hold (`mean_within` holds exactly there);
/// None for judges of every trial, which a single trial decides.
fn holding_region(claim: &Claim, values: &[Value]) -> Option<(f64, f64)> {
    match claim.judge {
        Judge::MeanWithin => {
            // What the mean should be follows the rows' own parameters when a column gives them.
            let want = values.iter().map(|v| v.want).sum::<f64>() / values.len().max(1) as f64;
            let slack = claim.tolerance * want.abs();
            Some((want - slack, want + slack))
        }
        Judge::Range => claim.range.map(|[lo, hi]| (lo, hi)),
        Judge::Below => Some((f64::NEG_INFINITY, claim.published)),
        Judge::Above | Judge::MeanAbove => Some((claim.published, f64::INFINITY)),
        _ => None,
    }
}

/// The 95% confidence interval of the mean (Student's t), for two or more values.
fn confidence_interval(s: &Summary) -> Option<(f64, f64)> {
    let half = s.ci95_half_width()?;
    Some((s.mean - half, s.mean + half))
}

#[cfg(test)]
mod tests {
    use super::super::claim::{Claim, Verdict};
    use super::super::table::{matches, read_rows, Row};
    use std::path::Path;

    /// What claims.rs's dispatch does for a numeric claim: its file's rows, its selection.
    fn judge(claim: &Claim, dir: &Path) -> Verdict {
        let rows = read_rows(&dir.join(&claim.file)).unwrap();
        let selected: Vec<&Row> = rows.iter().filter(|r| matches(r, &claim.select)).collect();
        super::numbers(claim, &selected, &rows)
    }

    /// A claim from TOML lines (id, experiment, seed, text and file filled in).
    fn claim(lines: &str) -> Claim {
        let head = "id = \"t\"\nexperiment = \"e\"\nseed = \"0\"\ntext = \"t\"\nfile = \"t.csv\"\n";
        toml::from_str(&format!("{head}{lines}")).unwrap()
    }

    fn verdict(c: &Claim, csv: &str) -> (Option<bool>, String) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.csv"), csv).unwrap();
        let v = judge(c, dir.path());
        (v.holds, v.measured)
    }

    const LATENCY: &str = "strategy,run,p50\nget,0,100\nlua,0,270\nget,1,150\nlua,1,320\n";

    #[test]
    fn a_difference_is_taken_run_by_run() {
        let c = claim(
            "statistic = \"p50\"\nselect = { strategy = \"lua\" }\nother = { strategy = \"get\" }\n\
             combine = \"difference\"\npair_by = [\"run\"]\npublished = 170\nrange = [160, 180]\n\
             judge = \"range\"\n",
        );
        let (holds, measured) = verdict(&c, LATENCY);
        assert_eq!(holds, Some(true), "{measured}");
        assert!(measured.contains("2 of 2 inside"), "{measured}");
        // Unpaired, the same rows would compare the means (295 - 125); paired, run 1 is 220.
        let (holds, measured) = verdict(&c, &LATENCY.replace("lua,1,320", "lua,1,370"));
        assert_eq!(holds, Some(false), "{measured}");
        assert!(measured.contains("1 of 2 inside"), "{measured}");
    }

    #[test]
    fn a_run_without_its_reference_fails() {
        let c = claim(
            "statistic = \"p50\"\nselect = { strategy = \"lua\" }\nother = { strategy = \"get\" }\n\
             pair_by = [\"run\"]\npublished = 2\ntolerance = 3\njudge = \"mean_within\"\n",
        );
        assert_eq!(verdict(&c, LATENCY).0, Some(true));
        let (holds, measured) = verdict(&c, &LATENCY.replace("get,1,150", "get,2,150"));
        assert_eq!(holds, Some(false));
        assert!(measured.contains("run 1"), "{measured}");
    }

    #[test]
    fn below_needs_every_run_below_and_a_gap_beyond_the_spread() {
        let c = claim(
            "statistic = \"cpu\"\nselect = { v = \"hot\" }\nother = { v = \"\" }\npair_by = [\"run\"]\n\
             published = 1.0\njudge = \"below\"\n",
        );
        let clear = "v,run,cpu\n,0,10\nhot,0,8\n,1,10\nhot,1,8.2\n,2,10\nhot,2,7.9\n";
        assert_eq!(verdict(&c, clear).0, Some(true));
        // Every run below, but by less than the runs' own spread: noise, not a difference.
        let noise = "v,run,cpu\n,0,10\nhot,0,9.999\n,1,10\nhot,1,9.5\n,2,10\nhot,2,9.98\n";
        let (holds, measured) = verdict(&c, noise);
        assert_eq!(holds, Some(false), "{measured}");
        assert!(measured.contains("3 of 3 below 1, gap"), "{measured}");
        let one_above = "v,run,cpu\n,0,10\nhot,0,8\n,1,10\nhot,1,10.5\n,2,10\nhot,2,7.9\n";
        assert_eq!(verdict(&c, one_above).0, Some(false));
        // One run below is no difference yet (inconclusive); one above is evidence against.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.csv"), "v,run,cpu\n,0,10\nhot,0,8\n").unwrap();
        let single = judge(&c, dir.path());
        assert_eq!((single.holds, single.inconclusive), (Some(false), true));
        std::fs::write(dir.path().join("t.csv"), "v,run,cpu\n,0,10\nhot,0,12\n").unwrap();
        let against = judge(&c, dir.path());
        assert_eq!((against.holds, against.inconclusive), (Some(false), false));
    }

    #[test]
    fn among_must_beat_every_other_group_and_names_the_one_it_did_not() {
        let c = claim(
            "statistic = \"cpu\"\nselect = { s = \"multi\" }\nother = { s = \"a|b\" }\namong = \"s\"\n\
             pair_by = [\"run\"]\npublished = 1.0\njudge = \"below\"\n",
        );
        let csv =
            "s,run,cpu\nmulti,0,5\na,0,9\nb,0,7\nmulti,1,5.2\na,1,9\nb,1,7\nget,0,1\nget,1,1\n";
        assert_eq!(verdict(&c, csv).0, Some(true));
        let (holds, measured) = verdict(&c, &csv.replace("b,1,7", "b,1,5"));
        assert_eq!(holds, Some(false));
        assert!(measured.starts_with("vs s b:"), "{measured}");
    }

    #[test]
    fn per_row_judges_every_row_beside_one_reference() {
        let c = claim(
            "statistic = \"cmds\"\nselect = { c = \"4x8\" }\nother = { c = \"1x1\" }\nper_row = true\n\
             published = 1.0\njudge = \"above\"\n",
        );
        // Five contended trials beside three uncontended ones (1x1 stopped early: it never varies).
        let csv =
            "c,t,cmds\n1x1,0,5\n1x1,1,5\n1x1,2,5\n4x8,0,9\n4x8,1,8\n4x8,2,9\n4x8,3,10\n4x8,4,9\n";
        let (holds, measured) = verdict(&c, csv);
        assert_eq!(holds, Some(true), "{measured}");
        assert!(measured.contains("n = 5"), "{measured}");
        // One contended trial no dearer than an uncontended one is seen, not averaged away.
        let (holds, measured) = verdict(&c, &csv.replace("4x8,3,10", "4x8,3,5"));
        assert_eq!(holds, Some(false), "{measured}");
    }

    #[test]
    fn minus_column_and_a_median_reference() {
        let stall = claim(
            "statistic = \"stall\"\nminus_column = \"baseline\"\npublished = 1\njudge = \"all_at_most\"\n",
        );
        assert_eq!(
            verdict(&stall, "stall,baseline\n5.1,5.0\n0.3,0.1\n").0,
            Some(true)
        );
        assert_eq!(
            verdict(&stall, "stall,baseline\n5.1,5.0\n1.3,0.1\n").0,
            Some(false)
        );
        assert_eq!(verdict(&stall, "stall,baseline\n5.1,\n").0, Some(false));
        let checks = claim(
            "statistic = \"us\"\nselect = { phase = \"dead\" }\nother = { phase = \"ok\" }\n\
             pair_by = [\"p\"]\nother_stat = \"median\"\npublished = 1.0\njudge = \"below\"\n",
        );
        // The healthy median is 100 (a mean would be 400, and pass the 150 µs dead check).
        let csv = "p,phase,us\na,ok,90\na,ok,100\na,ok,1010\na,dead,20\na,dead,30\na,dead,150\n";
        let (holds, measured) = verdict(&checks, csv);
        assert_eq!(holds, Some(false), "{measured}");
        assert!(measured.contains("2 of 3 below"), "{measured}");
    }

    #[test]
    fn a_miss_within_the_runs_noise_is_inconclusive_and_a_clear_one_differs() {
        use super::super::claim::Call;
        let c =
            claim("statistic = \"x\"\npublished = 10\ntolerance = 0.1\njudge = \"mean_within\"\n");
        let call = |csv: &str| {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("t.csv"), csv).unwrap();
            Call::of(&c, &judge(&c, dir.path()))
        };
        assert_eq!(call("x\n10.2\n9.9\n10.1\n"), Call::Holds);
        // Mean 8.8, outside 9-11, but the trials scatter across the boundary.
        assert_eq!(call("x\n7\n10.6\n8.8\n"), Call::Inconclusive);
        assert_eq!(call("x\n7\n7.1\n6.9\n"), Call::Differs);
        // Mean 10.1, inside 9-11, but the trials scatter so widely that the interval leaves it:
        // noise both ways, not a hold.
        let (call_wide, measured) = {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("t.csv"), "x\n7.5\n12.8\n10\n").unwrap();
            let v = judge(&c, dir.path());
            (Call::of(&c, &v), v.measured)
        };
        assert_eq!(call_wide, Call::Inconclusive, "{measured}");
        assert!(measured.contains("accepted 9 to 11"), "{measured}");
        // One trial cannot be inconclusive: it has no spread.
        assert_eq!(call("x\n8.8\n"), Call::Differs);
        let range =
            claim("statistic = \"x\"\npublished = 10\nrange = [9, 11]\njudge = \"range\"\n");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.csv"), "x\n8.5\n8.9\n").unwrap();
        // No run inside a range judged run by run is a difference, however wide the interval.
        assert_eq!(Call::of(&range, &judge(&range, dir.path())), Call::Differs);
    }
}
