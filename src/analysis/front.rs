//! The report's first screen: the counts, a scoreboard with one row per experiment (its question,
//! its verdicts, its headline claim's published figure beside this run's, a link to its section),
//! the claims outside what they accept with their reasons, and the judge's words explained.

use super::claim::Figures;
use super::claims::Call;
use super::table::short;
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

/// One row per experiment, one line each so that every experiment fits the first screen: its
/// claims counted by verdict, its headline claim (short, its full text in its section) with that
/// claim's verdict, published beside measured; the question shows on the link (a title).
fn scoreboard(sections: &[Section], judged: &[Judged]) -> String {
    let mut out = String::from(
        "\nOne row per experiment: its claims counted by verdict, and its headline claim (the first that \
        differs, else the first inconclusive, else its first finding) with what the seed published \
        beside what this run measured (mean, its range and the number of values).\n\n\
        | experiment | hold / differ / inconcl. / machine | headline claim | verdict | published | \
        measured here |\n|---|---|---|---|---|---|\n",
    );
    for section in sections {
        let ours: Vec<&Judged> = (judged.iter())
            .filter(|j| j.claim.experiment == section.id)
            .collect();
        let count = |call: Call| ours.iter().filter(|j| j.call == Some(call)).count();
        let counts = format!(
            "{} / {} / {} / {}",
            count(Call::Holds),
            count(Call::Differs),
            count(Call::Inconclusive),
            count(Call::MachineDependent)
        );
        let (headline, verdict, published, measured) = match headline(&ours) {
            Some(j) => (
                cell(&short_text(&j.claim.text)),
                j.call.map_or("not run", Call::label),
                compact_published(j),
                compact_measured(j),
            ),
            None => ("-".into(), "-", "-".into(), "-".into()),
        };
        let _ = writeln!(
            out,
            "| [{id}](#{id} \"{}\") | {counts} | {headline} | {verdict} | {published} | {measured} |",
            section.question.replace(['"', '|'], "'"),
            id = section.id,
        );
    }
    out
}

/// The claim that says most about what was found: the first that differs, else the first
/// inconclusive, else the first that is not the seed's control.
fn headline<'a>(ours: &[&'a Judged<'a>]) -> Option<&'a Judged<'a>> {
    let first = |call: Call| ours.iter().find(|j| j.call == Some(call));
    (first(Call::Differs).or_else(|| first(Call::Inconclusive)))
        .or_else(|| ours.iter().find(|j| !j.claim.text.contains("(control)")))
        .or_else(|| ours.first())
        .copied()
}

/// Longest headline text kept, in characters: one line of the scoreboard's column.
const HEADLINE_CHARS: usize = 58;

/// A claim's text without its opening or closing parenthetical (what it stands for, how it is
/// measured), cut at a word to fit one line; the whole text is in the experiment's section.
fn short_text(text: &str) -> String {
    let mut text = text.trim();
    if let Some(close) = text.strip_prefix('(').and_then(|_| text.find(") ")) {
        text = text[close + 2..].trim_start();
    }
    if text.ends_with(')') {
        if let Some(open) = text.rfind(" (") {
            text = text[..open].trim_end();
        }
    }
    if text.chars().count() <= HEADLINE_CHARS {
        return text.to_string();
    }
    let cut: String = text.chars().take(HEADLINE_CHARS).collect();
    let at_word = cut.rfind(' ').map_or(cut.as_str(), |i| &cut[..i]);
    format!("{}…", at_word.trim_end_matches([',', ';', ':']))
}

/// What the claim accepts, from its numbers ("2.5 to 3.5 µs", "≥ 91 %"), else its published text.
fn compact_published(j: &Judged) -> String {
    accepted(j.figures.as_deref()).unwrap_or_else(|| cell(&published(j.claim)))
}

/// What a claim accepts as its numbers say it, when they say it.
pub(super) fn accepted(figures: Option<&Figures>) -> Option<String> {
    let f = figures?;
    let unit = f.unit.as_deref().map_or(String::new(), |u| format!(" {u}"));
    let text = match f.accepted {
        (Some(lo), Some(hi)) if lo == hi => short(lo),
        // A range whose top only says "any amount more" (as published() reads it too).
        (Some(lo), Some(hi)) if hi >= 1000.0 * lo.abs().max(1.0) => format!("≥ {}", short(lo)),
        (Some(lo), Some(hi)) => format!("{} to {}", short(lo), short(hi)),
        (Some(lo), None) => format!("≥ {}", short(lo)),
        (None, Some(hi)) => format!("≤ {}", short(hi)),
        (None, None) => return None,
    };
    Some(format!("{text}{unit}"))
}

