//! Offline chart rendering: every chart is rebuilt from the CSVs an experiment left behind,
//! so charts can be regenerated (or restyled) without re-running anything against Redis.

mod atomic;
pub(crate) mod axes;
pub(crate) mod bars;
mod bigkey;
mod calibrate;
mod cost;
mod draw;
mod latency;
pub(crate) mod lines;
mod memory;
mod outage;
mod place;
mod png;
mod race;
mod render;
pub(crate) mod spec;
mod tsmember;
mod window_edge;

pub use png::svg_to_png;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

/// Everything that can go wrong while turning a results CSV into chart files.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    /// The CSV could not be read or a row did not match the expected columns.
    #[error("csv: {0}")]
    Csv(#[from] csv::Error),
    /// Reading the CSV/SVG or writing a chart file failed.
    #[error("io: {0}")]
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

/// One chartable experiment: its id (= results subdir name), the CSV it reads, and its renderer.
struct Experiment {
    id: &'static str,
    csv: &'static str,
    render: fn(&Path) -> Result<Vec<PathBuf>, ChartError>,
}

/// The registry of experiments that have charts; add a row here when a new chart module lands.
const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        id: "race",
        csv: race::CSV_NAME,
        render: race::render,
    },
    Experiment {
        id: "atomic",
        csv: atomic::CSV_NAME,
        render: atomic::render,
    },
    Experiment {
        id: "cost",
        csv: cost::CSV_NAME,
        render: cost::render,
    },
    Experiment {
        id: "latency",
        csv: latency::CSV_NAME,
        render: latency::render,
    },
    Experiment {
        id: "calibrate",
        csv: calibrate::CSV_NAME,
        render: calibrate::render,
    },
    Experiment {
        id: "outage",
        csv: outage::CSV_NAME,
        render: outage::render,
    },
    Experiment {
        id: "tsmember",
        csv: tsmember::CSV_NAME,
        render: tsmember::render,
    },
    Experiment {
        id: "window-edge",
        csv: window_edge::CSV_NAME,
        render: window_edge::render,
    },
    Experiment {
        id: "memory",
        csv: memory::CSV_NAME,
        render: memory::render,
    },
    Experiment {
        id: "bigkey",
        csv: bigkey::CSV_NAME,
        render: bigkey::render,
    },
];

/// Renders every chart whose CSV exists under `results_dir` (one subdir per experiment id),
/// returning the written files and, separately, the charts that failed, so one bad CSV
/// never hides the others.
pub fn render_all(results_dir: &Path) -> (Vec<PathBuf>, Vec<(String, ChartError)>) {
    let mut written = Vec::new();
    let mut problems = Vec::new();
    for exp in EXPERIMENTS {
        let dir = results_dir.join(exp.id);
        // Experiments that were never run simply have no CSV; that is not a problem.
        if !dir.join(exp.csv).is_file() {
            continue;
        }
        match (exp.render)(&dir) {
            Ok(paths) => written.extend(paths),
            Err(e) => problems.push((exp.id.to_string(), e)),
        }
    }
    (written, problems)
}

/// Renders the charts of one experiment dir by experiment id, so the CLI can redraw a
/// single experiment; ids without a chart yield `Ok(vec![])`.
pub fn render_experiment(id: &str, experiment_dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    match EXPERIMENTS.iter().find(|e| e.id == id) {
        Some(exp) => (exp.render)(experiment_dir),
        None => Ok(Vec::new()),
    }
}

