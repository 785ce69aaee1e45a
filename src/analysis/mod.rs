//! Analysis from the CSVs alone: per-experiment summaries and REPORT.md, which sets every
//! published claim beside what this run measured.

pub mod budget;
mod claim;
pub mod claims;
pub mod claims_json;
pub mod compare;
mod front;
pub mod html;
mod judge;
pub mod limiter_claims;
mod reasons;
pub mod stats;
pub mod table;
mod trace;

use crate::record::Meta;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// What can go wrong reading results back.
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    /// A CSV missing or not fitting its row type (the one reader's error names the file).
    #[error(transparent)]
    Read(#[from] crate::record::ReadError),
    #[error("{} is not a results directory", .0.display())]
    NotResults(PathBuf),
    #[error("claims file: {0}")]
    Claims(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Writes one experiment's summary from its results directory.
pub type SummaryOf<'a> = Box<dyn Fn(&Path) -> Result<String, AnalysisError> + 'a>;

/// A fact about the machine that an experiment measured, from its results directory (None: not
/// measured there), for the figures that belong to a machine: "loopback GET p50 31 µs".
pub type MachineFact = fn(&Path) -> Option<String>;

/// One experiment's part of REPORT.md, as the caller (who knows the experiments) describes it.
pub struct Section<'a> {
    /// The experiment id: its results subdirectory and its claims' `experiment`.
    pub id: &'a str,
    /// What it asks, in one sentence.
    pub question: String,
    /// Its summary table(s) from the CSVs in its directory.
    pub summary: SummaryOf<'a>,
    /// Why this run has no fresh results for it (failed, or skipped up front), if so.
    pub not_run: Option<String>,
    /// What it measured about the machine, if it states something.
    pub machine_fact: Option<MachineFact>,
}

/// One claim's line in the report and in claims.csv.
struct Judged<'a> {
    claim: &'a claims::Claim,
    call: Option<claims::Call>,
    measured: String,
    /// Whether the claim's statistic lies outside what it accepts (a machine-dependent figure's
    /// call does not say so): such a claim owes a reason.
    outside: bool,
    /// How its reason knows, when it owes one.
    kind: Option<reasons::Kind>,
    /// The reason with how it knows, once every claim is judged (see [`reasons`]).
    why: String,
    /// The judged values as numbers, for claims.json.
    figures: Option<Box<claim::Figures>>,
}

impl<'a> Judged<'a> {
    /// `claim` with its verdict; its reason comes once every claim is judged.
    fn of(claim: &'a claims::Claim, v: claims::Verdict) -> Self {
        Judged {
            claim,
            call: Some(claims::Call::of(claim, &v)),
            measured: v.measured,
            outside: v.holds == Some(false),
            kind: None,
            why: String::new(),
            figures: v.figures,
        }
    }
}

/// Writes `dir/REPORT.md` (the verdicts first, then per experiment its setup, summary and claims),
/// `dir/REPORT.html` (the same, one page with the charts inline), `dir/claims.csv` (one row per
/// claim) and `dir/claims.json` (the same claims with their numbers as numbers).
pub fn write_report(dir: &Path, sections: &[Section]) -> Result<PathBuf, AnalysisError> {
    write_report_with(dir, sections, &limiter_claims::Limiters::default())
}

