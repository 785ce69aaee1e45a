//! Custom limiters (`--limiter`) across experiments: the `limiters.csv` every experiment that ran
//! one writes (what each was, so charts and the report need no manifest), and the verdict table
//! REPORT.md shows per custom limiter, from each experiment's own statistics.

use crate::analysis::claims::{Basis, Claim, Judge, LimiterClaim, Select};
use crate::analysis::table::{matches, read_rows, read_typed, Row};
use crate::analysis::AnalysisError;
use crate::experiments::params::ParamError;
use crate::experiments::{ExperimentError, Session};
use crate::limiter::custom::promise::{Promise, Promised};
use crate::limiter::custom::{Algorithm, Anchor};
use crate::limiter::Strategy;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The file, in each experiment's directory.
pub const LIMITERS_CSV: &str = "limiters.csv";

/// What each custom limiter's manifest promises (`[promises]`), beside limiters.csv.
pub const PROMISES_CSV: &str = "promises.csv";

/// One promise a custom limiter's manifest declared, quoting its library's documentation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PromiseRow {
    /// The manifest's name: the strategy column of the experiment's other CSVs.
    pub strategy: Strategy,
    /// What it promises: fails, reconnects, survives-script-loss or follows-promotion.
    pub promise: Promised,
    /// `open` or `closed` for fails; `true` or `false` for the others (false: not promised, so
    /// not judged).
    pub value: String,
    /// The library's own documentation, word for word: the quote of the claim that judges it.
    pub quote: String,
    /// Where the quote is written.
    pub source: String,
}

impl PromiseRow {
    /// Whether it promises the behaviour (false: disclaimed, not judged).
    pub fn is_made(&self) -> bool {
        self.value != "false"
    }

    pub fn of(strategy: Strategy, p: &Promise) -> Self {
        PromiseRow {
            strategy,
            promise: p.promise,
            value: p.value.clone(),
            quote: p.quote.clone(),
            source: p.source.clone(),
        }
    }
}

/// The `invocation` of a limiter process in limiters.csv (and its mode in scripts' survival).
pub const PROCESS_INVOCATION: &str = "process";

/// One custom limiter of the run, as its manifest described it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LimiterRow {
    /// The manifest's name: the strategy column of the experiment's other CSVs.
    pub strategy: Strategy,
    /// The algorithm its manifest declares (token bucket, fixed window, sliding log, ...).
    pub algorithm: Algorithm,
    /// The built-in strategy of the same algorithm, which it is measured against.
    pub reference: Strategy,
    /// The manifest's path and the script it names, as given.
    pub manifest: String,
    /// The Lua script the manifest names, as given; a limiter process's command.
    pub script: String,
    /// How it is invoked: `evalsha-eval`, `fcall-load`, ...; `process` for a limiter process.
    pub invocation: String,
    /// A limiter process's library, version and Redis client, as its adapter's handshake said
    /// (empty for a script).
    #[serde(default)]
    pub library: String,
    /// Where its windows start (`epoch`, `origin`, `first-hit`; empty for an algorithm without
    /// windows and in runs before the manifest could say).
    #[serde(default)]
    pub anchor: String,
    /// Whether its manifest hands it the caller's clock.
    pub caller_clock: bool,
    /// The check before the run: calls one at a time on a fresh key with `{limit}` = probe_limit.
    pub probe_calls: u64,
    /// Of those calls, the ones it admitted: probe_limit for a limiter that keeps its limit.
    pub probe_admitted: u64,
    /// The limit the probe gave it.
    pub probe_limit: u64,
}

impl LimiterRow {
    /// Whether it was a limiter process.
    pub fn is_process(&self) -> bool {
        self.invocation == PROCESS_INVOCATION
    }

    /// What it is, in the report: its script and invocation, or the library its adapter runs.
    pub fn what(&self) -> String {
        match self.library.is_empty() {
            true => format!("script `{}` ({})", self.script, self.invocation),
            false => format!("process: {}", self.library),
        }
    }

    /// Whether it is the do-nothing adapter (its handshake names the library `noop`): its latency
    /// is what the process boundary alone costs, beside any library's in the same run.
    pub fn is_boundary(&self) -> bool {
        self.is_process() && self.library.split(' ').next() == Some("noop")
    }
}