/// Reads every row of the CSV at `path` (columns matched by header name, extra ones ignored);
/// a missing file is `Missing` and a header-only file is `Empty`, so no chart is ever blank.
pub(crate) fn read_csv<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, ChartError> {
    if !path.is_file() {
        return Err(ChartError::Missing(path.to_path_buf()));
    }
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_path(path)?;
    let rows = reader.deserialize().collect::<Result<Vec<T>, _>>()?;
    if rows.is_empty() {
        return Err(ChartError::Empty(path.to_path_buf()));
    }
    Ok(rows)
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

    /// The real race.csv layout plus an unknown trailing column, which must be ignored.
    const CSV: &str = "\
scenario,strategy,processes,in_flight,trial,checks,admitted,denied,errors,limit,final_state,elapsed_ms,note
matrix,naive-bucket,1,1,0,1000,100,900,0,100,0,12.5,x
matrix,naive-bucket,1,2,0,1000,200,800,0,100,0,10.1,x
matrix,lua-bucket,1,1,0,1000,100,900,0,100,0,9.0,x
matrix,lua-bucket,1,2,0,1000,100,900,0,100,0,9.0,x
seed001,naive-window,1,500,0,500,500,0,0,100,500,3.2,x
seed001,incr-window,1,500,0,500,100,400,0,100,500,3.1,x
";

    fn race_dir(root: &Path, csv: &str) -> PathBuf {
        let dir = root.join("race");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("race.csv"), csv).unwrap();
        dir
    }

    #[test]
    fn race_renders_svg_and_png() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = race_dir(tmp.path(), CSV);
        let paths = render_experiment("race", &dir).unwrap();
        assert_eq!(paths, vec![dir.join("race.svg"), dir.join("race.png")]);
        let svg = fs::read_to_string(dir.join("race.svg")).unwrap();
        assert!(svg.contains("<svg"));
        assert!(svg.contains("limit"));
        for s in ["naive-bucket", "lua-bucket", "naive-window", "incr-window"] {
            assert!(svg.contains(s), "svg lacks strategy {s}");
        }
        let png = fs::read(dir.join("race.png")).unwrap();
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
        assert!(!dir.join("race.svg.tmp").exists() && !dir.join("race.png.tmp").exists());
    }

    #[test]
    fn header_only_csv_is_empty_error() {
        let tmp = tempfile::tempdir().unwrap();
        let header = CSV.lines().next().unwrap();
        let dir = race_dir(tmp.path(), &format!("{header}\n"));
        let err = render_experiment("race", &dir).unwrap_err();
        assert!(
            matches!(err, ChartError::Empty(ref p) if p.ends_with("race.csv")),
            "{err}"
        );
        assert!(!dir.join("race.svg").exists());
    }

    #[test]
    fn missing_csv_is_missing_and_skipped_by_render_all() {
        let tmp = tempfile::tempdir().unwrap();
        for exp in EXPERIMENTS {
            let err = render_experiment(exp.id, &tmp.path().join(exp.id)).unwrap_err();
            assert!(
                matches!(err, ChartError::Missing(ref p) if p.ends_with(exp.csv)),
                "{err}"
            );
        }
        csv_dir(
            tmp.path(),
            "calibrate",
            "calibrate.csv",
            "command,tool,pair,ops,ops_per_s,client_cpu_s,duration_s,clients,keys,redis_cpu_us_per_op,\
redis_busy_pct\nGET,x,0,1,1,0,1,1,1,0,0\n",
        );
        let (written, problems) = render_all(tmp.path());
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            written,
            ["calibrate.svg", "calibrate.png"].map(|n| tmp.path().join("calibrate").join(n))
        );
    }

    #[test]
    fn unknown_experiment_renders_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(render_experiment("nope", tmp.path()).unwrap().is_empty());
    }

    #[test]
    fn render_all_skips_unknown_dirs() {
        let tmp = tempfile::tempdir().unwrap();
        race_dir(tmp.path(), CSV);
        let other = tmp.path().join("mystery");
        fs::create_dir_all(&other).unwrap();
        fs::write(other.join("mystery.csv"), "a,b\n1,2\n").unwrap();
        let (written, problems) = render_all(tmp.path());
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(written.len(), 2);
        assert!(written
            .iter()
            .all(|p| p.starts_with(tmp.path().join("race"))));
    }

    #[test]
    fn render_all_reports_bad_csv_without_panicking() {
        let tmp = tempfile::tempdir().unwrap();
        race_dir(tmp.path(), "scenario,strategy\nmatrix,x\n");
        let (written, problems) = render_all(tmp.path());
        assert!(written.is_empty());
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].0, "race");
    }
}
