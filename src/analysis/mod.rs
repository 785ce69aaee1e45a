//! Analysis from the CSVs alone: per-experiment summaries and REPORT.md, which sets every
//! published claim beside what this run measured.

pub mod claims;
mod judge;
pub mod stats;
pub mod table;

use crate::record::Meta;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// What can go wrong reading results back.
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    #[error("csv {path}: {source}")]
    Csv { path: PathBuf, source: csv::Error },
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

/// One experiment's part of REPORT.md, as the caller (who knows the experiments) describes it.
pub struct Section<'a> {
    /// The experiment id: its results subdirectory and its claims' `experiment`.
    pub id: &'a str,
    /// Its summary table(s) from the CSVs in its directory.
    pub summary: SummaryOf<'a>,
    /// Why this run has no fresh results for it (failed, or skipped up front), if so.
    pub not_run: Option<String>,
}

/// Writes `dir/REPORT.md`: per experiment, its setup, summary, charts and claims.
pub fn write_report(dir: &Path, sections: &[Section]) -> Result<PathBuf, AnalysisError> {
    if !dir.is_dir() {
        return Err(AnalysisError::NotResults(dir.to_path_buf()));
    }
    let claims = claims::all()?;
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
    for section in sections {
        let id = section.id;
        let exp_dir = dir.join(id);
        let _ = write!(out, "\n## {id}\n\n");
        match (&section.not_run, exp_dir.is_dir()) {
            (None, false) => {
                out.push_str("Not run.\n");
                continue;
            }
            (None, true) => {}
            (Some(why), earlier) => {
                let _ = writeln!(out, "**This run did not produce results: {why}.**");
                if !earlier {
                    continue;
                }
                out.push_str("The results below are from an earlier run (see its setup line).\n\n");
            }
        }
        out.push_str(&setup_line(&exp_dir));
        out.push_str(&(section.summary)(&exp_dir)?);
        let _ = write!(
            out,
            "\n| claim | seed | published | measured here | verdict |\n|---|---|---|---|---|\n"
        );
        for claim in claims.iter().filter(|c| c.experiment == id) {
            let v = claims::judge(claim, &exp_dir);
            let verdict = match v.holds {
                Some(true) => "holds",
                Some(false) => "DIFFERS",
                None => "no data",
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                claim.text,
                claim.seed,
                published(claim),
                v.measured,
                verdict
            );
        }
    }
    let path = dir.join("REPORT.md");
    let tmp = dir.join(".REPORT.md.tmp");
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| AnalysisError::Io { path, source }
    };
    std::fs::write(&tmp, out).map_err(io(&tmp))?;
    std::fs::rename(&tmp, &path).map_err(io(&path))?;
    Ok(path)
}

fn published(claim: &claims::Claim) -> String {
    if let Some(times) = &claim.times_column {
        let of = claim.published_column.as_deref().unwrap_or("?");
        return format!("{} (= {of} x {times})", claim.published);
    }
    match (&claim.published_column, claim.judge) {
        (_, claims::Judge::TraceOrder) => "HMGET, HMGET, HSET, HSET; 1 client".into(),
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
        (Some(col), _) => format!("{} (= {col})", claim.published),
        (None, claims::Judge::AllAtMost) => format!("<= {} in every row", claim.published),
        (None, claims::Judge::MeanWithin) => {
            format!("~{} (±{:.0}%)", claim.published, claim.tolerance * 100.0)
        }
        (None, _) => claim.published.to_string(),
    }
}

/// One line on the setup, from meta.json.
fn setup_line(exp_dir: &Path) -> String {
    let Ok(text) = std::fs::read_to_string(exp_dir.join("meta.json")) else {
        return "No meta.json.\n\n".into();
    };
    let meta: Meta = match serde_json::from_str(&text) {
        Ok(meta) => meta,
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