/// The custom limiters recorded in an experiment's directory (none if it ran none).
pub fn recorded(dir: &Path) -> Result<Vec<LimiterRow>, AnalysisError> {
    let path = dir.join(LIMITERS_CSV);
    match path.is_file() {
        true => read_typed(&path),
        false => Ok(Vec::new()),
    }
}

/// One cell of the verdict table: what one experiment says about one custom limiter.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub limiter: String,
    /// The column: what was asked, in a few words.
    pub aspect: &'static str,
    pub value: String,
}

/// An experiment's verdicts from its results directory.
pub type Verdicts = fn(&Path) -> Result<Vec<Verdict>, AnalysisError>;

/// No verdicts: the default of experiments that take no custom limiters.
pub fn none(_: &Path) -> Result<Vec<Verdict>, AnalysisError> {
    Ok(Vec::new())
}

/// An experiment's claims about one custom limiter recorded in its results directory.
pub type Claims = fn(&ClaimsAt) -> Result<Vec<LimiterClaim>, AnalysisError>;

/// No claims: the default of experiments that take no custom limiters.
pub fn no_claims(_: &ClaimsAt) -> Result<Vec<LimiterClaim>, AnalysisError> {
    Ok(Vec::new())
}

/// The promises recorded in an experiment's directory (none if no manifest declared any).
pub fn promised(dir: &Path) -> Result<Vec<PromiseRow>, AnalysisError> {
    let path = dir.join(PROMISES_CSV);
    match path.is_file() {
        true => read_typed(&path),
        false => Ok(Vec::new()),
    }
}

/// One custom limiter in one experiment's results: what its claims are generated from.
pub struct ClaimsAt<'a> {
    /// The experiment's id, as its claims name it (libraries writes race's rows under its own).
    pub experiment: &'static str,
    pub dir: &'a Path,
    pub limiter: &'a LimiterRow,
    /// What its manifest promised (promises.csv's rows of this limiter).
    pub promises: Vec<PromiseRow>,
}

/// How a behaviour a library may or may not promise is judged.
#[derive(Debug, Clone, PartialEq)]
pub enum Promising<'a> {
    /// Not declared: judged as ratelab's baseline, with no quote.
    Undeclared,
    /// Declared (a side of `fails`, or true): judged, quoting the documentation.
    Made(&'a PromiseRow),
    /// Declared false: not judged.
    Disclaimed,
}

impl ClaimsAt<'_> {
    /// What the manifest declared of `what`.
    pub fn promise(&self, what: Promised) -> Promising<'_> {
        match self.promises.iter().find(|p| p.promise == what) {
            None => Promising::Undeclared,
            Some(p) if !p.is_made() => Promising::Disclaimed,
            Some(p) => Promising::Made(p),
        }
    }

    /// `claims` as the manifest's promise of `what` has them judged: none when it disclaimed it,
    /// each quoting the documentation when it made it, as they are when it said nothing.
    pub fn as_promised(&self, what: Promised, claims: Vec<LimiterClaim>) -> Vec<LimiterClaim> {
        match self.promise(what) {
            Promising::Disclaimed => Vec::new(),
            Promising::Undeclared => claims,
            Promising::Made(p) => (claims.into_iter())
                .map(|mut c| {
                    c.claim.quote = Some(p.quote.clone());
                    c.claim.text = format!(
                        "{} (as its documentation promises: {})",
                        c.claim.text, p.source
                    );
                    c
                })
                .collect(),
        }
    }

    /// Claims reading `file`'s rows whose `by` column names the limiter, with those rows (none
    /// when the file is missing).
    pub fn of(&self, file: &'static str, by: &'static str) -> Result<ClaimsOf<'_>, AnalysisError> {
        let path = self.dir.join(file);
        let rows = match path.is_file() {
            true => read_rows(&path)?,
            false => Vec::new(),
        };
        Ok(ClaimsOf {
            limiter: self.limiter,
            experiment: self.experiment,
            file,
            by,
            rows,
        })
    }
}

/// Where the claims about one limiter in one experiment read: `file`'s rows whose `by` column
/// names it.
pub struct ClaimsOf<'a> {
    pub limiter: &'a LimiterRow,
    pub experiment: &'static str,
    pub file: &'static str,
    pub by: &'static str,
    /// The file's raw rows, as the judge reads them.
    pub rows: Vec<Row>,
}

