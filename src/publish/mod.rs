//! Publishing a results directory as one self-describing, verifiable dataset: `datapackage.json`
//! (a Frictionless Data Package whose Table Schemas are read off the row types), `SHA256SUMS`,
//! `CITATION.cff`, `LICENSE` and a `README.md` are written beside the CSVs, and the whole tree goes
//! into one reproducible `.tar.gz` named as the package (`ratelab-<directory>.tar.gz`, unpacking
//! into `ratelab-<directory>/`). [`verify`] checks a copy: checksums, every CSV against its schema, and
//! the charts, REPORT.md and claims.csv redrawn from the CSVs alone.
//!
//! Every experiment of the registry ([`crate::experiments::ALL`]) with results in the directory
//! is published with every file of its subdirectory; nothing here names an experiment.

mod archive;
mod checksums;
mod citation;
mod datapackage;
mod readme;
mod tables;
mod verify;

pub use archive::{extract, write_archive};
pub use checksums::{sha256_hex, SHA256SUMS};
pub use datapackage::SEEDS;
pub use verify::{verify, Check, Verification};

use crate::experiments::{frame::EXPERIMENT_TOML, Experiment, ALL};
use crate::record::{Meta, Table};
use std::path::{Path, PathBuf};

/// The files publishing adds at the dataset's root (SHA256SUMS covers the others).
pub const DATAPACKAGE: &str = "datapackage.json";
pub const CITATION: &str = "CITATION.cff";
pub const README: &str = "README.md";
pub const LICENSE: &str = "LICENSE";
/// The licence of ratelab's code, and of every dataset it publishes (data, charts and text).
pub const LICENSE_TEXT: &str = include_str!("../../LICENSE");
/// The files `ratelab report` writes at the root, published with the rows.
pub const REPORT_FILES: [&str; 4] = ["REPORT.md", "REPORT.html", "claims.csv", "claims.json"];

/// The first line of an `experiment.toml` that publishing added because the run predates
/// recording it: the file says itself that it is the publishing build's, not the run's.
pub const TOML_ADDED: &str = "# Added by `ratelab publish` from the publishing build: this run \
    predates recording its parameter file; meta.json `params` holds the values it used.\n";

/// What can go wrong publishing or verifying.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error("{path}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0} is not a results directory (no experiment of this build has results in it)")]
    NotResults(PathBuf),
    #[error("{dir} has no {file}: run `ratelab report {dir}` first")]
    NoReport { dir: PathBuf, file: &'static str },
    #[error("{0}")]
    Drift(String),
    #[error("{path} is truncated or not a .tar.gz archive")]
    Archive {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}: no datapackage.json in it: not a published ratelab dataset")]
    NotPublished(PathBuf),
    #[error("{path} is not the JSON expected")]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
}

impl PublishError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        PublishError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// One experiment with results in the dataset.
pub struct Present {
    pub experiment: &'static dyn Experiment,
    /// Its tables whose CSV is there.
    pub tables: Vec<Table>,
    /// Its meta.json, when it reads.
    pub meta: Option<Meta>,
}

/// A results directory as publishing sees it.
pub struct Dataset {
    pub root: PathBuf,
    pub present: Vec<Present>,
    /// Top-level entries that belong to no experiment of this build, left out of the dataset.
    pub left_out: Vec<String>,
    /// The package's title, when one was given (`publish --title`, or an earlier publish's).
    pub title: Option<String>,
}

