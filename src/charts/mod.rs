//! Offline chart rendering: every chart is rebuilt from the CSVs an experiment left behind,
//! so charts can be regenerated (or restyled) without re-running anything against Redis.
//! This module knows chart kinds (the spec and its renderer), never an experiment: each
//! experiment's `charts.rs` groups its own rows into a spec.

pub(crate) mod axes;
pub(crate) mod bars;
mod draw;
pub(crate) mod lines;
mod metrics;
mod place;
mod png;
mod render;
pub(crate) mod spec;
pub(crate) mod stacked;
pub(crate) mod trials;

pub(crate) use metrics::text_width_px;
pub use png::svg_to_png;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::record::{CsvFile, ReadError};
use serde::de::DeserializeOwned;

/// Everything that can go wrong while turning a results CSV into chart files.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    /// The CSV could not be read or a row did not match the expected columns.
    #[error(transparent)]
    Csv(#[from] csv::Error),
    /// The same, naming the file (the csv error names the line).
    #[error("csv {}", path.display())]
    CsvAt { path: PathBuf, source: csv::Error },
    /// Reading the CSV/SVG or writing a chart file failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// plotters failed while drawing the SVG.
    #[error("plot: {0}")]
    Plot(String),
    /// The SVG could not be rasterised or the PNG could not be encoded.
    #[error("png: {0}")]
    Png(String),
    /// The CSV has a header but no data rows, so there is nothing to draw.
    #[error("no data rows in {}", .0.display())]
    Empty(PathBuf),
    /// The experiment dir has no CSV for this chart.
    #[error("missing {}", .0.display())]
    Missing(PathBuf),
}

/// Reads every row of the CSV at `path` with the one reader ([`crate::record::csv_file::read`]);
/// a missing file is `Missing` and a header-only file is `Empty`, so no chart is ever blank.
pub(crate) fn read_csv<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, ChartError> {
    let rows = crate::record::csv_file::read(path)?;
    if rows.is_empty() {
        return Err(ChartError::Empty(path.to_path_buf()));
    }
    Ok(rows)
}

/// The rows of a typed CSV handle in `dir` (see [`read_csv`]).
pub(crate) fn read_file<T: DeserializeOwned>(
    file: &CsvFile<T>,
    dir: &Path,
) -> Result<Vec<T>, ChartError> {
    read_csv(&file.path(dir))
}

impl From<ReadError> for ChartError {
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::Missing(path) => ChartError::Missing(path),
            ReadError::Csv { path, source } => ChartError::CsvAt { path, source },
        }
    }
}

/// Index of `key` in `keys`, appending it first if absent: series and slots keep the order in
/// which the CSV first mentions them.
pub(crate) fn index_of<K: PartialEq>(keys: &mut Vec<K>, key: K) -> usize {
    match keys.iter().position(|k| *k == key) {
        Some(i) => i,
        None => {
            keys.push(key);
            keys.len() - 1
        }
    }
}

/// Mean of the finite values (NaN and infinities, e.g. from a zero-decision run, are skipped);
/// `None` when there are none.
pub(crate) fn mean(values: &[f64]) -> Option<f64> {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    (!finite.is_empty()).then(|| finite.iter().sum::<f64>() / finite.len() as f64)
}

/// Writes `bytes` to `path` via `path.tmp` + rename, so a crash never leaves a half-written chart.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ChartError> {
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(".tmp");
    let tmp = PathBuf::from(tmp_name);
    if let Err(e) = fs::write(&tmp, bytes).and_then(|()| fs::rename(&tmp, path)) {
        // Best effort: do not leave the temp file lying around next to the results.
        let _ = fs::remove_file(&tmp);
        return Err(e.into());
    }
    Ok(())
}

/// Writes `dir/{stem}.svg` and its rasterised `dir/{stem}.png`; shared by all chart modules.
pub(crate) fn write_chart(dir: &Path, stem: &str, svg: &str) -> Result<Vec<PathBuf>, ChartError> {
    let svg_path = dir.join(format!("{stem}.svg"));
    let png_path = dir.join(format!("{stem}.png"));
    write_atomic(&svg_path, svg.as_bytes())?;
    svg_to_png(&svg_path, &png_path)?;
    Ok(vec![svg_path, png_path])
}

/// Renders `chart` and writes it as `dir/{stem}.svg` and `.png`.
pub(crate) fn write_spec(
    dir: &Path,
    stem: &str,
    chart: &spec::Chart,
) -> Result<Vec<PathBuf>, ChartError> {
    let mut svg = String::new();
    render::render(&mut svg, chart)?;
    write_chart(dir, stem, &svg)
}

/// Converts any plotters drawing error into our error type (they are generic over the backend).
pub(crate) fn plot_err<E: std::fmt::Display>(e: E) -> ChartError {
    ChartError::Plot(e.to_string())
}

/// Writes `contents` to `root/{id}/{csv}` and returns the experiment dir; shared by chart tests.
#[cfg(test)]
pub(crate) fn csv_dir(root: &Path, id: &str, csv: &str, contents: &str) -> PathBuf {
    let dir = root.join(id);
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join(csv), contents).unwrap();
    dir
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_skips_non_finite_values() {
        assert_eq!(mean(&[1.0, f64::NAN, 3.0, f64::INFINITY]), Some(2.0));
        assert_eq!(mean(&[f64::NAN]), None);
        let mut keys = vec!["a"];
        assert_eq!((index_of(&mut keys, "b"), index_of(&mut keys, "a")), (1, 0));
    }
}