impl ClaimsOf<'_> {
    /// A claim `limiter.<name>.<experiment>.<what>` on `statistic` of the limiter's rows, for the
    /// table's column `aspect`; the caller sets its judge, figure and further selection.
    pub fn claim(&self, what: &str, aspect: String, text: String, statistic: &str) -> LimiterClaim {
        let name = self.limiter.strategy.to_string();
        let id = format!("limiter.{name}.{}.{what}", self.experiment);
        let mut claim = Claim::generated(id, self.experiment, text, self.file, statistic);
        claim.select.insert(self.by.into(), name.clone());
        LimiterClaim {
            limiter: name,
            aspect,
            claim,
        }
    }

    /// The claim `c` about every row of the limiter, when it has any.
    pub fn of_every_row(&self, c: RowClaim) -> Option<LimiterClaim> {
        let name = self.limiter.strategy.to_string();
        let mine = |r: &&Row| r.get(self.by) == Some(&name) && matches(r, &c.select);
        self.rows.iter().find(mine)?;
        let mut claim = self.claim(c.what, c.aspect.into(), c.text, c.statistic);
        claim.claim.select.extend(c.select);
        claim.claim.judge = c.judge;
        claim.claim.published = c.published;
        claim.claim.published_column = c.published_column.map(String::from);
        claim.claim.why = Some(c.why.into());
        claim.claim.basis = Some(Basis::Observed);
        Some(claim)
    }
}

/// A claim about every row of a limiter in one file: what it reads and accepts, and what its
/// reason observes when the limiter misses.
pub struct RowClaim<'a> {
    /// The end of its id, `limiter.<name>.<experiment>.<what>`.
    pub what: &'a str,
    /// The Custom limiters table's column it fills.
    pub aspect: &'a str,
    pub text: String,
    /// The rows it reads beside the limiter's own (`phase = restarted`).
    pub select: Select,
    pub statistic: &'a str,
    pub judge: Judge,
    pub published: f64,
    pub published_column: Option<&'a str>,
    /// Its reason, an observation of the rows' columns (no typed number).
    pub why: &'a str,
}

/// Exactness under concurrency, with no slack: per scenario of `scenarios` (its `scenario` value
/// and words) the limiter ran, and per limit, cost and checks it ran at, every trial admits
/// exactly what an exact limiter admits from a fresh state that never refills within the trial:
/// limit / cost whole requests (`limit_column`), or every check when there are fewer. One request
/// more is the over-admission of a limiter that counts what it cannot see; one fewer locks a
/// client out.
pub fn exact_claims(
    of: &ClaimsOf,
    rows: &[Row],
    [limit_column, checks_column]: [&str; 2],
    scenarios: &[(&str, &str)],
) -> Vec<LimiterClaim> {
    let name = of.limiter.strategy.to_string();
    let mut out = Vec::new();
    for &(scenario, words) in scenarios {
        let mine = (rows.iter()).filter(|r| {
            r.get(of.by) == Some(&name)
                && (scenario.is_empty() || r.get("scenario").map(String::as_str) == Some(scenario))
        });
        let mut runs: Vec<(Option<String>, Option<String>, Option<String>)> = Vec::new();
        for r in mine {
            let at = |c: &str| r.get(c).cloned();
            // A file without a cost column asks one token a check.
            let run = (at(limit_column), at("cost"), at(checks_column));
            if !runs.contains(&run) {
                runs.push(run);
            }
        }
        for (limit, cost, checks) in &runs {
            let (Some(limit), Some(checks)) = (limit, checks) else {
                continue;
            };
            let (Ok(l), Ok(c), Ok(n)) = (
                limit.parse::<u64>(),
                cost.as_deref().unwrap_or("1").parse::<u32>(),
                checks.parse(),
            ) else {
                continue;
            };
            let exact = Exact::at_cost(l, c, n).most.min(n as f64);
            // Named by the run when the limiter ran at several.
            let what = match (scenario.is_empty(), runs.len()) {
                (true, 1) => "exact".to_string(),
                (true, _) => format!("exact-limit-{l}-cost-{c}-checks-{n}"),
                (false, 1) => format!("{scenario}-exact"),
                (false, _) => format!("{scenario}-exact-limit-{l}-cost-{c}-checks-{n}"),
            };
            let costs = match c {
                1 => String::new(),
                c => format!(" of cost {c}"),
            };
            let text = format!(
                "{words}: every trial admits exactly what an exact {} admits of {n} checks{costs} on a \
                 fresh key with a limit of {l}: {exact}, not one more or fewer",
                of.limiter.algorithm.name()
            );
            let aspect = match scenario.is_empty() {
                true => format!("{}: exact", of.experiment),
                false => format!("{}: exact", words),
            };
            let mut claim = of.claim(&what, aspect, text, "admitted");
            let select = &mut claim.claim.select;
            if !scenario.is_empty() {
                select.insert("scenario".into(), scenario.into());
            }
            select.insert(limit_column.into(), limit.clone());
            select.insert(checks_column.into(), checks.clone());
            if let Some(cost) = cost {
                select.insert("cost".into(), cost.clone());
            }
            claim.claim.judge = Judge::AllEqual;
            claim.claim.published = exact;
            claim.claim.why = Some(
                "its trials admitted {admitted} on average where an exact limiter admits what the \
                 claim accepts; the CSV has each trial"
                    .into(),
            );
            claim.claim.basis = Some(Basis::Observed);
            out.push(claim);
        }
    }
    out
}

