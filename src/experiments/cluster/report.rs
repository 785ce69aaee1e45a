//! cluster's summary for REPORT.md: per phase and variant the failure fraction beside (N-1)/N
//! and whether the failures are exactly the users placement predicts (each exception listed), the
//! server's error texts, who changed at the reshard, the bucket, the set-up times, skipped phases.

use super::{BucketRow, CallRow, CustomBucketRow, SetupRow};
use super::{BUCKETS, CALLS, CUSTOM, PHASES, SETUPS};
use crate::analysis::claims::{Judge, LimiterClaim, Select};
use crate::analysis::table::{short, summary_table, Key, Stat};
use crate::analysis::AnalysisError;
use crate::experiments::limiters::{self, ClaimsAt, Exact, RowClaim, Verdict};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

/// Exceptions listed in full; more are counted.
const LISTED: usize = 20;

/// The summary tables, from the CSVs in `dir`.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let rows = CALLS.read(dir)?;
    let keys: [Key<CallRow>; 2] = [
        ("phase", |r| r.phase.clone()),
        ("variant", |r| r.variant.to_string()),
    ];
    let stats: [Stat<CallRow>; 5] = [
        ("failed", |r| Some(f64::from(1 - r.ok))),
        ("non local key", |r| Some(f64::from(r.non_local_key))),
        ("(N-1)/N", |r| Some(r.expected_fail_fraction)),
        ("derived key on another node", |r| {
            Some(f64::from(1 - r.same_node))
        }),
        ("as placement predicts", |r| Some(f64::from(r.as_predicted))),
    ];
    let setups = SETUPS.read(dir)?;
    let mut out = headline(&rows, &setups);
    out.push_str("Fractions of users (one call per user, variant and phase):\n\n");
    out.push_str(&summary_table(&rows, &keys, &stats));
    out.push_str(&exceptions(&rows));
    out.push_str(&error_texts(&rows));
    out.push_str(&reshard_changes(&rows));
    // A missing or unreadable bucket.csv leaves its table out, as an empty one does.
    let buckets = BUCKETS.read(dir).unwrap_or_default();
    if !buckets.is_empty() {
        out.push_str("\nToken bucket through the cluster (one row per bucket; declared key):\n\n");
        let keys: [Key<BucketRow>; 1] = [("node", |r| r.node.clone())];
        let stats: [Stat<BucketRow>; 5] = [
            ("capacity", |r| Some(r.capacity as f64)),
            ("admitted", |r| Some(r.admitted as f64)),
            ("admitted = capacity", |r| {
                Some(f64::from(u8::from(r.admitted == r.capacity)))
            }),
            ("requests", |r| Some(r.requests as f64)),
            ("errors", |r| Some(r.errors as f64)),
        ];
        out.push_str(&summary_table(&buckets, &keys, &stats));
    }
    if CUSTOM.path(dir).is_file() {
        out.push_str(
            "\nCustom limiters through the cluster (one row per user; keys as declared):\n\n",
        );
        let keys: [Key<CustomBucketRow>; 2] = [
            ("custom limiter", |r| r.strategy.to_string()),
            ("node", |r| r.node.clone()),
        ];
        let stats: [Stat<CustomBucketRow>; 5] = [
            ("limit", |r| Some(r.limit as f64)),
            ("admitted", |r| Some(r.admitted as f64)),
            ("failed", |r| Some(f64::from(u8::from(r.errors > 0)))),
            ("non local key", |r| Some(f64::from(r.non_local_key))),
            ("errors", |r| Some(r.errors as f64)),
        ];
        out.push_str(&summary_table(&CUSTOM.read(dir)?, &keys, &stats));
    }
    if !setups.is_empty() {
        out.push_str("\nCluster set-up and reshard, ms:\n\n");
    }
    let keys: [Key<SetupRow>; 1] = [("operation", |r| r.operation.clone())];
    let stats: [Stat<SetupRow>; 6] = [
        ("nodes", |r| Some(f64::from(r.nodes))),
        ("start nodes", |r| Some(r.start_nodes_ms)),
        ("create / move", |r| Some(r.work_ms)),
        ("attempts", |r| Some(f64::from(r.attempts))),
        ("until agreed", |r| Some(r.converge_ms)),
        ("total", |r| Some(r.total_ms)),
    ];
    if !setups.is_empty() {
        out.push_str(&summary_table(&setups, &keys, &stats));
    }
    let phases = PHASES.read(dir)?;
    for skipped in phases.iter().filter(|p| p.ran == 0) {
        let _ = writeln!(out, "\nSkipped: {} ({}).", skipped.phase, skipped.reason);
    }
    Ok(out)
}

