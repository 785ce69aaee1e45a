//! Analysis from the CSVs alone: per-experiment summaries and REPORT.md, which sets every
//! published claim beside what this run measured.

pub mod claims;
mod derived;
pub mod stats;
mod summary;
pub mod table;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// What can go wrong reading results back.
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    #[error("csv {path}: {source}")]
    Csv { path: PathBuf, source: csv::Error },
    #[error("claims file: {0}")]
    Claims(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A markdown summary of one experiment's results (empty for experiments without one).
pub fn summarize_experiment(id: &str, dir: &Path) -> Result<String, AnalysisError> {
    summary::summary(id, dir)
}

/// Writes `dir/REPORT.md`: per experiment, its setup, summary, charts and claims.
pub fn write_report(dir: &Path) -> Result<PathBuf, AnalysisError> {
    let claims = claims::all()?;
    let mut out = String::from("# ratelab report\n\nEvery figure below was measured in this run; published figures come from the seeds (analysis/claims.toml).\n");
    for id in crate::experiments::Experiment::ALL.iter().map(|e| e.id()) {
        let exp_dir = dir.join(id);
        if !exp_dir.is_dir() {
            let _ = write!(out, "\n## {id}\n\nNot run.\n");
            continue;
        }
        let _ = write!(out, "\n## {id}\n\n{}", setup_line(&exp_dir));
        out.push_str(&summarize_experiment(id, &exp_dir)?);
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
    match (&claim.published_column, claim.judge) {
        (_, claims::Judge::TraceOrder) => "HMGET, HMGET, HSET, HSET; 1 client".into(),
        (_, claims::Judge::Range) => match claim.range {
            Some([lo, hi]) if hi >= 1000.0 * lo.abs().max(1.0) => format!(">= {lo}"),
            Some([lo, hi]) => format!("{lo} to {hi}"),
            None => "?".into(),
        },
        (Some(col), claims::Judge::AllAtMost) => format!("<= {col}"),
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
    let Ok(meta) = serde_json::from_str::<serde_json::Value>(&text) else {
        return "Unreadable meta.json.\n\n".into();
    };
    let s = |p: &str| {
        meta.pointer(p)
            .map(|v| v.to_string().trim_matches('"').to_string())
            .unwrap_or_default()
    };
    let mut line = format!(
        "Redis {} ({}), profile {}, {} on {} CPUs, kernel {}, pinning redis {} / harness {}, commit {}, {}.\n\n",
        s("/redis/version"),
        if s("/redis/managed") == "true" { "started by ratelab" } else { "external" },
        s("/profile"),
        s("/host/cpu_model"),
        s("/host/cpus_online"),
        s("/host/kernel"),
        s("/pinning/redis"),
        s("/pinning/harness"),
        s("/git_commit"),
        s("/started_at"),
    );
    if s("/suspend/suspended") == "true" {
        line.push_str("**WARNING: the machine was suspended during this run; its timings are not valid.**\n\n");
    }
    if s("/open_loop/kept_up") == "false" {
        // Late starts arrive bunched, which changes what timing-sensitive limiters admit.
        let ms = |p: &str| meta.pointer(p).and_then(|v| v.as_f64()).unwrap_or(f64::NAN);
        let _ = write!(
            line,
            "**WARNING: the open-loop generator fell behind its schedule: {} of {} starts more than {} ms late (latest {} ms, {}).**\n\n",
            s("/open_loop/late_starts"),
            s("/open_loop/requests"),
            ms("/open_loop/late_threshold_ms"),
            (ms("/open_loop/max_lateness_ms") * 10.0).round() / 10.0,
            s("/open_loop/worst_run"),
        );
    }
    line
}
