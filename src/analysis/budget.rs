//! The time budget of a reproduction (issue 17): how long each experiment is planned to take per
//! profile (`analysis/budget.toml`), the estimate `run_all.sh` prints before it starts, and the
//! table in REPORT.md that sets what each experiment took (meta.json) beside its plan.

use super::AnalysisError;
use crate::record::{Meta, STALL};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

const BUDGET: &str = include_str!("../../analysis/budget.toml");

/// The planned wall seconds of every experiment per profile, and the budget of the whole.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// The most the full profile of every experiment may take, in seconds.
    pub full_budget_seconds: f64,
    /// Profile name -> experiment id -> planned wall seconds.
    pub planned: BTreeMap<String, BTreeMap<String, f64>>,
}

impl Budget {
    /// The embedded budget.
    pub fn load() -> Result<Self, AnalysisError> {
        toml::from_str(BUDGET).map_err(|e| AnalysisError::Claims(format!("budget.toml: {e}")))
    }

    /// Planned seconds of `id` in `profile`, if the budget names it.
    pub fn planned(&self, profile: &str, id: &str) -> Option<f64> {
        self.planned.get(profile)?.get(id).copied()
    }

    /// The estimate for running `ids` in `profile`: one line per experiment and the total,
    /// against the budget for the full profile. Experiments without a plan are named.
    pub fn estimate(&self, profile: &str, ids: &[&str]) -> String {
        let mut out = String::new();
        let mut total = 0.0;
        let mut unplanned = Vec::new();
        for &id in ids {
            match self.planned(profile, id) {
                Some(s) => {
                    total += s;
                    let _ = writeln!(out, "  {id:<12} {:>6}", clock(s));
                }
                None => unplanned.push(id),
            }
        }
        let _ = write!(out, "  {:<12} {:>6}", "total", clock(total));
        if profile == "full" {
            let _ = write!(out, " (budget {})", clock(self.full_budget_seconds));
        }
        out.push('\n');
        if !unplanned.is_empty() {
            let _ = writeln!(out, "  not in the budget: {}", unplanned.join(", "));
        }
        out
    }
}

/// `m:ss`.
fn clock(seconds: f64) -> String {
    let s = seconds.round() as u64;
    format!("{}:{:02}", s / 60, s % 60)
}

/// The REPORT.md section: per experiment that ran, its profile, planned and taken wall time.
pub fn time_section(dir: &Path, ids: &[&str]) -> Result<String, AnalysisError> {
    let budget = Budget::load()?;
    let mut rows = String::new();
    let (mut planned_total, mut taken_total, mut full_only) = (0.0, 0.0, true);
    for &id in ids {
        let Some(meta) = read_meta(&dir.join(id)) else {
            continue;
        };
        let planned = budget.planned(&meta.profile, id);
        planned_total += planned.unwrap_or(0.0);
        taken_total += meta.wall_seconds;
        full_only &= meta.profile == "full";
        let ratio = planned
            .filter(|p| *p > 0.0)
            .map_or("-".to_string(), |p| format!("{:.2}", meta.wall_seconds / p));
        let load = meta.resources.as_ref().map_or("-".to_string(), |r| {
            format!("{:.1}", r.load_average_start[0])
        });
        let (steal, stalls) = (steal_cell(&meta), stalls_cell(&meta));
        let _ = writeln!(
            rows,
            "| {id} | {} | {} | {} | {ratio} | {load} | {steal} | {stalls} |",
            meta.profile,
            planned.map_or("-".to_string(), clock),
            clock(meta.wall_seconds),
        );
    }
    if rows.is_empty() {
        return Ok(String::new());
    }
    let mut out = format!(
        "\n## Time\n\nWall time per experiment (meta.json) beside its plan (analysis/budget.toml). \
        The machine is shared: the load average at the start says how much else ran in it, \
        steal how much of each CPU (cpu0 / cpu1 / ...) the hypervisor gave to other machines, and \
        harness stalls how many times the harness was held off its CPU for more than {} ms \
        (the longest in brackets).\n\n\
        | experiment | profile | planned | taken | taken / planned | load average at start | \
        steal % per CPU | harness stalls |\n\
        |---|---|---|---|---|---|---|---|\n",
        STALL.as_millis()
    );
    out.push_str(&rows);
    let _ = writeln!(
        out,
        "| total | | {} | {} | | | | |",
        clock(planned_total),
        clock(taken_total)
    );
    if full_only {
        let within = taken_total <= budget.full_budget_seconds;
        let _ = writeln!(
            out,
            "\nBudget for the full profile: {}; {}.",
            clock(budget.full_budget_seconds),
            if within { "within it" } else { "over it" }
        );
    }
    Ok(out)
}

/// Each CPU's steal over the run, `cpu0 / cpu1 / ...` in percent; `-` in older runs.
pub(super) fn steal_cell(meta: &Meta) -> String {
    (meta.resources.as_ref())
        .and_then(|r| r.steal_pct_by_cpu.as_ref())
        .map_or("-".to_string(), |cpus| {
            let per_cpu: Vec<String> = cpus.iter().map(|c| format!("{:.1}", c.steal_pct)).collect();
            per_cpu.join(" / ")
        })
}

/// The harness's stalls over the threshold, and the longest lateness; `-` in older runs.
pub(super) fn stalls_cell(meta: &Meta) -> String {
    meta.harness_stalls.as_ref().map_or("-".to_string(), |s| {
        format!("{} ({:.0} ms)", s.stalls, s.max_late_ms)
    })
}

fn read_meta(exp_dir: &Path) -> Option<Meta> {
    let text = std::fs::read_to_string(exp_dir.join("meta.json")).ok()?;
    serde_json::from_str(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_parses_and_the_estimate_adds_up() {
        let budget = Budget::load().unwrap();
        assert!(budget.full_budget_seconds > 0.0);
        let (a, b) = (
            budget.planned("full", "race").unwrap(),
            budget.planned("full", "cost").unwrap(),
        );
        let text = budget.estimate("full", &["race", "cost", "nonesuch"]);
        assert!(
            text.contains(&format!("{:<12} {:>6}", "total", clock(a + b))),
            "{text}"
        );
        assert!(text.contains("not in the budget: nonesuch"), "{text}");
        assert_eq!(clock(125.4), "2:05");
    }
}