/// Why `cost` tokens a request cannot be asked of the built-in strategies in `lists` (each a
/// parameter's name and value): they decide one request per check, so above 1 only custom
/// limiters may run, and the error says how to run them alone.
pub fn cost_for_builtins(cost: u32, lists: &[(&str, &[Strategy])]) -> Result<(), String> {
    let builtins: Vec<String> = (lists.iter().flat_map(|(_, l)| l.iter()))
        .filter(|s| !s.is_custom())
        .map(|s| s.to_string())
        .collect();
    if cost <= 1 || builtins.is_empty() {
        return Ok(());
    }
    let alone: Vec<String> = lists.iter().map(|(n, _)| format!("--set {n}=[]")).collect();
    Err(format!(
        "cost = {cost}: the built-in strategies ({}) decide one request per check and take no cost; \
         only custom limiters (--limiter) do. Run them alone: {}",
        builtins.join(", "),
        alone.join(" ")
    ))
}

/// A `cost` above 1 with no custom limiter to ask it of (validation refused it to the built-ins).
pub fn cost_needs_limiters(s: &Session, cost: u32) -> Result<(), ExperimentError> {
    if cost <= 1 || !s.ctx.limiters.is_empty() {
        return Ok(());
    }
    Err(ParamError::Invalid {
        experiment: s.id.into(),
        reason: format!("cost = {cost} is asked of custom limiters: give one with --limiter"),
    }
    .into())
}

/// The most an exact limiter of `algorithm` can admit over `span_ms` from a fresh key: a window
/// per window (a fixed one aligned to a clock may straddle one more boundary; one opened by the
/// first request cannot), a bucket its capacity and what refills meanwhile.
pub fn most_admitted(
    algorithm: Algorithm,
    anchor: Anchor,
    limit: u64,
    window_ms: u64,
    refill_per_s: f64,
    span_ms: f64,
) -> f64 {
    let limit_f = limit as f64;
    let windows = (span_ms / window_ms.max(1) as f64).floor();
    match (algorithm, anchor) {
        (Algorithm::TokenBucket, _) => limit_f + refill_per_s * span_ms / 1000.0,
        (Algorithm::Gcra, _) => limit_f + limit_f * span_ms / window_ms.max(1) as f64,
        (Algorithm::FixedWindow, Anchor::FirstHit) => limit_f * (windows + 1.0),
        (Algorithm::FixedWindow, _) => limit_f * (windows + 2.0),
        (Algorithm::SlidingLog | Algorithm::SlidingWindow, _) => limit_f * (windows + 1.0),
    }
}

/// What an exact limiter of a custom limiter's algorithm admits in one trial: at least `least`
/// (from a fresh key every algorithm admits its limit, or every request if there are fewer) and
/// at most `most`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exact {
    pub least: f64,
    pub most: f64,
}