/// What the undeclared script did on the cluster, in the server's words, and the set-up time.
fn headline(rows: &[CallRow], setups: &[SetupRow]) -> String {
    let on_cluster: Vec<&CallRow> = (rows.iter())
        .filter(|r| r.phase == "cluster" && r.variant == super::Variant::Undeclared)
        .collect();
    let mut out = String::new();
    if let Some(first) = on_cluster.first() {
        let failed: Vec<&&CallRow> = on_cluster.iter().filter(|r| r.ok == 0).collect();
        let text = failed
            .first()
            .map_or("", |r| r.error.split(" script: ").next().unwrap_or(""));
        let _ = write!(
            out,
            "On the {}-node cluster the undeclared script failed for {} of {} users ({}; (N-1)/N = {}) \
             with `{text}`. ",
            first.nodes,
            failed.len(),
            on_cluster.len(),
            short(failed.len() as f64 / on_cluster.len() as f64),
            short(first.expected_fail_fraction),
        );
    }
    if let Some(create) = setups.iter().find(|s| s.operation == "create") {
        let _ = write!(
            out,
            "Setting the cluster up took {:.0} ms.",
            create.total_ms
        );
    }
    if !out.is_empty() {
        out.push_str("\n\n");
    }
    out
}

/// Users whose outcome is not what placement predicts, or a line saying there are none.
fn exceptions(rows: &[CallRow]) -> String {
    let odd: Vec<&CallRow> = rows.iter().filter(|r| r.as_predicted == 0).collect();
    if odd.is_empty() {
        let n = rows.len();
        return format!("\nEvery one of the {n} calls failed or passed as placement predicts.\n");
    }
    let mut out = format!("\n{} calls not as placement predicts:\n\n", odd.len());
    for r in odd.iter().take(LISTED) {
        let _ = writeln!(
            out,
            "- {} {} user {}: base slot {} on {}, derived slot {} on {}, ok {}: {}",
            r.phase,
            r.variant,
            r.user,
            r.base_slot,
            r.base_node,
            r.derived_slot,
            r.derived_node,
            r.ok,
            r.error
        );
    }
    if odd.len() > LISTED {
        let _ = writeln!(out, "- and {} more", odd.len() - LISTED);
    }
    out
}

/// Each distinct error text (the script's SHA and line stripped) with the calls that got it.
fn error_texts(rows: &[CallRow]) -> String {
    let mut texts: BTreeMap<(String, String), usize> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.ok == 0) {
        let text = r
            .error
            .split(" script: ")
            .next()
            .unwrap_or(&r.error)
            .to_string();
        *texts.entry((r.variant.to_string(), text)).or_default() += 1;
    }
    let mut out =
        String::from("\nThe server's errors (per variant, text up to ` script: <sha>`):\n\n");
    if texts.is_empty() {
        out.push_str("- none\n");
    }
    for ((variant, text), n) in texts {
        let _ = writeln!(out, "- {variant}: {n} x `{text}`");
    }
    out
}

