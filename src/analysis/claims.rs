//! Published claims (analysis/claims.toml, embedded) judged against this run's CSVs.

pub use super::claim::{
    Basis, Call, Claim, Combine, Judge, LimiterClaim, OtherStat, Select, Verdict, LIMITER_SEED,
};
use super::judge;
use super::stats::Summary;
use super::table::{matches, number, read_rows, short, Row};
use super::trace;
use super::AnalysisError;
use crate::limiter::Strategy;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

const CLAIMS: &str = include_str!("../../analysis/claims.toml");

/// A seed sentence stating a figure or an outcome that no claim judges, and why: with the
/// claims' quotes, the whole write-up is accounted for.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unjudged {
    pub seed: String,
    /// Verbatim from the seed's write-up.
    pub quote: String,
    /// Why it is not judged: a production figure, the author's machine, or the measurement an
    /// outcome would need.
    pub why: String,
}

#[derive(Deserialize)]
struct ClaimsFile {
    claim: Vec<Claim>,
    #[serde(default)]
    unjudged: Vec<Unjudged>,
}

/// Every claim in the embedded claims file.
pub fn all() -> Result<Vec<Claim>, AnalysisError> {
    parse(CLAIMS)
}

/// The seed sentences with a figure or an outcome that no claim judges, in the claims file's order.
pub fn unjudged() -> Result<Vec<Unjudged>, AnalysisError> {
    Ok(parse_file(CLAIMS)?.unjudged)
}

fn parse_file(text: &str) -> Result<ClaimsFile, AnalysisError> {
    toml::from_str(text).map_err(|e| AnalysisError::Claims(e.to_string()))
}

/// Claims from a claims file's text, each checked for options that contradict each other.
fn parse(text: &str) -> Result<Vec<Claim>, AnalysisError> {
    let file = parse_file(text)?;
    let ids: std::collections::BTreeSet<&str> = file.claim.iter().map(|c| c.id.as_str()).collect();
    for claim in &file.claim {
        check_reason(claim, &ids)?;
        let per_row_figure = claim.other.is_some()
            || claim.published_column.is_some()
            || claim.times_column.is_some();
        if !claim.spread_by.is_empty() && per_row_figure {
            return Err(AnalysisError::Claims(format!(
                "claim {}: spread_by judges a group's spread against `published`; it takes no \
                 other, published_column or times_column",
                claim.id
            )));
        }
        // The judge pairs by `pair_by` first: `per_row` beside it would be silently ignored.
        if claim.per_row && !claim.pair_by.is_empty() {
            return Err(AnalysisError::Claims(format!(
                "claim {}: per_row compares each row with the other rows' one value, pair_by with \
                 their own pair's; set one of them",
                claim.id
            )));
        }
    }
    Ok(file.claim)
}

/// A reason says how it knows (`basis`), and a tested one names claims that exist.
fn check_reason(
    claim: &Claim,
    ids: &std::collections::BTreeSet<&str>,
) -> Result<(), AnalysisError> {
    let problem = match (&claim.why, claim.basis, claim.tested_by.is_empty()) {
        (Some(_), None, _) => {
            Some("a why needs a basis (tested, observed or hypothesis)".to_string())
        }
        (None, Some(_), _) => Some("a basis without a why".into()),
        (_, Some(Basis::Tested), true) => {
            Some("a tested reason names its claims in tested_by".into())
        }
        (_, Some(Basis::Observed | Basis::Hypothesis) | None, false) => {
            Some("tested_by belongs to a tested reason".into())
        }
        _ => (claim.tested_by.iter())
            .find(|id| !ids.contains(id.as_str()))
            .map(|id| format!("tested_by names no claim {id}")),
    };
    match problem {
        Some(why) => Err(AnalysisError::Claims(format!("claim {}: {why}", claim.id))),
        None => Ok(()),
    }
}