impl Exact {
    /// A trial that admits exactly the limit, or every request when there are fewer.
    pub fn limit(limit: u64, requests: u64) -> Self {
        let least = limit.min(requests) as f64;
        Exact {
            least,
            most: limit as f64,
        }
    }

    /// [`limit`](Self::limit) for requests of `cost` tokens each: an exact limiter admits whole
    /// requests, limit / cost of them (a remainder smaller than a request stays unspent).
    pub fn at_cost(limit: u64, cost: u32, requests: u64) -> Self {
        Self::limit(limit / u64::from(cost.max(1)), requests)
    }

    /// How far `admitted` is outside the range, as a share of the bound it crossed (0 inside).
    fn off_by(self, admitted: f64) -> f64 {
        if admitted > self.most {
            (admitted - self.most) / self.most.max(1.0)
        } else if admitted < self.least {
            (self.least - admitted) / self.least.max(1.0)
        } else {
            0.0
        }
    }
}

/// `admitted` against what an exact limiter admits, both ways, with the bound used: inside the
/// range reads `within the limit` (over the nearest count in it); above it, by one request or
/// more, `over-admits` over the most, below it `under-admits` over the least (a limiter that
/// locks clients out is as wrong as a leaky one).
pub fn judged(admitted: f64, exact: Exact) -> String {
    let range = match exact.least == exact.most {
        true => format!("{:.0}", exact.most),
        false => format!("{:.0}-{:.0}", exact.least, exact.most),
    };
    if admitted > exact.most {
        let r = admitted / exact.most.max(1.0);
        format!(
            "{r:.2} (over-admits: {admitted:.0}, exact admits at most {:.0})",
            exact.most
        )
    } else if admitted < exact.least {
        let r = admitted / exact.least.max(1.0);
        format!(
            "{r:.2} (under-admits: {admitted:.0}, exact admits at least {:.0})",
            exact.least
        )
    } else {
        // Over the nearest count an exact limiter admits: 1.00 anywhere inside the range.
        let r = admitted / admitted.clamp(exact.least, exact.most).max(1.0);
        format!("{r:.2} (within the limit: {admitted:.0}, exact admits {range})")
    }
}

/// The row of those `keep` selects farthest outside what an exact limiter admits (either way),
/// else the one that admitted most over its bound; with its exact range.
pub fn farthest<R>(
    rows: &[R],
    keep: impl Fn(&R) -> bool,
    judge: impl Fn(&R) -> (f64, Exact),
) -> Option<(&R, f64, Exact)> {
    let scored = rows.iter().filter(|r| keep(r)).map(|r| {
        let (admitted, exact) = judge(r);
        (r, admitted, exact)
    });
    scored.max_by(|a, b| {
        let key = |&(_, admitted, exact): &(&R, f64, Exact)| {
            (exact.off_by(admitted), admitted / exact.most.max(1.0))
        };
        key(a)
            .partial_cmp(&key(b))
            .unwrap_or(std::cmp::Ordering::Equal)
    })
}

/// The mean of `value` over the rows of `strategy` that `keep` selects, if there are any.
pub fn mean_of<R>(rows: &[R], keep: impl Fn(&R) -> bool, value: impl Fn(&R) -> f64) -> Option<f64> {
    let picked: Vec<f64> = rows.iter().filter(|r| keep(r)).map(value).collect();
    (!picked.is_empty()).then(|| picked.iter().sum::<f64>() / picked.len() as f64)
}

/// The row with the largest `value` among those `keep` selects.
pub fn max_by<R>(rows: &[R], keep: impl Fn(&R) -> bool, value: impl Fn(&R) -> f64) -> Option<&R> {
    (rows.iter().filter(|r| keep(r))).max_by(|a, b| value(a).total_cmp(&value(b)))
}