/// [`write_report`] with the run's custom limiters: their claims judged into the Custom limiters
/// section (after the verdicts, before the experiments), claims.csv and claims.json.
pub fn write_report_with(
    dir: &Path,
    sections: &[Section],
    limiters: &limiter_claims::Limiters,
) -> Result<PathBuf, AnalysisError> {
    if !dir.is_dir() {
        return Err(AnalysisError::NotResults(dir.to_path_buf()));
    }
    let claims = claims::all()?;
    let machine = machine_facts(dir, sections);
    // Every claim first: a reason tested by another claim reads that claim's verdict.
    let mut judged: Vec<Judged> = (sections.iter())
        .flat_map(|section| judge_section(&claims, section, dir, &machine))
        .collect();
    reasons::attach(&mut judged, dir);
    let limiter_judged = limiter_claims::judge(limiters, dir);
    let after_verdicts = limiter_claims::section(limiters, &limiter_judged);
    let mut body = String::new();
    for section in sections {
        body.push_str(&section_text(section, dir, &judged)?);
    }
    let mut out = String::from(
        "# ratelab report\n\nEvery figure below was measured in this run; published \
        figures come from the seeds (analysis/claims.toml).\n",
    );
    let missed: Vec<&Section> = sections.iter().filter(|s| s.not_run.is_some()).collect();
    if !missed.is_empty() {
        out.push_str("\n**Not every experiment ran:**\n\n");
        for s in &missed {
            let _ = writeln!(
                out,
                "- `{}`: {}",
                s.id,
                s.not_run.as_deref().unwrap_or_default()
            );
        }
    }
    // A run of the user's own limiters (`--limiter`, `check`, `scoreboard`) opens with their
    // verdicts, which the reader came for; libraries' adapters belong to the seeds' reproduction.
    let users_limiters = (limiter_judged.iter()).any(|j| j.claim.experiment != "libraries");
    let (first, after_verdicts) = match users_limiters {
        true => (after_verdicts, String::new()),
        false => (String::new(), after_verdicts),
    };
    out.push_str(&first);
    out.push_str(&front::first_screen(sections, &judged, &machine));
    let ids: Vec<&str> = sections.iter().map(|s| s.id).collect();
    let rest = format!(
        "{after_verdicts}{body}{}{}",
        unjudged_section()?,
        budget::time_section(dir, &ids)?
    );
    out.push_str(&front::contents(&rest));
    out.push_str(&rest);
    let page = html::render(&out, dir)?;
    // The seeds' claims, then the limiters': one file for every verdict of the run.
    judged.extend(limiter_judged);
    write_atomically(&dir.join("claims.csv"), &claims_csv(&judged))?;
    write_atomically(&dir.join(claims_json::FILE), &claims_json::render(&judged))?;
    write_atomically(&dir.join("REPORT.html"), &page)?;
    let path = dir.join("REPORT.md");
    write_atomically(&path, &out)?;
    Ok(path)
}

/// Why a section has no fresh results, if it has none: (what to say, whether older ones remain).
fn missing_results(section: &Section, exp_dir: &Path) -> Option<(String, bool)> {
    match (&section.not_run, exp_dir.is_dir()) {
        (None, false) => Some(("not run".into(), false)),
        (None, true) => None,
        (Some(why), earlier) => Some((why.clone(), earlier)),
    }
}

/// The verdicts on one section's claims (reasons are attached once every section is judged).
fn judge_section<'a>(
    claims: &'a [claims::Claim],
    section: &Section,
    dir: &Path,
    machine: &str,
) -> Vec<Judged<'a>> {
    let exp_dir = dir.join(section.id);
    let ours = claims.iter().filter(|c| c.experiment == section.id);
    if let Some((why, false)) = missing_results(section, &exp_dir) {
        return ours.map(|claim| not_run(claim, &why)).collect();
    }
    let mut judging = claims::Judging::default();
    ours.map(|claim| {
        let mut j = Judged::of(claim, judging.judge(claim, &exp_dir));
        if j.call == Some(claims::Call::MachineDependent) {
            let _ = write!(j.measured, "; this machine: {machine}");
        }
        j
    })
    .collect()
}