/// Where the seeds' write-ups are, to check the claims' quotes against: the directory
/// RATELAB_SEEDS_DIR names, else `shared/seeds` beside this checkout or one of its parents, else the
/// workplace's `/work/shared/seeds` (a clean clone elsewhere on the machine). Err says where it looked.
pub fn seeds_dir() -> Result<std::path::PathBuf, String> {
    if let Some(dir) = std::env::var_os("RATELAB_SEEDS_DIR") {
        return Ok(dir.into());
    }
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut tried: Vec<std::path::PathBuf> = checkout
        .ancestors()
        .map(|a| a.join("shared/seeds"))
        .collect();
    tried.push("/work/shared/seeds".into());
    match tried.iter().find(|dir| dir.is_dir()) {
        Some(dir) => Ok(dir.clone()),
        None => Err(format!(
            "the seeds' write-ups are in none of {}: set RATELAB_SEEDS_DIR to their directory",
            tried
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// A CSV's rows as claims read them: the seeds' sentences are about ratelab's own clients, so the
/// rows a custom limiter decided (a `limiter` column naming no built-in strategy) are left out
/// (REPORT.md's custom limiter table says what those showed), unless a claim selects its `limiter`
/// by name: a claim about a library run on its own client (libraries) reads that library's rows.
struct ClaimRows {
    all: Vec<Row>,
    builtin: Vec<Row>,
}

impl ClaimRows {
    fn read(path: &Path) -> Result<Self, AnalysisError> {
        let all = read_rows(path)?;
        let builtin = |r: &&Row| {
            (r.get("limiter"))
                .is_none_or(|l| l.is_empty() || Strategy::ALL.iter().any(|s| s.name() == l))
        };
        let builtin = all.iter().filter(builtin).cloned().collect();
        Ok(ClaimRows { all, builtin })
    }

    fn for_claim(&self, claim: &Claim) -> &[Row] {
        match claim.select.contains_key("limiter") {
            true => &self.all,
            false => &self.builtin,
        }
    }
}

/// Judges a claim against the experiment directory's CSV.
pub fn judge(claim: &Claim, experiment_dir: &Path) -> Verdict {
    Judging::default().judge(claim, experiment_dir)
}

/// Judges claims reading each CSV once: a report judges every claim, several per file, and
/// reading the file again per claim was most of `report`'s time in a debug build. For one pass
/// over results that do not change meanwhile.
#[derive(Default)]
pub struct Judging {
    /// Each file's judged rows, or why it could not be read.
    read: HashMap<PathBuf, Result<Rc<ClaimRows>, String>>,
}

impl Judging {
    /// Judges `claim` against the experiment directory's CSV, read once per pass.
    pub fn judge(&mut self, claim: &Claim, experiment_dir: &Path) -> Verdict {
        let path = experiment_dir.join(&claim.file);
        let read = (self.read.entry(path)).or_insert_with_key(|path| {
            ClaimRows::read(path)
                .map(Rc::new)
                .map_err(|e| e.to_string())
        });
        match read {
            Ok(rows) => judge_rows(claim, rows.for_claim(claim), experiment_dir),
            Err(e) => Verdict::no_data(format!("no data ({e})")),
        }
    }
}

fn judge_rows(claim: &Claim, rows: &[Row], experiment_dir: &Path) -> Verdict {
    let selected: Vec<&Row> = rows.iter().filter(|r| matches(r, &claim.select)).collect();
    if let Some(why) = not_measurable_on_users_server(claim, &selected, experiment_dir) {
        return Verdict::no_data(why);
    }
    match claim.judge {
        Judge::TraceOrder => trace::order(&selected),
        Judge::TraceWrites => trace::writes(&selected),
        _ => judge::numbers(claim, &selected, rows),
    }
}

/// Some columns come from the server's own process (its run-queue wait, for one), which a server
/// the user named does not give ratelab: there every row leaves them empty, and the claim cannot
/// be judged rather than differs. On a server ratelab started, an empty column still fails.
fn not_measurable_on_users_server(
    claim: &Claim,
    selected: &[&Row],
    experiment_dir: &Path,
) -> Option<String> {
    let all_empty = !selected.is_empty()
        && selected
            .iter()
            .all(|r| r.get(&claim.statistic).is_some_and(|v| v.trim().is_empty()));
    // meta.json only when it matters: most claims have their column.
    let external = || matches!(super::read_meta(experiment_dir), Ok(Some(m)) if !m.redis.managed);
    (all_empty && external()).then(|| {
        format!(
            "not measurable on a server you named (--redis-url): every row leaves {} empty",
            claim.statistic
        )
    })
}

/// The claim's reason for a difference, with each `{column}` replaced by this run's mean of that
/// column over the claim's rows (`{column|k=v}`: over the rows of a variation); empty when the
/// claims file gives none.
pub fn why(claim: &Claim, experiment_dir: &Path) -> String {
    let Some(template) = &claim.why else {
        return String::new();
    };
    let read = ClaimRows::read(&experiment_dir.join(&claim.file));
    let rows = read.as_ref().map_or(&[][..], |r| r.for_claim(claim));
    let selected: Vec<&Row> = rows.iter().filter(|r| matches(r, &claim.select)).collect();
    let mut out = String::new();
    let mut rest = template.as_str();
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|c| open + c) else {
            break;
        };
        out.push_str(&rest[..open]);
        // `{column}` over the claim's rows, `{column|k=v,k=v}` over them with those columns
        // changed: the variation the run made to test the reason.
        let (column, changes) = rest[open + 1..close]
            .split_once('|')
            .unwrap_or((&rest[open + 1..close], ""));
        let mut variation = claim.select.clone();
        for (k, v) in changes.split(',').filter_map(|kv| kv.split_once('=')) {
            variation.insert(k.trim().to_string(), v.trim().to_string());
        }
        let rows_of: Vec<&Row> = match changes.is_empty() {
            true => selected.clone(),
            false => rows.iter().filter(|r| matches(r, &variation)).collect(),
        };
        // `{a?b}`: column a, or b where the rows have no a (a run measures one or the other).
        let values_of = |column: &str| -> Vec<f64> {
            rows_of.iter().filter_map(|r| number(r, column)).collect()
        };
        let values = (column.split('?').map(values_of))
            .find(|v| !v.is_empty())
            .unwrap_or_default();
        match Summary::of(&values) {
            Some(s) => out.push_str(&short(s.mean)),
            None => out.push_str(&format!("({column}: not measured)")),
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Text with every run of whitespace made one space: the seeds wrap their lines.
    fn collapsed(text: &str) -> String {
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    fn seeds_dir() -> std::path::PathBuf {
        super::seeds_dir().unwrap_or_else(|tried| panic!("{tried}"))
    }

    /// Each seed's collapsed text by its three-digit prefix (`000_....txt` is seed "000").
    fn seed_texts(dir: &Path) -> BTreeMap<String, String> {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| {
            panic!(
                "the seeds' write-ups are not at {} ({e}): the quotes in analysis/claims.toml \
                 cannot be checked against them; set RATELAB_SEEDS_DIR to their directory",
                dir.display()
            )
        });
        let mut seeds = BTreeMap::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            let Some((prefix, _)) = name.split_once('_') else {
                continue;
            };
            if prefix.len() == 3 && name.ends_with(".txt") {
                let text = std::fs::read_to_string(entry.path()).unwrap();
                assert!(
                    seeds.insert(prefix.to_string(), collapsed(&text)).is_none(),
                    "two seeds {prefix}"
                );
            }
        }
        seeds
    }

    /// Every quote of the claims file as (who quotes it, seed, quote).
    fn quotes() -> Vec<(String, String, String)> {
        let claims = all().unwrap().into_iter();
        let claimed = claims.filter_map(|c| Some((c.id, c.seed, c.quote?)));
        let listed = (unjudged().unwrap().into_iter().enumerate())
            .map(|(i, u)| (format!("unjudged #{}", i + 1), u.seed, u.quote));
        claimed.chain(listed).collect()
    }

    /// The quotes not found verbatim (whitespace collapsed) in their seed's text.
    fn not_verbatim(
        quotes: &[(String, String, String)],
        seeds: &BTreeMap<String, String>,
    ) -> Vec<String> {
        (quotes.iter())
            .filter(|(_, seed, quote)| {
                let quote = collapsed(quote);
                quote.is_empty() || !seeds.get(seed).is_some_and(|text| text.contains(&quote))
            })
            .map(|(who, seed, quote)| format!("{who} (seed {seed}): {quote:?}"))
            .collect()
    }

    /// A quote is the seed's own words: missing seeds fail this test rather than skip it.
    #[test]
    fn every_quote_occurs_verbatim_in_its_seed() {
        let seeds = seed_texts(&seeds_dir());
        assert_eq!(seeds.len(), 4, "seeds found: {:?}", seeds.keys());
        let quotes = quotes();
        assert!(quotes.len() > 100, "{} quotes", quotes.len());
        let wrong = not_verbatim(&quotes, &seeds);
        assert!(
            wrong.is_empty(),
            "not verbatim in the seed:\n{}",
            wrong.join("\n")
        );
    }

    /// The check itself: one changed word, an unknown seed or an empty quote is caught.
    #[test]
    fn a_quote_not_in_its_seed_is_caught() {
        let seeds = BTreeMap::from([(
            "000".to_string(),
            collapsed("Six requests got\n through on three tokens."),
        )]);
        let quote =
            |seed: &str, text: &str| vec![("c".to_string(), seed.to_string(), text.to_string())];
        assert!(not_verbatim(&quote("000", "got through on three tokens."), &seeds).is_empty());
        assert_eq!(
            not_verbatim(&quote("000", "got through on four tokens."), &seeds).len(),
            1
        );
        assert_eq!(
            not_verbatim(&quote("001", "got through on three tokens."), &seeds).len(),
            1
        );
        assert_eq!(not_verbatim(&quote("000", " "), &seeds).len(), 1);
    }

    /// Every claim from a seed says which of its sentences it judges; a listed unjudged sentence
    /// belongs to a seed and is quoted by no claim.
    #[test]
    fn every_seed_claim_has_a_quote_and_unjudged_ones_are_unquoted() {
        let claims = all().unwrap();
        let missing: Vec<&str> = (claims.iter())
            .filter(|c| c.seed != "ours" && c.quote.as_deref().is_none_or(|q| q.trim().is_empty()))
            .map(|c| c.id.as_str())
            .collect();
        assert!(missing.is_empty(), "claims without a quote: {missing:?}");
        let quoted: std::collections::BTreeSet<&str> =
            claims.iter().filter_map(|c| c.quote.as_deref()).collect();
        for u in unjudged().unwrap() {
            assert_ne!(u.seed, "ours", "{}", u.quote);
            assert!(!u.why.trim().is_empty(), "{}", u.quote);
            assert!(
                !quoted.contains(u.quote.as_str()),
                "listed unjudged but quoted by a claim: {}",
                u.quote
            );
        }
    }

    #[test]
    fn embedded_claims_parse_and_ids_are_unique() {
        let claims = all().unwrap();
        let ids: std::collections::BTreeSet<_> = claims.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids.len(), claims.len());
    }

    /// A reason's numbers come from this run (`{column}` placeholders); digits may only name
    /// things: a claim id, a seed ("seed 002"), a percentile ("p99").
    #[test]
    fn no_reason_carries_a_typed_number() {
        let claims = all().unwrap();
        let mut ids: Vec<&str> = claims.iter().map(|c| c.id.as_str()).collect();
        ids.sort_by_key(|id| std::cmp::Reverse(id.len()));
        for claim in &claims {
            let Some(why) = &claim.why else { continue };
            let mut text = String::new();
            let mut depth = 0;
            for ch in why.chars() {
                match ch {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ if depth == 0 => text.push(ch),
                    _ => {}
                }
            }
            for id in &ids {
                text = text.replace(id, "");
            }
            let typed: Vec<&str> = (text.split_whitespace())
                .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
                .filter(|w| w.chars().any(|c| c.is_ascii_digit()))
                .filter(|w| !(w.starts_with('p') && w[1..].chars().all(|c| c.is_ascii_digit())))
                .filter(|w| !text.contains(&format!("seed {w}")))
                .collect();
            assert!(
                typed.is_empty(),
                "{}: typed numbers {typed:?} in its why",
                claim.id
            );
        }
    }

    #[test]
    fn per_row_beside_pair_by_is_refused() {
        let one = |extra: &str| {
            format!(
                "[[claim]]\nid = \"x.y\"\nexperiment = \"race\"\nseed = \"001\"\n\
                 text = \"t\"\nfile = \"race.csv\"\nstatistic = \"admitted\"\npublished = 1\n\
                 judge = \"below\"\nother = {{ v = \"a\" }}\n{extra}"
            )
        };
        assert!(parse(&one("per_row = true\n")).is_ok());
        let err = parse(&one("per_row = true\npair_by = [\"run\"]\n")).unwrap_err();
        assert!(err.to_string().contains("claim x.y"), "{err}");
    }

    #[test]
    fn judges_a_csv() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("race.csv"),
            "scenario,strategy,processes,in_flight,admitted,limit\n\
             matrix,naive-bucket,1,2,200,100\nmatrix,naive-bucket,1,2,166,100\n",
        )
        .unwrap();
        let claims = all().unwrap();
        let two = claims
            .iter()
            .find(|c| c.id == "race.one-process-two-in-flight")
            .unwrap();
        let v = judge(two, dir.path());
        assert_eq!(v.holds, Some(false));
        assert!(v.measured.contains("min 166"), "{}", v.measured);
        let lua = claims.iter().find(|c| c.id == "race.lua-exact").unwrap();
        assert_eq!(judge(lua, dir.path()).holds, None);
    }

    #[test]
    fn all_at_most_bounds_each_row_by_its_column() {
        let dir = tempfile::tempdir().unwrap();
        let csv =
            "strategy,max_admitted_in_1s,smooth_bound\nlua-bucket,109,109.4\nincr-window,200,110\n";
        std::fs::write(dir.path().join("window-edge.csv"), csv).unwrap();
        let claims = all().unwrap();
        let bounded = claims
            .iter()
            .find(|c| c.id == "window-edge.bucket-bounded")
            .unwrap();
        assert_eq!(bounded.judge, Judge::AllAtMost);
        assert_eq!(judge(bounded, dir.path()).holds, Some(true));
        let mut fixed = bounded.clone();
        fixed.select = [("strategy".to_string(), "incr-window".to_string())].into();
        let over = judge(&fixed, dir.path());
        assert_eq!(over.holds, Some(false));
        assert!(
            over.measured
                .ends_with("; 0 of 1 rows <= their smooth_bound"),
            "{}",
            over.measured
        );
    }

    #[test]
    fn all_at_most_fails_on_one_row_above_even_when_the_mean_is_below() {
        let dir = tempfile::tempdir().unwrap();
        let csv = "operation,lazyfree,probe_max_stall_ms\nexpire,yes,0.2\nexpire,yes,0.3\nexpire,no,226\n";
        std::fs::write(dir.path().join("bigkey.csv"), csv).unwrap();
        let mut claim: Claim = toml::from_str(
            r#"
            id = "t"
            experiment = "bigkey"
            seed = "002"
            text = "t"
            file = "bigkey.csv"
            statistic = "probe_max_stall_ms"
            select = { lazyfree = "yes" }
            published = 1.0
            judge = "all_at_most"
            "#,
        )
        .unwrap();
        assert_eq!(judge(&claim, dir.path()).holds, Some(true));
        std::fs::write(
            dir.path().join("bigkey.csv"),
            format!("{csv}expire,yes,1.5\n"),
        )
        .unwrap();
        let v = judge(&claim, dir.path());
        assert_eq!(v.holds, Some(false), "{}", v.measured);
        assert!(v.measured.contains("max 1.50"), "{}", v.measured);
        claim.select.clear();
        assert_eq!(judge(&claim, dir.path()).holds, Some(false));
    }

    #[test]
    fn a_miss_within_the_resolution_is_inconclusive_and_one_beyond_differs() {
        let dir = tempfile::tempdir().unwrap();
        let claim: Claim = toml::from_str(
            r#"
            id = "t"
            experiment = "bigkey"
            seed = "002"
            text = "t"
            file = "bigkey.csv"
            statistic = "server_blocked_ms"
            published = 0
            resolution = 1
            judge = "all_equal"
            "#,
        )
        .unwrap();
        let call = |rows: &str| {
            let csv = format!("server_blocked_ms\n{rows}");
            std::fs::write(dir.path().join("bigkey.csv"), csv).unwrap();
            let v = judge(&claim, dir.path());
            (Call::of(&claim, &v), v.measured)
        };
        assert_eq!(call("0\n0\n").0, Call::Holds);
        let (edge, measured) = call("0\n1\n");
        assert_eq!(edge, Call::Inconclusive, "{measured}");
        assert!(measured.contains("within the 1 step"), "{measured}");
        assert_eq!(call("1\n2\n").0, Call::Differs);
    }

    #[test]
    fn mean_above_reads_the_interval_not_each_trial() {
        let dir = tempfile::tempdir().unwrap();
        let claim: Claim = toml::from_str(
            r#"
            id = "t"
            experiment = "tsmember"
            seed = "ours"
            text = "t"
            file = "tsmember.csv"
            statistic = "ratio"
            published = 1.0
            judge = "mean_above"
            "#,
        )
        .unwrap();
        let call = |rows: &str| {
            std::fs::write(dir.path().join("tsmember.csv"), format!("ratio\n{rows}")).unwrap();
            let v = judge(&claim, dir.path());
            (Call::of(&claim, &v), v.measured)
        };
        // One trial a hair under 1 among four well above: the mean's interval is still above.
        let (one_under, measured) = call("0.995\n1.08\n1.07\n1.09\n1.06\n");
        assert_eq!(one_under, Call::Holds, "{measured}");
        assert!(measured.contains("95% CI"), "{measured}");
        assert_eq!(call("0.96\n1.04\n0.99\n1.02\n").0, Call::Inconclusive);
        assert_eq!(call("0.95\n0.96\n0.94\n").0, Call::Differs);
        assert_eq!(call("1.2\n").0, Call::Inconclusive);
    }

    #[test]
    fn a_reason_reads_the_first_of_two_columns_that_has_values() {
        let dir = tempfile::tempdir().unwrap();
        let claim: Claim = toml::from_str(
            r#"
            id = "t"
            experiment = "x"
            seed = "ours"
            text = "t"
            file = "t.csv"
            statistic = "a"
            published = 0
            judge = "all_equal"
            why = "came back after {first?later} ms"
            "#,
        )
        .unwrap();
        let write = |csv: &str| std::fs::write(dir.path().join("t.csv"), csv).unwrap();
        write("a,first,later\n1,,90\n");
        assert_eq!(why(&claim, dir.path()), "came back after 90 ms");
        write("a,first,later\n1,42,\n");
        assert_eq!(why(&claim, dir.path()), "came back after 42 ms");
        write("a,first,later\n1,,\n");
        assert!(why(&claim, dir.path()).contains("not measured"));
    }
}
