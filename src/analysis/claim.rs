//! What a claim is and what a verdict on it is: the vocabulary claims.rs (loading, dispatch) and
//! judge.rs (the numeric judges) share, below both so neither names the other.

use serde::Deserialize;
use std::collections::BTreeMap;

/// Which rows of the claim's file a claim reads: column = value, or `a|b|c` for any of them.
pub type Select = BTreeMap<String, String>;

/// A column name, or a list of them.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(column) => vec![column],
        OneOrMany::Many(columns) => columns,
    })
}

/// One published figure and how to judge it.
#[derive(Debug, Clone, Deserialize)]
pub struct Claim {
    pub id: String,
    pub experiment: String,
    pub seed: String,
    pub text: String,
    /// The seed sentence (or clause) this claim judges, verbatim from the seed's write-up; a
    /// sentence judged by several claims is quoted by each. Only "ours" claims may lack one.
    #[serde(default)]
    pub quote: Option<String>,
    pub file: String,
    pub statistic: String,
    #[serde(default)]
    pub select: Select,
    pub published: f64,
    #[serde(default)]
    pub published_column: Option<String>,
    /// Multiplies what each row should be by this column of the row (e.g. `in_flight`: one
    /// process admits limit x in-flight), so the claim follows the run's parameters.
    #[serde(default)]
    pub times_column: Option<String>,
    #[serde(default)]
    pub tolerance: f64,
    /// Per row, the statistic as a percentage of this column (e.g. refused of checks).
    #[serde(default)]
    pub percent_of: Option<String>,
    /// Per row, the statistic minus this column, or each of these columns (e.g. a stall minus the
    /// probe's own baseline and the time Redis's main thread waited for its core).
    #[serde(default, deserialize_with = "one_or_many")]
    pub minus_column: Vec<String>,
    /// The rows the selection is compared with (`combine`): a GET beside a Lua decision.
    #[serde(default, alias = "denominator")]
    pub other: Option<Select>,
    /// How a selected value and its `other` combine.
    #[serde(default)]
    pub combine: Combine,
    /// Pairs each selected row with the `other` rows equal on these columns (the same run), so
    /// every run is judged beside its own reference; without it the means are compared once.
    #[serde(default)]
    pub pair_by: Vec<String>,
    /// Without `pair_by`: each selected row beside the `other` rows' one value, rather than the
    /// means once (a reference that does not vary run to run, and fewer runs of it).
    #[serde(default)]
    pub per_row: bool,
    /// How a pair's `other` rows reduce to one value (several per-check rows per run).
    #[serde(default)]
    pub other_stat: OtherStat,
    /// Compare with every group of `other` rows by this column ("cheapest of every option").
    #[serde(default)]
    pub among: Option<String>,
    /// Judged per group of selected rows equal on these columns (a configuration's trials): the
    /// group's highest value less its lowest, its spread across the trials.
    #[serde(default)]
    pub spread_by: Vec<String>,
    /// The step the statistic is read in (LATENCY's whole milliseconds), for a judge of every row:
    /// a row that misses by no more than one step could be on either side of the bound, so it
    /// makes the claim inconclusive; only a miss beyond it differs.
    #[serde(default)]
    pub resolution: f64,
    /// For `range`: the published interval, inclusive.
    #[serde(default)]
    pub range: Option<[f64; 2]>,
    pub judge: Judge,
    /// An absolute figure that belongs to the seed's machine (throughput, milliseconds): reported
    /// beside this machine's facts instead of judged.
    #[serde(default)]
    pub machine_dependent: bool,
    /// For a machine-dependent figure: the claims that judge what it says that does not depend on
    /// the machine (the figure itself is only shown beside this machine's facts).
    #[serde(default)]
    pub judged_by: Vec<String>,
    /// Why this run differs from the seed, when it does; `{column}` is the selected rows' mean of
    /// that column, so the reason quotes this run's own measurement.
    #[serde(default)]
    pub why: Option<String>,
    /// How the reason knows what it says; required beside `why`.
    #[serde(default)]
    pub basis: Option<Basis>,
    /// For a `tested` reason: the claims that judge the variation testing it.
    #[serde(default)]
    pub tested_by: Vec<String>,
}

impl Claim {
    /// A claim built in code rather than read from analysis/claims.toml (a custom limiter's):
    /// every option at its default, to be set by the caller.
    pub fn generated(
        id: String,
        experiment: &str,
        text: String,
        file: &str,
        statistic: &str,
    ) -> Claim {
        Claim {
            id,
            experiment: experiment.into(),
            seed: LIMITER_SEED.into(),
            text,
            quote: None,
            file: file.into(),
            statistic: statistic.into(),
            select: Select::new(),
            published: 0.0,
            published_column: None,
            times_column: None,
            tolerance: 0.0,
            percent_of: None,
            minus_column: Vec::new(),
            other: None,
            combine: Combine::Ratio,
            pair_by: Vec::new(),
            per_row: false,
            other_stat: OtherStat::Mean,
            among: None,
            spread_by: Vec::new(),
            resolution: 0.0,
            range: None,
            judge: Judge::AllEqual,
            machine_dependent: false,
            judged_by: Vec::new(),
            why: None,
            basis: None,
            tested_by: Vec::new(),
        }
    }
}

/// The `seed` of a custom limiter's claims: what they judge is implied by the limiter's algorithm
/// and manifest, not published by a write-up.
pub const LIMITER_SEED: &str = "limiter";

