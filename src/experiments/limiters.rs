//! Custom limiters (`--limiter`) across experiments: the `limiters.csv` every experiment that ran
//! one writes (what each was, so charts and the report need no manifest), and the verdict table
//! REPORT.md shows per custom limiter, from each experiment's own statistics.

use crate::analysis::table::read_typed;
use crate::analysis::AnalysisError;
use crate::experiments::params::ParamError;
use crate::experiments::{ExperimentError, Session};
use crate::limiter::custom::{Algorithm, Anchor};
use crate::limiter::Strategy;
use serde::{Deserialize, Serialize};
use std::fmt::Write;
use std::path::Path;

/// The file, in each experiment's directory.
pub const LIMITERS_CSV: &str = "limiters.csv";

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
        if admitted > self.most + 1.0 {
            (admitted - self.most) / self.most.max(1.0)
        } else if admitted + 1.0 < self.least {
            (self.least - admitted) / self.least.max(1.0)
        } else {
            0.0
        }
    }
}

/// `admitted` against what an exact limiter admits, both ways, with the bound used: within one
/// request of the range reads `within the limit` (over the nearest count in it); above it
/// `over-admits` over the most, below it `under-admits` over the least (a limiter that locks
/// clients out is as wrong as a leaky one).
pub fn judged(admitted: f64, exact: Exact) -> String {
    let range = match exact.least == exact.most {
        true => format!("{:.0}", exact.most),
        false => format!("{:.0}-{:.0}", exact.least, exact.most),
    };
    if admitted > exact.most + 1.0 {
        let r = admitted / exact.most.max(1.0);
        format!(
            "{r:.2} (over-admits: {admitted:.0}, exact admits at most {:.0})",
            exact.most
        )
    } else if admitted + 1.0 < exact.least {
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

/// The verdict table, one row per custom limiter, one column per aspect in first-seen order;
/// empty when no experiment ran a custom limiter.
pub fn table(verdicts: &[Verdict], recorded: &[LimiterRow]) -> String {
    if verdicts.is_empty() {
        return String::new();
    }
    // What each limiter is: its script and invocation, or the library its adapter runs.
    let what = |l: &str| {
        let row = recorded.iter().find(|r| r.strategy.name() == l);
        row.map_or(String::new(), |r| match r.library.is_empty() {
            true => format!("script `{}` ({})", r.script, r.invocation),
            false => format!("process: {}", r.library),
        })
    };
    let mut limiters: Vec<&str> = Vec::new();
    let mut aspects: Vec<&str> = Vec::new();
    for v in verdicts {
        if !limiters.contains(&v.limiter.as_str()) {
            limiters.push(&v.limiter);
        }
        if !aspects.contains(&v.aspect) {
            aspects.push(v.aspect);
        }
    }
    let mut out = String::from(
        "\n## Custom limiters\n\nEach `--limiter`, and each adapter an experiment runs of its own \
         (libraries), beside the built-in strategies, from this run's CSVs (the experiments' sections \
         show the runs). Admission ratios are admitted over what an exact limiter could admit; \
         latencies are set beside the built-in strategy of the same algorithm.\n\n| limiter | what it is |",
    );
    for a in &aspects {
        let _ = write!(out, " {a} |");
    }
    out.push_str("\n|---|---|");
    out.push_str(&"---|".repeat(aspects.len()));
    out.push('\n');
    for l in &limiters {
        let _ = write!(out, "| {l} | {} |", what(l));
        for a in &aspects {
            let cell = (verdicts.iter())
                .find(|v| v.limiter == *l && v.aspect == *a)
                .map_or("not run", |v| v.value.as_str());
            let _ = write!(out, " {cell} |");
        }
        out.push('\n');
    }
    out
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
    fn the_table_pivots_limiters_against_aspects() {
        let v = |limiter: &str, aspect, value: &str| Verdict {
            limiter: limiter.into(),
            aspect,
            value: value.into(),
        };
        let process = LimiterRow {
            strategy: Strategy::Custom(crate::limiter::custom::CustomName::recorded("b").unwrap()),
            algorithm: Algorithm::FixedWindow,
            reference: Strategy::LuaWindow,
            manifest: "b.toml".into(),
            script: "node adapter.js".into(),
            invocation: "process".into(),
            library: "lib 1.2.3 (client 4.5)".into(),
            anchor: "first-hit".into(),
            caller_clock: false,
            probe_calls: 6,
            probe_admitted: 5,
            probe_limit: 5,
        };
        let text = table(
            &[
                v("a", "race", "1.00"),
                v("b", "race", "10.0"),
                v("a", "edge", "2.0"),
            ],
            &[process],
        );
        assert!(
            text.contains("| limiter | what it is | race | edge |"),
            "{text}"
        );
        assert!(text.contains("| a |  | 1.00 | 2.0 |"), "{text}");
        assert!(
            text.contains("| b | process: lib 1.2.3 (client 4.5) | 10.0 | not run |"),
            "{text}"
        );
        assert_eq!(table(&[], &[]), "");
    }

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
        assert_eq!(
            judged(51.0, fifty),
            "1.02 (within the limit: 51, exact admits 50)"
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
        assert_eq!(worst(&[rows[0], rows[3]]), Some(50.0));
    }
}