/// One experiment's part of REPORT.md: setup, charts, its claims' table, the folded tables.
fn section_text(section: &Section, dir: &Path, judged: &[Judged]) -> Result<String, AnalysisError> {
    let id = section.id;
    let exp_dir = dir.join(id);
    let mut text = format!("\n## {id}\n\n");
    match missing_results(section, &exp_dir) {
        Some((_, false)) if section.not_run.is_none() => return Ok(text + "Not run.\n"),
        Some((why, earlier)) => {
            let _ = writeln!(text, "**This run did not produce results: {why}.**");
            if !earlier {
                return Ok(text);
            }
            text.push_str("The results below are from an earlier run (see its setup line).\n\n");
        }
        None => {}
    }
    if !section.question.is_empty() {
        let _ = write!(text, "_{}_\n\n", section.question);
    }
    text.push_str(&setup_line(&exp_dir));
    for chart in charts_in(&exp_dir) {
        let alt = chart_title(&exp_dir.join(&chart)).unwrap_or_else(|| chart.clone());
        let _ = writeln!(text, "![{alt}]({id}/{chart})");
    }
    let tables = (section.summary)(&exp_dir)?;
    text.push_str(
        "\n| claim | seed | published | measured here | verdict |\n|---|---|---|---|---|\n",
    );
    for j in judged.iter().filter(|j| j.claim.experiment == id) {
        let label = j.call.map_or("not run", claims::Call::label);
        let verdict = match j.why.is_empty() {
            true => label.to_string(),
            false => format!("{label}: {}", j.why),
        };
        let claim = claim_cell(j.claim);
        let seed = &j.claim.seed;
        let _ = writeln!(
            text,
            "| {claim} | {seed} | {} | {} | {verdict} |",
            published(j.claim),
            j.measured
        );
    }
    // The long per-configuration tables come last, folded: the answer, then the picture.
    let _ = write!(
        text,
        "\n<details><summary>{id}: the tables behind the charts</summary>\n\n{}\n</details>\n",
        tables.trim()
    );
    Ok(text)
}

/// A claim's cell: its text, then the seed's own words it judges, in italics and quotation marks
/// (one cell: `<br/>` keeps the table one row per claim, and REPORT.html well-formed).
fn claim_cell(claim: &claims::Claim) -> String {
    match &claim.quote {
        Some(quote) => format!("{}<br/>_“{}”_", claim.text, markdown_inline(quote)),
        None => claim.text.clone(),
    }
}

/// Seed text made safe inside a table cell or a list item: a `|` would split the cell.
fn markdown_inline(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// The seeds' sentences with a figure or an outcome that no claim judges, per seed, with why:
/// beside the claims' quotes, the whole of each write-up is accounted for.
fn unjudged_section() -> Result<String, AnalysisError> {
    let unjudged = claims::unjudged()?;
    let mut out = String::from(
        "\n## What the write-ups say that is not judged\n\nThe sentences of the seeds that state a \
        figure or an outcome and that no claim above quotes (analysis/claims.toml, `[[unjudged]]`), \
        each with why it is not judged.\n",
    );
    let mut seeds: Vec<&str> = unjudged.iter().map(|u| u.seed.as_str()).collect();
    seeds.sort();
    seeds.dedup();
    for seed in seeds {
        let of_seed: Vec<&claims::Unjudged> = unjudged.iter().filter(|u| u.seed == seed).collect();
        let _ = writeln!(out, "\n### Seed {seed} ({} sentences)\n", of_seed.len());
        for u in of_seed {
            let _ = writeln!(
                out,
                "- _“{}”_: {}",
                markdown_inline(&u.quote),
                markdown_inline(&u.why)
            );
        }
    }
    Ok(out)
}

/// Writes `dir/.NAME.tmp`, then renames it over `dir/NAME`: a reader never sees half a report.
fn write_atomically(path: &Path, text: &str) -> Result<(), AnalysisError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| AnalysisError::Io { path, source }
    };
    std::fs::write(&tmp, text).map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))
}

/// What a chart shows, in its own words: the first text of the SVG (every chart opens with its
/// title), made safe for a Markdown image's alt text; `None` when it cannot be read.
fn chart_title(svg: &Path) -> Option<String> {
    let svg = std::fs::read_to_string(svg).ok()?;
    let text = &svg[svg.find("<text")?..];
    let title = text[text.find('>')? + 1..text.find("</text>")?].trim();
    let title = (title
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&"))
    .replace(['[', ']'], "")
    .replace(['\n', '\r'], " ");
    (!title.is_empty()).then_some(title)
}

/// The SVG charts of an experiment's directory, by name.
fn charts_in(exp_dir: &Path) -> Vec<String> {
    let mut charts: Vec<String> = (std::fs::read_dir(exp_dir).into_iter().flatten().flatten())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| name.ends_with(".svg"))
        .collect();
    charts.sort();
    charts
}

fn not_run<'a>(claim: &'a claims::Claim, why: &str) -> Judged<'a> {
    Judged {
        claim,
        call: None,
        measured: String::new(),
        outside: false,
        kind: None,
        why: why.to_string(),
        figures: None,
    }
}

