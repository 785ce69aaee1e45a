//! A typed handle per CSV file: its name, spelled once beside its row type, is how the body
//! opens its sink, how charts and summaries read it back, and how the published schema names it.
//! [`read`] is the one CSV reader: analysis, charts and the handles all read through it.
//!
//! ```ignore
//! pub const LATENCY: CsvFile<LatencyRow> = CsvFile::new("latency.csv");
//! let mut sink = LATENCY.create(&session.run.staging)?;   // body
//! let rows = LATENCY.read(dir)?;                          // charts, report
//! LATENCY.table()                                         // Definition::tables
//! ```

use super::{CsvSink, RecordError, Staging, Table};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

/// One CSV file an experiment writes, of rows `R`.
pub struct CsvFile<R> {
    name: &'static str,
    /// Columns added after runs that are still read (see [`Table::added`]).
    added: &'static [&'static str],
    row: PhantomData<fn() -> R>,
}

// By hand: a derive would ask `R` to be Clone and Copy too.
impl<R> Clone for CsvFile<R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for CsvFile<R> {}

impl<R> std::fmt::Debug for CsvFile<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CsvFile({})", self.name)
    }
}

impl<R> CsvFile<R> {
    /// The file `name` (`latency.csv`) in an experiment's results directory.
    pub const fn new(name: &'static str) -> Self {
        CsvFile {
            name,
            added: &[],
            row: PhantomData,
        }
    }

    /// The same file, whose row type gained `columns` (each with a serde default) after runs
    /// that are still read: their CSVs lack them and still pass the header checks.
    pub const fn added(self, columns: &'static [&'static str]) -> Self {
        CsvFile {
            added: columns,
            ..self
        }
    }

    /// Its file name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// Where it is in the results directory `dir` of its experiment.
    pub fn path(&self, dir: &Path) -> PathBuf {
        dir.join(self.name)
    }
}

impl<R: Serialize> CsvFile<R> {
    /// Creates it in `staging`; rows are flushed one by one.
    pub fn create(&self, staging: &Staging) -> Result<CsvSink<R>, RecordError> {
        staging.csv(self.name)
    }
}

impl<R: DeserializeOwned> CsvFile<R> {
    /// Every row of it in `dir`.
    pub fn read(&self, dir: &Path) -> Result<Vec<R>, ReadError> {
        read(&self.path(dir))
    }

    /// Its schema: the columns, types and descriptions of `R`, for datapackage.json and the
    /// header checks.
    pub fn table(&self) -> Table {
        Table::of::<R>(self.name).with_added(self.added)
    }
}

/// Why a CSV could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// No such file (the experiment did not run, or not this far).
    #[error("missing {}", .0.display())]
    Missing(PathBuf),
    /// A row that does not fit the row type, or an unreadable file; the csv error names the line.
    #[error("csv {}: {source}", path.display())]
    Csv { path: PathBuf, source: csv::Error },
}

/// Every row of the CSV at `path` as `R` (a row type, or a map of column to cell): columns matched
/// by header name, extra ones ignored, and nothing trimmed, so a cell or header with spaces around
/// it is an error rather than quietly read as something ratelab never wrote.
pub fn read<R: DeserializeOwned>(path: &Path) -> Result<Vec<R>, ReadError> {
    let at = |source| ReadError::Csv {
        path: path.to_path_buf(),
        source,
    };
    let mut reader = csv::Reader::from_path(path).map_err(|e| match e.kind() {
        csv::ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::NotFound => {
            ReadError::Missing(path.to_path_buf())
        }
        _ => at(e),
    })?;
    reader.deserialize().collect::<Result<_, _>>().map_err(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use std::collections::BTreeMap;

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    struct Row {
        strategy: String,
        p50_us: f64,
    }

    const FILE: CsvFile<Row> = CsvFile::new("t.csv");

    #[test]
    fn reads_rows_and_maps_and_names_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            matches!(FILE.read(dir.path()), Err(ReadError::Missing(p)) if p.ends_with("t.csv"))
        );
        std::fs::write(FILE.path(dir.path()), "p50_us,strategy,extra\n12.5,get,x\n").unwrap();
        let rows = FILE.read(dir.path()).unwrap();
        assert_eq!(
            rows,
            [Row {
                strategy: "get".into(),
                p50_us: 12.5
            }]
        );
        let maps: Vec<BTreeMap<String, String>> = read(&FILE.path(dir.path())).unwrap();
        assert_eq!(maps[0]["extra"], "x");
        // Spaces are not trimmed: the stricter of the two readers ratelab had.
        std::fs::write(FILE.path(dir.path()), "strategy,p50_us\nget, 12.5\n").unwrap();
        let err = FILE.read(dir.path()).unwrap_err().to_string();
        assert!(err.starts_with("csv ") && err.contains("t.csv"), "{err}");
        assert_eq!(FILE.table().columns, ["strategy", "p50_us"]);
    }
}