impl Dataset {
    /// Finds every registered experiment with results under `root`.
    pub fn scan(root: &Path) -> Result<Self, PublishError> {
        if !root.is_dir() {
            return Err(PublishError::NotResults(root.to_path_buf()));
        }
        let mut present = Vec::new();
        for &experiment in ALL {
            let dir = root.join(experiment.id());
            let tables: Vec<Table> = (experiment.tables().into_iter())
                .filter(|t| dir.join(t.file).is_file())
                .collect();
            if tables.is_empty() {
                continue;
            }
            let meta = std::fs::read_to_string(dir.join("meta.json"))
                .ok()
                .and_then(|text| serde_json::from_str(&text).ok());
            present.push(Present {
                experiment,
                tables,
                meta,
            });
        }
        if present.is_empty() {
            return Err(PublishError::NotResults(root.to_path_buf()));
        }
        let ours = |name: &str| {
            present.iter().any(|p| p.experiment.id() == name)
                || REPORT_FILES.contains(&name)
                || crate::scoreboard::FILES.contains(&name)
                || [DATAPACKAGE, CITATION, README, LICENSE, SHA256SUMS].contains(&name)
        };
        let mut left_out: Vec<String> = read_names(root)?
            .into_iter()
            .filter(|n| !n.starts_with('.') && !ours(n))
            .collect();
        left_out.sort();
        Ok(Dataset {
            root: root.to_path_buf(),
            present,
            left_out,
            title: None,
        })
    }

    /// Every file of the dataset, relative to the root, `/`-separated, sorted: the report files,
    /// the publishing files that exist, and every non-hidden file under each experiment's directory.
    pub fn files(&self) -> Result<Vec<String>, PublishError> {
        let publishing = [DATAPACKAGE, CITATION, README, LICENSE];
        let board = crate::scoreboard::FILES;
        let mut files: Vec<String> = (REPORT_FILES.iter().chain(&board).chain(&publishing))
            .filter(|f| self.root.join(f).is_file())
            .map(|f| f.to_string())
            .collect();
        for p in &self.present {
            walk(&self.root, p.experiment.id(), &mut files)?;
        }
        files.sort();
        Ok(files)
    }

    /// The latest end of a run in the dataset (RFC 3339), or now when no meta.json says.
    pub fn created(&self) -> String {
        (self.present.iter())
            .filter_map(|p| p.meta.as_ref().map(|m| m.ended_at.clone()))
            .max()
            .unwrap_or_else(|| chrono::Utc::now().to_rfc3339())
    }

    /// The package's name: `ratelab-<directory name>`, in the characters Frictionless allows.
    pub fn name(&self) -> String {
        let dir = (self.root.canonicalize().ok())
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "results".into());
        let slug: String = (dir.to_lowercase().chars())
            .map(|c| match c {
                'a'..='z' | '0'..='9' | '.' | '_' | '-' => c,
                _ => '-',
            })
            .collect();
        format!("ratelab-{slug}")
    }

    /// The package's title: the one given, else one made from the directory's name.
    pub fn title(&self) -> String {
        self.title.clone().unwrap_or_else(|| {
            format!(
                "ratelab {}: Redis rate limiters measured against a real redis-server",
                self.name().trim_start_matches("ratelab-")
            )
        })
    }

    /// The archive's file name, the same everywhere it is named: `<package name>.tar.gz`.
    pub fn archive_name(&self) -> String {
        format!("{}.tar.gz", self.name())
    }
}

/// The tables at the dataset's root that are there (claims.csv, which `ratelab report` writes, and a
/// scoreboard's scoreboard.csv).
pub fn root_tables(root: &Path) -> Vec<Table> {
    [crate::analysis::claims_table(), crate::scoreboard::table()]
        .into_iter()
        .filter(|t| root.join(t.file).is_file())
        .collect()
}

/// The table a resource path names, for this build: `<experiment>/<file>` or a root table.
pub fn table_for(path: &str) -> Option<Table> {
    let root = [crate::analysis::claims_table(), crate::scoreboard::table()];
    if let Some(t) = root.into_iter().find(|t| t.file == path) {
        return Some(t);
    }
    let (id, file) = path.split_once('/')?;
    let experiment = crate::experiments::find(id).ok()?;
    experiment.tables().into_iter().find(|t| t.file == file)
}

fn read_names(dir: &Path) -> Result<Vec<String>, PublishError> {
    let entries = std::fs::read_dir(dir).map_err(|e| PublishError::io(dir, e))?;
    Ok(entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect())
}

