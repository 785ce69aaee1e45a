//! A reason says how it knows: a variation this run measured (tested, and shown refuted when the
//! claim judging that variation differs), an observation of this run's columns, or a hypothesis.
//! A machine-dependent figure names the claims that judge what it says on any machine.

use super::claims::{self, Basis, Call, Claim};
use super::Judged;
use std::collections::BTreeMap;
use std::path::Path;

/// Every claim's verdict by id, for reasons and figures that lean on other claims.
type Calls = BTreeMap<String, Option<Call>>;

/// Fills each claim's reason, and a machine-dependent figure's judged part, now that every claim
/// has its verdict. A claim outside what it accepts owes a reason: its claims file's, else what its
/// columns show (an inconclusive one: its noise), so none goes unexplained.
pub(super) fn attach(judged: &mut [Judged], dir: &Path) {
    let calls: Calls = judged
        .iter()
        .map(|j| (j.claim.id.clone(), j.call))
        .collect();
    for j in judged.iter_mut() {
        let Some(call) = j.call else { continue };
        if call == Call::MachineDependent {
            j.measured.push_str(&judged_part(j.claim, &calls));
        }
        if !owes_reason(call, j.outside) {
            continue;
        }
        let mut why = claims::why(j.claim, &dir.join(&j.claim.experiment));
        let (kind, lead) = match (why.is_empty(), call) {
            (false, _) => lead(j.claim, &calls),
            (true, Call::Inconclusive) => {
                why = NOISE.into();
                (Kind::Observed, "observed: ".into())
            }
            (true, Call::MachineDependent) => {
                why = ANOTHER_MACHINE.into();
                (Kind::Hypothesis, "hypothesis: ".into())
            }
            // No verdict goes without a reason: with no cause in the claims file, the reason is
            // what the claim's own columns show, said as an observation and no more.
            (true, _) => {
                why = no_cause_given(j.claim);
                (Kind::Observed, "observed: ".into())
            }
        };
        j.kind = Some(kind);
        j.why = format!("{lead}{why}");
    }
}

/// What an inconclusive verdict's own numbers show when the claims file says nothing more.
const NOISE: &str =
    "the runs scatter more than the claim's margin: their 95% interval (measured here) reaches \
    both inside and outside what it accepts, so more runs, not a cause, would decide it";

/// A differing claim's reason when the claims file gives no cause: which of this run's columns put
/// it outside, and that nothing here tests why.
fn no_cause_given(claim: &Claim) -> String {
    format!(
        "`{}` of the claim's rows in {}/{} reads outside what it accepts (measured here); the \
         claims file gives no cause and no variation of this run tests one",
        claim.statistic.replace('?', " or "),
        claim.experiment,
        claim.file
    )
}

/// A machine-dependent figure off the seed's, when the claims file says nothing more.
const ANOTHER_MACHINE: &str =
    "an absolute figure of the seed's machine, set beside this one's facts; what it \
    says on any machine is judged by the claims named beside it";

/// Whether a verdict leaves the claim outside what it accepts, so that it needs a reason.
pub(super) fn owes_reason(call: Call, outside: bool) -> bool {
    matches!(call, Call::Differs | Call::Inconclusive)
        || (call == Call::MachineDependent && outside)
}

/// How a reason knows what it says, as the headline counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Kind {
    Tested,
    Refuted,
    Unconfirmed,
    Observed,
    Hypothesis,
}

impl Kind {
    pub(super) const ALL: [Kind; 5] = [
        Kind::Tested,
        Kind::Refuted,
        Kind::Unconfirmed,
        Kind::Observed,
        Kind::Hypothesis,
    ];

    /// Its name in claims.json.
    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::Tested => "tested",
            Kind::Refuted => "refuted",
            Kind::Unconfirmed => "unconfirmed",
            Kind::Observed => "observed",
            Kind::Hypothesis => "hypothesis",
        }
    }

    /// The headline's words for `n` reasons of this kind.
    pub(super) fn counted(self, n: usize) -> String {
        let word = match self {
            Kind::Tested => "tested by a variation that holds",
            Kind::Refuted => "refuted by their own variation",
            Kind::Unconfirmed => "tested by a variation that is not conclusive",
            Kind::Observed => "observed in this run's columns",
            Kind::Hypothesis if n == 1 => "hypothesis",
            Kind::Hypothesis => "hypotheses",
        };
        format!("{n} {word}")
    }
}

fn label(calls: &Calls, id: &str) -> &'static str {
    calls
        .get(id)
        .copied()
        .flatten()
        .map_or("not run", Call::label)
}

fn named(ids: &[&String], calls: &Calls) -> String {
    let each: Vec<String> = ids
        .iter()
        .map(|id| format!("`{id}` {}", label(calls, id)))
        .collect();
    each.join(", ")
}

/// "; judged on any machine by `x` holds": where the reader finds the verdict a figure cannot give.
fn judged_part(claim: &Claim, calls: &Calls) -> String {
    // Plain ids: the measured cell is compared as text with the HTML page's.
    let each: Vec<String> = (claim.judged_by.iter())
        .map(|id| format!("{id} {}", label(calls, id)))
        .collect();
    format!("; judged on any machine by {}", each.join(", "))
}

/// The reason's kind and the words that lead it.
fn lead(claim: &Claim, calls: &Calls) -> (Kind, String) {
    let call = |id: &String| calls.get(id).copied().flatten();
    match claim.basis {
        Some(Basis::Tested) => {
            let refuting: Vec<&String> = (claim.tested_by.iter())
                .filter(|id| call(id) == Some(Call::Differs))
                .collect();
            let open: Vec<&String> = (claim.tested_by.iter())
                .filter(|id| call(id) != Some(Call::Holds))
                .collect();
            if !refuting.is_empty() {
                (
                    Kind::Refuted,
                    format!("**refuted** by {}: ", named(&refuting, calls)),
                )
            } else if !open.is_empty() {
                (
                    Kind::Unconfirmed,
                    format!("tested, not confirmed ({}): ", named(&open, calls)),
                )
            } else {
                let all: Vec<&String> = claim.tested_by.iter().collect();
                (Kind::Tested, format!("tested ({}): ", named(&all, calls)))
            }
        }
        // The claims file refuses a reason without its basis: none is read as an observation.
        Some(Basis::Observed) | None => (Kind::Observed, "observed: ".into()),
        Some(Basis::Hypothesis) => (Kind::Hypothesis, "hypothesis: ".into()),
    }
}