/// "x1.23 of lua-bucket (4.10 vs 3.33 µs)": a custom limiter's mean against its reference's.
pub fn against_reference(
    custom: Option<f64>,
    reference: Option<f64>,
    name: Strategy,
    unit: &str,
) -> String {
    match (custom, reference) {
        (Some(c), Some(r)) if r > 0.0 => {
            format!("x{:.2} of {name} ({c:.2} vs {r:.2} {unit})", c / r)
        }
        (Some(c), _) => format!("{c:.2} {unit} ({name} not measured)"),
        _ => "no runs".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_noop_adapter_measures_the_boundary() {
        let row = |invocation: &str, library: &str| LimiterRow {
            strategy: Strategy::Custom(crate::limiter::custom::CustomName::recorded("x").unwrap()),
            algorithm: Algorithm::FixedWindow,
            reference: Strategy::LuaWindow,
            manifest: "x.toml".into(),
            script: "node adapter.js".into(),
            invocation: invocation.into(),
            library: library.into(),
            anchor: "first-hit".into(),
            caller_clock: false,
            probe_calls: 6,
            probe_admitted: 5,
            probe_limit: 5,
        };
        assert!(row("process", "noop 1 (node 20.20.2)").is_boundary());
        assert!(!row("process", "noopish 1 (ioredis 6)").is_boundary());
        assert!(!row("process", "rate-limiter-flexible 11.4.0 (ioredis 6.1.0)").is_boundary());
        assert!(!row("evalsha-eval", "").is_boundary());
    }

    #[test]
    fn exact_limiters_admit_at_most_their_algorithm_allows() {
        assert_eq!(
            most_admitted(
                Algorithm::SlidingLog,
                Anchor::Epoch,
                50,
                10_000,
                0.0,
                1000.0
            ),
            50.0
        );
        assert_eq!(
            most_admitted(
                Algorithm::FixedWindow,
                Anchor::Epoch,
                50,
                10_000,
                0.0,
                1000.0
            ),
            100.0
        );
        // A window opened by the first request has no boundary inside its first window.
        assert_eq!(
            most_admitted(
                Algorithm::FixedWindow,
                Anchor::FirstHit,
                50,
                10_000,
                0.0,
                1000.0
            ),
            50.0
        );
        assert_eq!(
            most_admitted(Algorithm::Gcra, Anchor::Epoch, 50, 10_000, 0.0, 1000.0),
            55.0
        );
        assert_eq!(
            most_admitted(
                Algorithm::TokenBucket,
                Anchor::Epoch,
                100,
                1000,
                100.0,
                500.0
            ),
            150.0
        );
        let fifty = Exact::limit(50, 1000);
        // One request over is an over-admission: the slack of a limit + 1 bug is no slack.
        assert_eq!(
            judged(51.0, fifty),
            "1.02 (over-admits: 51, exact admits at most 50)"
        );
        assert_eq!(
            judged(49.0, fifty),
            "0.98 (under-admits: 49, exact admits at least 50)"
        );
        assert_eq!(
            judged(60.0, fifty),
            "1.20 (over-admits: 60, exact admits at most 50)"
        );
        assert_eq!(
            judged(30.0, fifty),
            "0.60 (under-admits: 30, exact admits at least 50)"
        );
        // Five tokens a request: a bucket of 100 takes 20 requests, and 100 is 5x too many.
        assert_eq!(
            judged(100.0, Exact::at_cost(100, 5, 1000)),
            "5.00 (over-admits: 100, exact admits at most 20)"
        );
        assert_eq!(Exact::at_cost(100, 3, 1000), Exact::limit(33, 1000));
        // Fewer requests than the limit: admitting them all is exact.
        assert!(judged(20.0, Exact::limit(50, 20)).contains("within"));
        let range = Exact {
            least: 50.0,
            most: 100.0,
        };
        assert_eq!(
            judged(75.0, range),
            "1.00 (within the limit: 75, exact admits 50-100)"
        );
    }

    #[test]
    fn the_farthest_row_is_the_worst_either_way() {
        let rows = [(50.0, 50.0), (60.0, 50.0), (10.0, 50.0), (49.0, 50.0)];
        let judge = |r: &(f64, f64)| (r.0, Exact::limit(r.1 as u64, 1000));
        let worst = |rows: &[(f64, f64)]| farthest(rows, |_| true, judge).map(|w| w.1);
        // 10 of 50 (80% short) is farther than 60 of 50 (20% over).
        assert_eq!(worst(&rows), Some(10.0));
        assert_eq!(worst(&rows[..2]), Some(60.0));
        // One short of 50 is a miss too: no slack either way.
        assert_eq!(worst(&[rows[0], rows[3]]), Some(49.0));
    }
}