/// Per variant, users whose outcome changed between the cluster phase and after the reshard.
fn reshard_changes(rows: &[CallRow]) -> String {
    let before: BTreeMap<(String, u64), u8> = (rows.iter())
        .filter(|r| r.phase == "cluster")
        .map(|r| ((r.variant.to_string(), r.user), r.ok))
        .collect();
    let mut changes: BTreeMap<String, [usize; 3]> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.phase == "reshard") {
        if let Some(&was) = before.get(&(r.variant.to_string(), r.user)) {
            let c = changes.entry(r.variant.to_string()).or_default();
            c[0] += 1;
            c[1] += usize::from(was == 1 && r.ok == 0);
            c[2] += usize::from(was == 0 && r.ok == 1);
        }
    }
    if changes.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nAfter the reshard (the same keys):\n\n");
    out.push_str("| variant | users | passed, now fail | failed, now pass | changed |\n|---|---|---|---|---|\n");
    for (variant, [n, lost, gained]) in changes {
        let share = short((lost + gained) as f64 / n.max(1) as f64);
        let _ = writeln!(out, "| {variant} | {n} | {lost} | {gained} | {share} |");
    }
    out
}

/// Cluster safety: the share of each custom limiter's users whose checks failed, and why; and
/// the most any user was admitted over the limit.
pub fn verdicts(dir: &Path) -> Result<Vec<Verdict>, AnalysisError> {
    if !CUSTOM.path(dir).is_file() {
        return Ok(Vec::new());
    }
    let rows = CUSTOM.read(dir)?;
    let mut out = Vec::new();
    for l in limiters::recorded(dir)? {
        let mine: Vec<&CustomBucketRow> =
            rows.iter().filter(|r| r.strategy == l.strategy).collect();
        if mine.is_empty() {
            continue;
        }
        let failed = mine.iter().filter(|r| r.errors > 0).count();
        let non_local = mine.iter().filter(|r| r.non_local_key == 1).count();
        // Users whose checks failed are counted as failing, not judged on what they admitted.
        let decided: Vec<CustomBucketRow> = mine
            .iter()
            .filter(|r| r.errors == 0)
            .map(|r| (*r).clone())
            .collect();
        let exact = |r: &CustomBucketRow| (r.admitted as f64, Exact::limit(r.limit, r.requests));
        let admitted = limiters::farthest(&decided, |_| true, exact)
            .map_or(String::new(), |(_, admitted, bound)| {
                limiters::judged(admitted, bound)
            });
        let value = match failed {
            0 => format!(
                "0 of {} users fail; admitted / exact {admitted}",
                mine.len()
            ),
            n if non_local == n => format!("fails for {n} of {} users (non local key)", mine.len()),
            n => {
                let first = mine
                    .iter()
                    .find(|r| r.errors > 0)
                    .map_or("", |r| r.first_error.as_str());
                let first: String = first.chars().take(80).collect();
                format!(
                    "fails for {n} of {} users: {}",
                    mine.len(),
                    first.replace('|', "/")
                )
            }
        };
        out.push(Verdict {
            limiter: l.strategy.to_string(),
            aspect: "cluster: users failing",
            value,
        });
    }
    Ok(out)
}

/// Each custom limiter on the cluster: no user's checks fail, and every user that decided admits
/// exactly its limit (or every request, when there are fewer).
pub fn limiter_claims(at: &ClaimsAt) -> Result<Vec<LimiterClaim>, AnalysisError> {
    let of = at.of(CUSTOM.name(), "strategy")?;
    let safe = RowClaim {
        what: "no-user-fails",
        aspect: "cluster: no user fails",
        text: "on a 3-node cluster, no user's checks fail: every key a check touches is on the node \
               its slot is"
            .into(),
        select: Select::new(),
        statistic: "errors",
        judge: Judge::AllEqual,
        published: 0.0,
        published_column: None,
        why: "some users' checks failed (first_error has the first; non_local_key says whether a key \
              built inside the script was on another node)",
    };
    let mut out: Vec<LimiterClaim> = of.of_every_row(safe).into_iter().collect();
    // Users whose checks failed are judged by the claim above, not as under-admitting.
    let decided: Vec<_> = (of.rows.iter())
        .filter(|r| r.get("errors").map(String::as_str) == Some("0"))
        .cloned()
        .collect();
    let mut exact =
        limiters::exact_claims(&of, &decided, ["limit", "requests"], &[("", "cluster")]);
    for c in &mut exact {
        c.claim.select.insert("errors".into(), "0".into());
    }
    out.extend(exact);
    Ok(out)
}