/// Adds every non-hidden file under `root/rel` to `files`.
fn walk(root: &Path, rel: &str, files: &mut Vec<String>) -> Result<(), PublishError> {
    for name in read_names(&root.join(rel))? {
        if name.starts_with('.') {
            continue;
        }
        let child = format!("{rel}/{name}");
        let path = root.join(&child);
        if path.is_dir() {
            walk(root, &child, files)?;
        } else if path.is_file() {
            files.push(child);
        }
    }
    Ok(())
}

/// What `publish` wrote.
pub struct Published {
    pub archive: PathBuf,
    pub name: String,
    pub files: usize,
    pub bytes: u64,
    /// Parameter files added at publishing (now or before) because the run predates them.
    pub tomls_added: Vec<String>,
    pub left_out: Vec<String>,
}

/// Publishes `dir` under the title of an earlier publish, or one made from its name.
pub fn publish(dir: &Path, out: Option<&Path>) -> Result<Published, PublishError> {
    publish_titled(dir, out, None)
}

/// Publishes `dir`: checks every CSV against its row type, writes each missing
/// `experiment.toml`, datapackage.json, CITATION.cff, LICENSE, README.md and SHA256SUMS into
/// `dir`, then the archive (default: `ratelab-<dir name>.tar.gz` beside `dir`). `title`, else the
/// title `dir` was published under before, titles the package.
pub fn publish_titled(
    dir: &Path,
    out: Option<&Path>,
    title: Option<&str>,
) -> Result<Published, PublishError> {
    let mut dataset = Dataset::scan(dir)?;
    for file in REPORT_FILES {
        if !dir.join(file).is_file() {
            return Err(PublishError::NoReport {
                dir: dir.to_path_buf(),
                file,
            });
        }
    }
    tables::check_headers_against_row_types(&dataset)?;
    let mut tomls_added = Vec::new();
    for p in &dataset.present {
        let rel = format!("{}/{EXPERIMENT_TOML}", p.experiment.id());
        let path = dir.join(&rel);
        if !path.is_file() {
            let text = format!("{TOML_ADDED}{}", p.experiment.toml());
            std::fs::write(&path, text).map_err(|e| PublishError::io(&path, e))?;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if text.starts_with(TOML_ADDED) {
            tomls_added.push(rel);
        }
    }
    let title = (title.map(str::to_string)).or_else(|| earlier_title(dir));
    // Re-read: the tree now holds the parameter files.
    dataset = Dataset::scan(dir)?;
    dataset.title = title;
    let created = dataset.created();
    let package = datapackage::build(&dataset, &created)?;
    write(
        dir,
        DATAPACKAGE,
        &(serde_json::to_string_pretty(&package).unwrap_or_default() + "\n"),
    )?;
    write(dir, CITATION, &citation::render(&dataset, &created))?;
    write(dir, README, &readme::render(&dataset, &tomls_added)?)?;
    write(dir, LICENSE, LICENSE_TEXT)?;
    let files = dataset.files()?;
    write(dir, SHA256SUMS, &checksums::render(dir, &files)?)?;
    let mut all = files.clone();
    all.push(SHA256SUMS.to_string());
    all.sort();
    let name = dataset.name();
    let archive = match out {
        Some(path) => path.to_path_buf(),
        None => default_archive(dir, &dataset.archive_name()),
    };
    let mtime = chrono::DateTime::parse_from_rfc3339(&created)
        .map(|t| t.timestamp().max(0) as u64)
        .unwrap_or(0);
    let bytes = write_archive(dir, &all, &name, mtime, &archive)?;
    Ok(Published {
        archive,
        name,
        files: all.len(),
        bytes,
        tomls_added,
        left_out: dataset.left_out,
    })
}

/// `results/reference` -> `results/ratelab-reference.tar.gz`.
fn default_archive(dir: &Path, archive_name: &str) -> PathBuf {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    dir.with_file_name(archive_name)
}

/// The title in `dir`'s datapackage.json, when an earlier publish wrote one.
fn earlier_title(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(DATAPACKAGE)).ok()?;
    let package: serde_json::Value = serde_json::from_str(&text).ok()?;
    package["title"].as_str().map(str::to_string)
}

fn write(dir: &Path, name: &str, text: &str) -> Result<(), PublishError> {
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(|e| PublishError::io(&path, e))
}