/// One claim's row in claims.csv.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ClaimRow {
    /// The claim's id in analysis/claims.toml, or `limiter.<name>.<experiment>.<what>` for a claim
    /// generated for a custom limiter from what its algorithm and manifest imply.
    pub id: String,
    /// The experiment whose CSVs judge it.
    pub experiment: String,
    /// The write-up the published figure comes from; `limiter` for a custom limiter's claim.
    pub seed: String,
    /// The published figure, as the seed states it (scaled to the run's parameters).
    pub published: String,
    /// What this run measured, with its spread.
    pub measured: String,
    /// holds, DIFFERS, inconclusive, machine-dependent, or not run.
    pub verdict: String,
    /// Why the measurement differs from the seed, where analysis/claims.toml knows.
    pub why: String,
}

/// The table of claims.csv, which `write_report` writes beside REPORT.md.
pub fn claims_table() -> crate::record::Table {
    crate::record::Table::of::<ClaimRow>("claims.csv")
}

/// claims.csv: one row per claim with its verdict and reason, for readers who re-judge.
fn claims_csv(judged: &[Judged]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    if judged.is_empty() {
        let _ = w.write_record(claims_table().columns);
    }
    for j in judged {
        let row = ClaimRow {
            id: j.claim.id.clone(),
            experiment: j.claim.experiment.clone(),
            seed: j.claim.seed.clone(),
            published: published(j.claim),
            measured: j.measured.clone(),
            verdict: j.call.map_or("not run", claims::Call::label).to_string(),
            why: j.why.clone(),
        };
        let _ = w.serialize(row);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// Cores and CPU of the machine the results come from (its meta.json), then what the sections
/// state they measured about it, for figures that belong to a machine.
fn machine_facts(dir: &Path, sections: &[Section]) -> String {
    let mut experiments: Vec<PathBuf> = (std::fs::read_dir(dir).into_iter().flatten().flatten())
        .map(|e| e.path())
        .collect();
    experiments.sort();
    // Each CPU with the experiments that ran on it: a results directory can hold runs of several
    // machines (an experiment re-run later), and a figure is only comparable to its own.
    let mut hosts: Vec<(String, Vec<String>)> = Vec::new();
    for path in &experiments {
        let Ok(Some(m)) = read_meta(path) else {
            continue;
        };
        let cpu = format!("{} CPUs ({})", m.host.cpus_online, m.host.cpu_model);
        let id = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match hosts.iter_mut().find(|(c, _)| *c == cpu) {
            Some((_, ids)) => ids.push(id),
            None => hosts.push((cpu, vec![id])),
        }
    }
    hosts.sort_by_key(|(_, ids)| std::cmp::Reverse(ids.len()));
    let mut facts = match hosts.as_slice() {
        [] => "unknown CPUs".to_string(),
        [(cpu, _)] => cpu.clone(),
        [(most, _), others @ ..] => {
            let others: Vec<String> = (others.iter())
                .map(|(cpu, ids)| format!("{cpu} for {}", ids.join(", ")))
                .collect();
            format!("{most}; {}", others.join("; "))
        }
    };
    for section in sections {
        if let Some(fact) = section.machine_fact.and_then(|f| f(&dir.join(section.id))) {
            let _ = write!(facts, ", {fact}");
        }
    }
    facts
}

pub(crate) fn published(claim: &claims::Claim) -> String {
    if let Some(times) = &claim.times_column {
        let of = claim.published_column.as_deref().unwrap_or("?");
        return format!("{} (= {of} x {times})", claim.published);
    }
    match (&claim.published_column, claim.judge) {
        (_, claims::Judge::TraceOrder) => "HMGET, HMGET, HSET, HSET; 1 client".into(),
        (_, claims::Judge::TraceWrites) => "writes in pairs of one value, a token apart".into(),
        (_, claims::Judge::Range) => match claim.range {
            Some([lo, hi]) if hi >= 1000.0 * lo.abs().max(1.0) => format!(">= {lo}"),
            Some([lo, hi]) => format!("{lo} to {hi}"),
            None => "?".into(),
        },
        (Some(col), claims::Judge::AllAtMost) => format!("<= {col}"),
        (_, claims::Judge::AllAbove) => format!("> {} in every row", claim.published),
        (_, claims::Judge::Below) => {
            format!("< {} in every run, beyond its spread", claim.published)
        }
        (_, claims::Judge::Above) => {
            format!("> {} in every run, beyond its spread", claim.published)
        }
        (_, claims::Judge::MeanAbove) => {
            format!("> {} by the mean's 95% interval", claim.published)
        }
        (Some(col), _) => format!("{} (= {col})", claim.published),
        (None, claims::Judge::AllAtMost) => format!("<= {} in every row", claim.published),
        (None, claims::Judge::AllAtLeast) => match &claim.percent_of {
            Some(of) => format!(">= {}% of {of} in every row", claim.published),
            None => format!(">= {} in every row", claim.published),
        },
        (None, claims::Judge::MeanWithin) => {
            format!("~{} (±{:.0}%)", claim.published, claim.tolerance * 100.0)
        }
        (None, _) => claim.published.to_string(),
    }
}

/// An experiment directory's meta.json: None when it has none.
fn read_meta(exp_dir: &Path) -> Result<Option<Meta>, serde_json::Error> {
    match std::fs::read_to_string(exp_dir.join("meta.json")) {
        Ok(text) => serde_json::from_str(&text).map(Some),
        Err(_) => Ok(None),
    }
}

/// One line on the setup, from meta.json.
fn setup_line(exp_dir: &Path) -> String {
    let meta = match read_meta(exp_dir) {
        Ok(Some(meta)) => meta,
        Ok(None) => return "No meta.json.\n\n".into(),
        Err(e) => return format!("Unreadable meta.json ({e}).\n\n"),
    };
    let mut line = format!(
        "Redis {} ({}), profile {}, {} on {} CPUs, kernel {}, pinning redis {:?} / harness {:?}, commit {}, {}.\n\n",
        meta.redis.version,
        if meta.redis.managed { "started by ratelab" } else { "external" },
        meta.profile,
        meta.host.cpu_model,
        meta.host.cpus_online,
        meta.host.kernel,
        meta.pinning.redis,
        meta.pinning.harness,
        meta.git_commit,
        meta.started_at,
    );
    if meta.suspend.suspended {
        line.push_str("**WARNING: the machine was suspended during this run; its timings are not valid.**\n\n");
    }
    if let Some(stalls) = meta.harness_stalls.as_ref().filter(|s| s.stalled()) {
        let _ = write!(line, "**WARNING: {}.**\n\n", stalls.warning());
    }
    if let Some(ol) = meta.open_loop.as_ref().filter(|ol| !ol.kept_up) {
        // Late starts arrive bunched, which changes what timing-sensitive limiters admit.
        let _ = write!(
            line,
            "**WARNING: the open-loop generator fell behind its schedule: {} of {} starts more than {} ms late \
                (latest {} ms, {}).**\n\n",
            ol.late_starts,
            ol.requests,
            ol.late_threshold_ms,
            (ol.max_lateness_ms * 10.0).round() / 10.0,
            ol.worst_run,
        );
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Results of two hosts name both CPUs, the less common with the experiments it ran.
    #[test]
    fn the_machine_line_names_every_cpu_and_the_experiments_of_the_others() {
        let reference = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/reference");
        let meta =
            |id: &str| std::fs::read_to_string(reference.join(id).join("meta.json")).unwrap();
        let host = |id: &str| {
            read_meta(&reference.join(id))
                .unwrap()
                .unwrap()
                .host
                .cpu_model
        };
        let dir = tempfile::tempdir().unwrap();
        // Two experiments' meta.json from one host, one from another (when the reference has two).
        let (a, b) = ("race", "latency");
        for (id, from) in [("x", a), ("y", b), ("z", b)] {
            std::fs::create_dir(dir.path().join(id)).unwrap();
            std::fs::write(dir.path().join(id).join("meta.json"), meta(from)).unwrap();
        }
        let facts = machine_facts(dir.path(), &[]);
        match host(a) == host(b) {
            true => assert!(!facts.contains(';') && facts.contains(&host(a)), "{facts}"),
            false => assert!(
                matches!((facts.find(&host(b)), facts.find(&host(a))), (Some(i), Some(j)) if i < j)
                    && facts.ends_with(&format!("({}) for x", host(a))),
                "{facts}"
            ),
        }
    }
}
