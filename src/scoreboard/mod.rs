//! `ratelab scoreboard`: every library adapter in examples/adapters/ through `ratelab check`'s
//! battery, all of them in each experiment's one run, and SCOREBOARD.md: a library per row, a
//! failure mode (a check) per column, each cell its limiter claims' verdicts with the measured
//! figure, linked to the CSV they read. Like REPORT.md it is drawn from the CSVs alone
//! ([`write`]), so `report` and `verify` redraw it. A product over runs, like `check` and
//! `publish`: it runs experiments, it is not one.

mod picture;

use crate::analysis::claims::Call;
use crate::analysis::AnalysisError;
use crate::check::{self, Check, CheckEnd, Judged, Ran};
use crate::context::Ctx;
use crate::experiments::{self, limiters};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub const SCOREBOARD_MD: &str = "SCOREBOARD.md";
pub const SCOREBOARD_HTML: &str = "SCOREBOARD.html";
pub const SCOREBOARD_CSV: &str = "scoreboard.csv";
/// What [`write`] puts at a results directory's root, published with it when there.
pub const FILES: [&str; 5] = [
    SCOREBOARD_MD,
    SCOREBOARD_HTML,
    SCOREBOARD_CSV,
    picture::SVG,
    picture::PNG,
];

/// The adapter that decides nothing: the process boundary's measure, not a library.
const BOUNDARY: &str = "noop";

/// One limiter claim of one library in one check of the scoreboard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreRow {
    /// The adapter's manifest name.
    pub limiter: String,
    /// The library, its version and its Redis client, as the adapter's handshake said.
    pub library: String,
    /// The check (failure mode): concurrency, edge, timestamps, outage, survival or cluster.
    pub check: String,
    /// The experiment the check ran.
    pub experiment: String,
    /// The claim's id, `limiter.<name>.<experiment>.<what>`.
    pub claim: String,
    /// holds, DIFFERS, inconclusive, machine-dependent or no data.
    pub verdict: String,
    /// What the run measured, as the claim reads it.
    pub measured: String,
    /// The CSV the claim reads, relative to the results directory.
    pub evidence: String,
}