/// A claim about one custom limiter (`--limiter`, or an adapter an experiment runs of its own),
/// generated from what its algorithm and manifest imply and judged by the seeds' judge.
#[derive(Debug, Clone)]
pub struct LimiterClaim {
    /// The limiter's name: its manifest's.
    pub limiter: String,
    /// The column of REPORT.md's Custom limiters table it fills, in a few words.
    pub aspect: String,
    pub claim: Claim,
}

/// How a reason knows what it says.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// A variation this run measured tests it: the claims in `tested_by` judge that variation,
    /// and the reason stands only while they hold.
    Tested,
    /// It quotes this run's own columns, without a variation that would test the cause.
    Observed,
    /// Nothing in the run tests it yet.
    Hypothesis,
}

/// How a claim is judged.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Judge {
    /// Every selected row equals `published` (or its `published_column`).
    AllEqual,
    /// The mean (or ratio) is within `tolerance` (relative) of `published`.
    MeanWithin,
    /// Every selected row is at least `published` (or its `published_column`).
    AllAtLeast,
    /// Every selected row is strictly above `published` (or its `published_column`): "never
    /// empties" is a bucket with tokens left in every trial.
    AllAbove,
    /// Every selected row is at most `published` (or its `published_column`): "no run ever
    /// exceeded", which a mean cannot judge.
    AllAtMost,
    /// Every run lies inside `range`: a published range is what each run measured.
    Range,
    /// "Cheaper" / "faster": every run below `published`, and the mean further below it than
    /// the runs' own spread (one standard deviation), so noise cannot pass for a difference.
    Below,
    /// "Costs more" / "beats": as `Below`, above `published`.
    Above,
    /// A mean effect ("burstier arrivals admit more"): the mean's whole 95% interval above
    /// `published`; one trial on the other side is spread, not a difference.
    MeanAbove,
    /// Seed 000's MONITOR order.
    TraceOrder,
    /// Seed 000's MONITOR writes: pairs storing one value, each a token below the pair before.
    TraceWrites,
}

/// How a selected value combines with its `other` value.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Combine {
    #[default]
    Ratio,
    Difference,
}

/// How several `other` rows reduce to the one a selected row is set beside.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum OtherStat {
    #[default]
    Mean,
    Median,
    /// The 99th percentile (nearest rank): the reference's tail, scheduling noise included.
    P99,
}

/// The verdict on one claim.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    /// What this run measured, in words.
    pub measured: String,
    /// Some(true) holds, Some(false) differs, None no data.
    pub holds: Option<bool>,
    /// It does not hold, but the trials' 95% confidence interval reaches what the seed said: the
    /// run cannot tell a difference from its own noise.
    pub inconclusive: bool,
    /// The judged values as numbers (claims.json), when the judge is numeric.
    pub figures: Option<Box<Figures>>,
}

/// A numeric verdict's values: what a reader who re-judges needs without parsing `measured`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    /// What the values are: the column, and how it was combined ("ratio of a to b's mean").
    pub statistic: String,
    pub n: usize,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// The mean's 95% confidence interval, for two or more values.
    pub ci: Option<(f64, f64)>,
    /// What the claim accepts, low and high; None where unbounded or set per row by a column.
    pub accepted: (Option<f64>, Option<f64>),
    /// The values' unit, from the column's name; None for ratios and shares.
    pub unit: Option<String>,
}

/// How the report names a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Call {
    Holds,
    Differs,
    Inconclusive,
    /// An absolute figure of another machine: shown beside this machine's facts, not judged.
    MachineDependent,
    NoData,
}

impl Call {
    /// Every verdict, in the judge's order.
    pub const ALL: [Call; 5] = [
        Call::Holds,
        Call::Differs,
        Call::Inconclusive,
        Call::MachineDependent,
        Call::NoData,
    ];

    /// "4 hold, 1 differ": how many of `calls` got each verdict (None: the claim's experiment did
    /// not run), as REPORT.md counts them.
    pub fn counts(calls: &[Option<Call>]) -> String {
        let words = [
            "hold",
            "differ",
            "inconclusive",
            "machine-dependent",
            "without data",
        ];
        let named = (Call::ALL.into_iter().map(Some).zip(words)).chain([(None, "not run")]);
        let counts: Vec<String> = named
            .map(|(call, word)| (calls.iter().filter(|c| **c == call).count(), word))
            .filter(|(n, _)| *n > 0)
            .map(|(n, word)| format!("{n} {word}"))
            .collect();
        counts.join(", ")
    }

    pub fn of(claim: &Claim, verdict: &Verdict) -> Call {
        match verdict.holds {
            None => Call::NoData,
            Some(_) if claim.machine_dependent => Call::MachineDependent,
            Some(true) => Call::Holds,
            Some(false) if verdict.inconclusive => Call::Inconclusive,
            Some(false) => Call::Differs,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Call::Holds => "holds",
            Call::Differs => "DIFFERS",
            Call::Inconclusive => "inconclusive",
            Call::MachineDependent => "machine-dependent",
            Call::NoData => "no data",
        }
    }
}

impl Verdict {
    pub(super) fn no_data(why: impl Into<String>) -> Self {
        Verdict {
            measured: why.into(),
            ..Verdict::default()
        }
    }

    pub(super) fn fails(why: impl Into<String>) -> Self {
        Verdict {
            measured: why.into(),
            holds: Some(false),
            ..Verdict::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_name_each_verdict_once_in_the_judges_order() {
        let calls = [
            Some(Call::Differs),
            Some(Call::Holds),
            None,
            Some(Call::Holds),
        ];
        assert_eq!(Call::counts(&calls), "2 hold, 1 differ, 1 not run");
        assert_eq!(Call::counts(&[]), "");
    }
}
