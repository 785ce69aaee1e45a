//! The report's first screen: the counts, a scoreboard with one row per experiment (its question,
//! its verdicts, its headline claim's published figure beside this run's, a link to its section),
//! the claims outside what they accept with their reasons, and the judge's words explained.

use super::claims::Call;
use super::{published, reasons, Judged, Section};
use std::fmt::Write as _;

/// What the judge's words mean, for a reader who meets them in the tables below.
const GLOSSARY: &str = "
<details><summary>How to read the verdicts</summary>

- **holds**: the evidence lies inside what the claim accepts: every run, for a claim about every run; \
the mean's whole 95% confidence interval, for a claim about a mean.
- **DIFFERS**: the evidence lies outside: a run outside for a claim about every run, the whole \
interval outside for a mean.
- **inconclusive**: the runs scatter across the boundary: the interval reaches both inside and outside.
- **machine-dependent**: an absolute time or rate of the seed's machine, shown beside this machine's \
facts and never judged; the claims that judge what it says on any machine are named beside it.
- **95% CI a to b, accepted c to d**: the interval of the mean (Student's t over the runs) and the \
region the claim accepts. **n of m inside**: runs inside a published range. **gap vs spread**: for \
\"cheaper\" or \"faster\", how far the mean lies beyond the published bound, set against the runs' \
standard deviation (the gap must be larger). **share of its X**: each row divided by its own figure.
- A reason says how it knows: **tested** by a variation this run measured (the claims named judge \
it; **refuted** when one of them differs), **observed** in this run's columns, or a **hypothesis**.

</details>
";

/// The counts, the scoreboard, the differences and the glossary, in that order.
pub(super) fn first_screen(sections: &[Section], judged: &[Judged], machine: &str) -> String {
    let mut out = counts(judged, machine);
    out.push_str(&scoreboard(sections, judged));
    out.push_str(&differences(judged));
    out.push_str(GLOSSARY);
    out
}

fn counts(judged: &[Judged], machine: &str) -> String {
    let count = |call: Option<Call>| judged.iter().filter(|j| j.call == call).count();
    format!(
        "\n## Verdicts\n\n{} claims: {} hold, {} differ, {} inconclusive (within this run's noise), \
        {} machine-dependent (shown, not judged), {} without data, {} not run. This machine: {machine}.\n",
        judged.len(),
        count(Some(Call::Holds)),
        count(Some(Call::Differs)),
        count(Some(Call::Inconclusive)),
        count(Some(Call::MachineDependent)),
        count(Some(Call::NoData)),
        count(None),
    )
}

/// One row per experiment: its verdicts and its first claim, published beside measured.
fn scoreboard(sections: &[Section], judged: &[Judged]) -> String {
    let mut out = String::from(
        "\n| experiment | question | holds | differs | inconclusive | machine-dependent | \
        headline claim | published | measured here |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for section in sections {
        let ours: Vec<&Judged> = judged
            .iter()
            .filter(|j| j.claim.experiment == section.id)
            .collect();
        let count = |call: Call| ours.iter().filter(|j| j.call == Some(call)).count();
        let (headline, published, measured) = match ours.first() {
            Some(j) => {
                let label = j.call.map_or("not run", Call::label);
                let first_part = j.measured.split("; ").next().unwrap_or_default();
                (
                    format!("{} ({label})", cell(&j.claim.text)),
                    published(j.claim),
                    cell(first_part),
                )
            }
            None => ("-".into(), "-".into(), "-".into()),
        };
        let _ = writeln!(
            out,
            "| [{id}](#{id}) | {} | {} | {} | {} | {} | {headline} | {published} | {measured} |",
            cell(&section.question),
            count(Call::Holds),
            count(Call::Differs),
            count(Call::Inconclusive),
            count(Call::MachineDependent),
            id = section.id,
        );
    }
    out
}

/// Text safe inside a table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// Every claim outside what it accepts, published beside measured, with its reason.
fn differences(judged: &[Judged]) -> String {
    let outside: Vec<&Judged> = (judged.iter())
        .filter(|j| {
            j.call
                .is_some_and(|call| reasons::owes_reason(call, j.outside))
        })
        .collect();
    if outside.is_empty() {
        return String::new();
    }
    let kinds: Vec<String> = (reasons::Kind::ALL.iter())
        .map(|k| (k, outside.iter().filter(|j| j.kind == Some(*k)).count()))
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| k.counted(n))
        .collect();
    let mut out = format!(
        "\n{} outside what they accept (differ, inconclusive, or a machine-dependent figure off the \
        seed's): {}.\n\n| claim | verdict | published | measured here | why |\n|---|---|---|---|---|\n",
        outside.len(),
        kinds.join(", ")
    );
    for j in outside {
        let why = if j.why.is_empty() {
            "not yet explained"
        } else {
            &j.why
        };
        let label = j.call.map_or("not run", Call::label);
        let _ = writeln!(
            out,
            "| `{}` | {label} | {} | {} | {why} |",
            j.claim.id,
            published(j.claim),
            j.measured
        );
    }
    out
}