/// Why SCOREBOARD.md could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum ScoreboardError {
    #[error(transparent)]
    Analysis(#[from] AnalysisError),
    /// The battery or an experiment it names.
    #[error("{0}")]
    Battery(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Csv { path: PathBuf, source: csv::Error },
    /// The board's picture could not be rasterised.
    #[error("{}: {source}", picture::PNG)]
    Picture { source: crate::charts::ChartError },
}

pub fn table() -> crate::record::Table {
    crate::record::Table::of::<ScoreRow>(SCOREBOARD_CSV)
}

/// The adapters' manifests under `root` (examples/adapters/), by name; with `only`, those named,
/// every one of which must exist.
pub fn adapters(root: &Path, only: &[String]) -> Result<Vec<PathBuf>, CheckEnd> {
    let broken = |e: String| CheckEnd::Broken(e);
    let folders =
        std::fs::read_dir(root).map_err(|e| broken(format!("{}: {e}", root.display())))?;
    let mut found: BTreeMap<String, PathBuf> = BTreeMap::new();
    for folder in folders.flatten() {
        let Ok(files) = std::fs::read_dir(folder.path()) else {
            continue;
        };
        for path in files.flatten().map(|f| f.path()) {
            if path.extension().is_some_and(|e| e == "toml") {
                let manifest =
                    crate::limiter::custom::load(&path).map_err(|e| broken(e.to_string()))?;
                if manifest.process.is_some() && manifest.name != BOUNDARY {
                    found.insert(manifest.name, path);
                }
            }
        }
    }
    let unknown: Vec<&String> = only.iter().filter(|n| !found.contains_key(*n)).collect();
    if !unknown.is_empty() {
        let known: Vec<&str> = found.keys().map(String::as_str).collect();
        return Err(broken(format!(
            "--only {}: no such adapter in {}; valid: {}",
            unknown
                .iter()
                .map(|n| n.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            root.display(),
            known.join(", ")
        )));
    }
    Ok(found
        .into_iter()
        .filter(|(name, _)| only.is_empty() || only.contains(name))
        .map(|(_, path)| path)
        .collect())
}

/// The planned wall time of the scoreboard of every adapter, per check (analysis/budget.toml).
pub fn plan(checks: &[Check]) -> Result<String, AnalysisError> {
    let budget = crate::analysis::budget::Budget::load()?;
    let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
    Ok(format!(
        "planned wall time of `ratelab scoreboard`, every adapter of examples/adapters/:\n{}",
        budget.estimate("scoreboard", &names)
    ))
}

/// Every check of the battery with `ctx`'s limiters, all of them in each check's one run. A
/// library refused for lacking the client a check needs (a cluster's) is left out of that check
/// alone, and the check runs with the others.
pub fn run(ctx: &Ctx, checks: &[Check], say: &mut dyn FnMut(&str)) -> Result<Vec<Ran>, CheckEnd> {
    let mut out = Vec::new();
    for check in checks {
        let mut ctx = ctx.clone();
        let ran = loop {
            let ran = check::run_check(&ctx, check)?;
            let Some(refused) = ran.refused.clone() else {
                break ran;
            };
            let why = ran.skipped.clone().unwrap_or_default();
            say(&format!("  {}: {refused} left out: {why}", check.name));
            ctx.limiters.retain(|l| l.to_string() != refused);
            // The refused attempt's partial rows: nothing to inspect, the check runs again.
            let _ =
                std::fs::remove_dir_all(ctx.out_dir.join(format!(".{}.failed", check.experiment)));
            if ctx.limiters.is_empty() {
                break ran;
            }
        };
        if ran.skipped.is_none() {
            draw_charts(&ctx, check)?;
        }
        say(&check::line(&ran));
        out.push(ran);
    }
    Ok(out)
}

/// The charts of the check's experiment, every library side by side, as `run` draws them: the
/// board is published with its evidence.
fn draw_charts(ctx: &Ctx, check: &Check) -> Result<(), CheckEnd> {
    let broken = |why: String| CheckEnd::Broken(format!("check {}: its charts: {why}", check.name));
    let experiment = experiments::find(&check.experiment).map_err(|e| broken(e.to_string()))?;
    (experiment.charts(&ctx.out_dir.join(experiment.id())))
        .map_err(|e| broken(crate::errors::one_line(&e)))?;
    Ok(())
}

/// SCOREBOARD.md, SCOREBOARD.html and scoreboard.csv in `dir`, from its experiments' CSVs alone.
pub fn write(dir: &Path) -> Result<PathBuf, ScoreboardError> {
    let battery = check::battery().map_err(|e| ScoreboardError::Battery(e.to_string()))?;
    let mut board = Board::default();
    for c in &battery {
        let experiment = experiments::find(&c.experiment)
            .map_err(|e| ScoreboardError::Battery(e.to_string()))?;
        let edir = dir.join(experiment.id());
        if !edir.join(limiters::LIMITERS_CSV).is_file() {
            continue;
        }
        let mut ran = BTreeSet::new();
        for l in limiters::recorded(&edir)? {
            let name = l.strategy.to_string();
            board.libraries.entry(name.clone()).or_insert(l.library);
            ran.insert(name);
        }
        for j in check::judged(experiment, &edir)? {
            board.rows.push(row(&board.libraries, c, &j));
        }
        board.checks.push((c.clone(), ran));
    }
    let csv_path = dir.join(SCOREBOARD_CSV);
    let csv_error = |source| ScoreboardError::Csv {
        path: csv_path.clone(),
        source,
    };
    let mut w = csv::Writer::from_path(&csv_path).map_err(csv_error)?;
    for r in &board.rows {
        w.serialize(r).map_err(csv_error)?;
    }
    w.flush().map_err(|e| csv_error(e.into()))?;
    let svg_path = dir.join(picture::SVG);
    write_text(&svg_path, &picture::svg(&board, &board.counts()))?;
    (crate::charts::svg_to_png(&svg_path, &dir.join(picture::PNG)))
        .map_err(|source| ScoreboardError::Picture { source })?;
    let markdown = board.markdown();
    let md_path = dir.join(SCOREBOARD_MD);
    write_text(&md_path, &markdown)?;
    write_text(
        &dir.join(SCOREBOARD_HTML),
        &crate::analysis::html::render(&markdown, dir)?,
    )?;
    Ok(md_path)
}

fn write_text(path: &Path, text: &str) -> Result<(), ScoreboardError> {
    std::fs::write(path, text).map_err(|source| ScoreboardError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn row(libraries: &BTreeMap<String, String>, c: &Check, j: &Judged) -> ScoreRow {
    let claim = &j.claim.claim;
    ScoreRow {
        limiter: j.claim.limiter.clone(),
        library: libraries.get(&j.claim.limiter).cloned().unwrap_or_default(),
        check: c.name.clone(),
        experiment: c.experiment.clone(),
        claim: claim.id.clone(),
        verdict: j.call.label().to_string(),
        measured: j.measured.clone(),
        evidence: format!("{}/{}", c.experiment, claim.file),
    }
}

/// What the scoreboard shows: the libraries, the checks that ran (with who ran in each) and every
/// judged claim.
#[derive(Default)]
struct Board {
    libraries: BTreeMap<String, String>,
    checks: Vec<(Check, BTreeSet<String>)>,
    rows: Vec<ScoreRow>,
}

impl Board {
    /// How many libraries, checks and claims, and what the claims came to.
    fn counts(&self) -> String {
        let count = |call: Call| {
            (self.rows.iter())
                .filter(|r| r.verdict == call.label())
                .count()
        };
        format!(
            "{} libraries through {} failure modes: {} limiter claims, {} hold, {} differ, {} inconclusive",
            self.libraries.len(),
            self.checks.len(),
            self.rows.len(),
            count(Call::Holds),
            count(Call::Differs),
            count(Call::Inconclusive),
        )
    }

    fn markdown(&self) -> String {
        let mut out = String::from("# Which library holds its limit?\n\n");
        let _ = writeln!(out, "{}.\n", self.counts());
        let _ = writeln!(
            out,
            "![the board: a library per row, a check per column]({})\n",
            picture::SVG
        );
        out.push_str(
            "Each library is installed from its registry by name and version (its adapter's lock file) and run \
             as itself with its own Redis client; every cell is the library's limiter claims in one check \
             (`ratelab check --list` says what each asserts), judged from the CSV the cell links. REPORT.md's \
             Custom limiters section has each claim's text, what it accepts and, when it differs, why.\n\n",
        );
        let heads: Vec<&str> = self.checks.iter().map(|(c, _)| c.name.as_str()).collect();
        let _ = writeln!(
            out,
            "| library | version and client | {} |",
            heads.join(" | ")
        );
        let _ = writeln!(out, "|---|---|{}", "---|".repeat(heads.len()));
        for (name, library) in &self.libraries {
            let cells: Vec<String> = self
                .checks
                .iter()
                .map(|(c, ran)| self.cell(name, c, ran))
                .collect();
            let _ = writeln!(out, "| `{name}` | {library} | {} |", cells.join(" | "));
        }
        out.push_str("\nWhat each check asserts:\n\n");
        for (c, _) in &self.checks {
            let _ = writeln!(out, "- **{}** ({}): {}", c.name, c.experiment, c.asserts);
        }
        out
    }

    /// One library in one check, as the table shows it: every claim holds (how many), or each
    /// that does not with its figure; a library the check did not run says why.
    fn cell(&self, name: &str, c: &Check, ran: &BTreeSet<String>) -> String {
        let mine = self.claims_of(name, c);
        let link = |text: String| format!("[{text}]({})", mine[0].evidence);
        match self.status(name, c, ran) {
            Status::NotRun(why) => why.into(),
            Status::NoClaim => "no claim".into(),
            Status::Holds(n) => link(format!("holds ({n})")),
            Status::Misses { holding, of, .. } => {
                let missed: Vec<String> = (mine.iter())
                    .filter(|r| r.verdict != Call::Holds.label())
                    .map(|r| {
                        let what = r.claim.rsplit('.').next().unwrap_or(&r.claim);
                        format!("**{}** `{what}`: {}", r.verdict, r.measured)
                    })
                    .collect();
                format!(
                    "{}<br/>{}",
                    link(format!("{holding} of {of} hold")),
                    missed.join("<br/>")
                )
            }
        }
    }

    fn claims_of(&self, name: &str, c: &Check) -> Vec<&ScoreRow> {
        (self.rows.iter())
            .filter(|r| r.limiter == name && r.check == c.name)
            .collect()
    }

    fn status(&self, name: &str, c: &Check, ran: &BTreeSet<String>) -> Status {
        if !ran.contains(name) {
            return Status::NotRun(match c.needs_cluster {
                true => "not run: no cluster client",
                false => "not run",
            });
        }
        let mine = self.claims_of(name, c);
        let holding = (mine.iter())
            .filter(|r| r.verdict == Call::Holds.label())
            .count();
        match mine.len() {
            0 => Status::NoClaim,
            of if of == holding => Status::Holds(of),
            of => Status::Misses {
                holding,
                of,
                differs: mine.iter().any(|r| r.verdict == Call::Differs.label()),
            },
        }
    }
}

/// What a library's claims in one check came to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Status {
    NotRun(&'static str),
    NoClaim,
    Holds(usize),
    /// Some do not hold: `differs` when one differs, else they are undecided.
    Misses {
        holding: usize,
        of: usize,
        differs: bool,
    },
}