/// What this run measured, from its numbers: "2.70 (0.263 to 5.05, n = 30)"; else the first part
/// of the measured text.
fn compact_measured(j: &Judged) -> String {
    measured_briefly(j.figures.as_deref(), &j.measured)
}

/// A measurement in one short cell: its numbers when it has them, else the first part of `text`.
pub(super) fn measured_briefly(figures: Option<&Figures>, text: &str) -> String {
    let Some(f) = figures else {
        return cell(text.split("; ").next().unwrap_or_default());
    };
    let unit = f.unit.as_deref().map_or(String::new(), |u| format!(" {u}"));
    if f.n == 1 || f.min == f.max {
        return format!("{}{unit} (n = {})", short(f.mean), f.n);
    }
    format!(
        "{}{unit} ({} to {}, n = {})",
        short(f.mean),
        short(f.min),
        short(f.max),
        f.n
    )
}

/// A line linking every `## ` section of `markdown` (the experiments, the custom limiters, the
/// unjudged sentences, the time table), under the first screen: the page's table of contents.
pub(super) fn contents(markdown: &str) -> String {
    let links: Vec<String> = (markdown.lines())
        .filter_map(|l| l.strip_prefix("## "))
        .map(|title| format!("[{title}](#{})", super::html::slug(title)))
        .collect();
    match links.is_empty() {
        true => String::new(),
        false => format!("\n**Contents:** {}\n", links.join(" · ")),
    }
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
        seed's): {}.\n\n| claim | unit | verdict | published | measured here | why |\n|---|---|---|---|---|---|\n",
        outside.len(),
        kinds.join(", ")
    );
    for j in outside {
        // Every claim outside what it accepts has its reason (reasons::attach).
        let why = &j.why;
        let label = j.call.map_or("not run", Call::label);
        let unit = (j.figures.as_deref())
            .and_then(|f| f.unit.as_deref())
            .unwrap_or("-");
        let _ = writeln!(
            out,
            "| `{}` | {unit} | {label} | {} | {} | {why} |",
            j.claim.id,
            published(j.claim),
            j.measured
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_headline_drops_its_parentheticals_and_fits_one_line() {
        let text =
            "(what 'x' says on any machine) a Lua check's median is above GET's (p50, run by run)";
        assert_eq!(short_text(text), "a Lua check's median is above GET's");
        let long =
            "naive fixed window (GET, then MULTI INCR EXPIRE), 4 pods, 400/s offered: 180-290 \
                    requests per second reached the partner";
        let short = short_text(long);
        assert!(
            short.ends_with('…') && short.chars().count() <= HEADLINE_CHARS + 1,
            "{short}"
        );
        assert!(long.starts_with(short.trim_end_matches('…')), "{short}");
    }

    #[test]
    fn accepted_reads_ranges_bounds_and_a_top_that_only_says_more() {
        let f = |accepted, unit: Option<&str>| Figures {
            accepted,
            unit: unit.map(str::to_string),
            ..Figures::default()
        };
        let show = |a, u| accepted(Some(&f(a, u)));
        assert_eq!(
            show((Some(2.5), Some(3.5)), Some("µs")).as_deref(),
            Some("2.50 to 3.50 µs")
        );
        assert_eq!(
            show((Some(100.0), Some(100.0)), None).as_deref(),
            Some("100")
        );
        assert_eq!(
            show((Some(1e4), Some(1e12)), None).as_deref(),
            Some("≥ 10000")
        );
        assert_eq!(
            show((None, Some(30.0)), Some("ms")).as_deref(),
            Some("≤ 30 ms")
        );
        assert_eq!(show((None, None), None), None);
    }

    #[test]
    fn contents_links_every_section_by_its_heading_id() {
        let md = "\n## race\n\ntext\n## What the write-ups say that is not judged\n### Seed 000\n## Time\n";
        assert_eq!(
            contents(md),
            "\n**Contents:** [race](#race) · [What the write-ups say that is not judged]\
             (#what-the-write-ups-say-that-is-not-judged) · [Time](#time)\n"
        );
    }
}
