//! Atomic result directories: an experiment writes into `DIR/.<id>.partial-<pid>` and only a
//! finished run swaps it into `DIR/<id>`; a failed or interrupted run is moved aside to
//! `DIR/.<id>.failed` for inspection and never touches the previous good results.

use super::RecordError;
use serde::Serialize;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, Once};

/// Staging directories not yet committed or set aside. SIGINT and SIGTERM end the process without
/// unwinding, so `Drop` never runs then: the interrupt handler sets these aside instead. Commit and
/// `Drop` take the lock too, so a directory is committed or set aside once, never both.
static UNFINISHED: Mutex<Vec<Unfinished>> = Mutex::new(Vec::new());
/// Hands [`set_aside_unfinished`] to the interrupt handler once.
static HOOKED: Once = Once::new();

/// Where one unfinished run's rows are, and where they go if it does not finish.
struct Unfinished {
    work_dir: PathBuf,
    failed_dir: PathBuf,
    final_dir: PathBuf,
}

fn unfinished() -> MutexGuard<'static, Vec<Unfinished>> {
    UNFINISHED.lock().unwrap_or_else(|p| p.into_inner())
}

/// Moves the partial rows of every run in progress to its `.failed` directory (the interrupt
/// handler's part: the previous results stay as they are).
pub fn set_aside_unfinished() {
    for run in unfinished().drain(..) {
        run.set_aside();
    }
}

impl Unfinished {
    fn set_aside(&self) {
        let _ = fs::remove_dir_all(&self.failed_dir);
        if fs::rename(&self.work_dir, &self.failed_dir).is_ok() {
            eprintln!(
                "ratelab: the run did not finish; its partial rows are in {} and {} is unchanged",
                self.failed_dir.display(),
                self.final_dir.display()
            );
        }
    }
}

/// A result directory being written.
pub struct Staging {
    final_dir: PathBuf,
    work_dir: PathBuf,
    failed_dir: PathBuf,
    committed: bool,
}

impl Staging {
    /// Creates an empty staging directory for experiment `id` under `out`.
    pub fn new(out: &Path, id: &str) -> Result<Self, RecordError> {
        fs::create_dir_all(out).map_err(|e| RecordError::io(out, e))?;
        remove_abandoned(out, id);
        let work_dir = out.join(format!(".{id}.partial-{}", std::process::id()));
        if work_dir.exists() {
            fs::remove_dir_all(&work_dir).map_err(|e| RecordError::io(&work_dir, e))?;
        }
        fs::create_dir(&work_dir).map_err(|e| RecordError::io(&work_dir, e))?;
        let staging = Staging {
            final_dir: out.join(id),
            failed_dir: out.join(format!(".{id}.failed")),
            work_dir,
            committed: false,
        };
        HOOKED.call_once(|| crate::server::install_interrupt_handler(Some(set_aside_unfinished)));
        unfinished().push(staging.unfinished());
        Ok(staging)
    }

    fn unfinished(&self) -> Unfinished {
        Unfinished {
            work_dir: self.work_dir.clone(),
            failed_dir: self.failed_dir.clone(),
            final_dir: self.final_dir.clone(),
        }
    }

    /// Takes this run off the unfinished list; false if an interrupt has already set it aside.
    fn take_unfinished(&self, list: &mut Vec<Unfinished>) -> bool {
        let before = list.len();
        list.retain(|u| u.work_dir != self.work_dir);
        list.len() < before
    }

    /// Where files are written until commit.
    pub fn path(&self) -> &Path {
        &self.work_dir
    }

    /// Where the results will be once committed.
    pub fn final_dir(&self) -> &Path {
        &self.final_dir
    }

    /// Opens a CSV file in the staging directory; rows are flushed one by one.
    pub fn csv<R: Serialize>(&self, name: &str) -> Result<CsvSink<R>, RecordError> {
        let path = self.work_dir.join(name);
        let file = File::create(&path).map_err(|e| RecordError::io(&path, e))?;
        Ok(CsvSink {
            headed: false,
            file,
            path,
            _row: std::marker::PhantomData,
        })
    }

    /// Writes a pretty JSON file into the staging directory.
    pub fn write_json<T: Serialize>(&self, name: &str, value: &T) -> Result<(), RecordError> {
        let path = self.work_dir.join(name);
        let text = serde_json::to_string_pretty(value)?;
        fs::write(&path, text + "\n").map_err(|e| RecordError::io(&path, e))
    }

    /// Writes a text file into the staging directory.
    pub fn write_text(&self, name: &str, text: &str) -> Result<(), RecordError> {
        let path = self.work_dir.join(name);
        fs::write(&path, text).map_err(|e| RecordError::io(&path, e))
    }

    /// Moves the finished results into place, replacing the previous ones in one step.
    pub fn commit(mut self) -> Result<PathBuf, RecordError> {
        let mut list = unfinished();
        if !self.take_unfinished(&mut list) {
            // An interrupt set the rows aside a moment ago: the process is exiting.
            self.committed = true;
            let why = std::io::Error::new(std::io::ErrorKind::Interrupted, "interrupted");
            return Err(RecordError::io(&self.work_dir, why));
        }
        let previous = self.final_dir.exists();
        let moved = if previous {
            exchange(&self.work_dir, &self.final_dir)
        } else {
            fs::rename(&self.work_dir, &self.final_dir)
                .map_err(|e| RecordError::io(&self.final_dir, e))
        };
        if let Err(e) = moved {
            // Still unfinished: `Drop` sets it aside (after this function releases the lock).
            list.push(self.unfinished());
            return Err(e);
        }
        self.committed = true;
        drop(list);
        if previous {
            // The staging path now holds the previous results.
            fs::remove_dir_all(&self.work_dir).map_err(|e| RecordError::io(&self.work_dir, e))?;
        }
        Ok(self.final_dir.clone())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        let mut list = unfinished();
        if self.take_unfinished(&mut list) {
            self.unfinished().set_aside();
        }
    }
}

/// Removes staging directories of runs whose process is gone (killed by a signal, which skips
/// `Drop`); a staging directory of a live process is another run in progress and is left alone.
fn remove_abandoned(out: &Path, id: &str) {
    let prefix = format!(".{id}.partial-");
    let Ok(entries) = fs::read_dir(out) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(&prefix)
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// Swaps two directories atomically (Linux renameat2 RENAME_EXCHANGE), so readers see either the
/// old results or the new ones, never a mix or nothing.
fn exchange(a: &Path, b: &Path) -> Result<(), RecordError> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let to_c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes()).map_err(|e| {
            RecordError::io(p, std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
        })
    };
    let (ca, cb) = (to_c(a)?, to_c(b)?);
    // SAFETY: two valid NUL-terminated paths; AT_FDCWD resolves them relative to the cwd.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    // Filesystems without RENAME_EXCHANGE: move the old aside first, then the new in.
    let aside = b.with_extension("previous");
    let _ = fs::remove_dir_all(&aside);
    fs::rename(b, &aside).map_err(|e| RecordError::io(b, e))?;
    fs::rename(a, b).map_err(|e| RecordError::io(a, e))?;
    fs::rename(&aside, a).map_err(|e| RecordError::io(&aside, e))
}

/// A CSV file with a header, one flat row type, flushed after every row.
pub struct CsvSink<R> {
    /// The header line is written (with the first row).
    headed: bool,
    file: File,
    path: PathBuf,
    _row: std::marker::PhantomData<R>,
}

impl<R: Serialize> CsvSink<R> {
    /// Appends one row and writes it out, so a crash loses at most the row being measured.
    /// Floats keep [`SIGNIFICANT`] digits (see [`without_float_noise`]).
    pub fn write(&mut self, row: &R) -> Result<(), RecordError> {
        let path = &self.path;
        let csv_error = |source| RecordError::Csv {
            path: path.clone(),
            source,
        };
        // A line's own small writer: the default 8 kB buffer per row cost more than the row.
        let mut line = (csv::WriterBuilder::new().buffer_capacity(256))
            .has_headers(!self.headed)
            .from_writer(Vec::with_capacity(256));
        line.serialize(row).map_err(csv_error)?;
        let text = line
            .into_inner()
            .map_err(|e| RecordError::io(path, e.into_error()))?;
        self.headed = true;
        let text = match text.contains(&b'"') {
            false => unquoted_without_float_noise(&text),
            true => quoted_without_float_noise(&text).map_err(csv_error)?,
        };
        (self.file.write_all(&text))
            .and_then(|()| self.file.write_all(b"\n"))
            .map_err(|e| RecordError::io(path, e))
    }
}

/// [`without_float_noise`] over the fields of `lines` (CSV without a quote: every field lies
/// between its commas), without the last line's end.
fn unquoted_without_float_noise(lines: &[u8]) -> Vec<u8> {
    let lines = lines.strip_suffix(b"\n").unwrap_or(lines);
    let fields = |line: &[u8]| {
        let cleaned: Vec<Vec<u8>> = line
            .split(|&b| b == b',')
            .map(without_float_noise)
            .collect();
        cleaned.join(&b","[..])
    };
    let cleaned: Vec<Vec<u8>> = lines.split(|&b| b == b'\n').map(fields).collect();
    cleaned.join(&b"\n"[..])
}

/// [`without_float_noise`] over the fields of `lines` (CSV with quoted fields), without the last
/// line's end.
fn quoted_without_float_noise(lines: &[u8]) -> Result<Vec<u8>, csv::Error> {
    let mut out = csv::Writer::from_writer(Vec::new());
    let records = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(lines);
    for record in records.into_byte_records() {
        let record: csv::ByteRecord = record?.iter().map(without_float_noise).collect();
        out.write_byte_record(&record)?;
    }
    let mut text = out
        .into_inner()
        .map_err(|e| csv::Error::from(e.into_error()))?;
    text.pop();
    Ok(text)
}

/// Significant digits a float in a CSV keeps. What ratelab measures (counts, times in ns or µs,
/// shares of them) is far coarser; arithmetic on it leaves noise in the 16th and 17th digits
/// (`112264.99999999907` for 112265), which a reader would take for precision.
pub const SIGNIFICANT: usize = 12;

/// `field` with a float of more than [`SIGNIFICANT`] significant digits rounded to them (and
/// written as briefly as it reads back, as ratelab writes floats); any other field unchanged.
fn without_float_noise(field: &[u8]) -> Vec<u8> {
    let unchanged = || field.to_vec();
    let Ok(text) = std::str::from_utf8(field) else {
        return unchanged();
    };
    let mantissa = text.split(['e', 'E']).next().unwrap_or_default();
    let digits = mantissa.trim_start_matches(['-', '+', '0', '.']).chars();
    if !text.contains('.') || digits.filter(char::is_ascii_digit).count() <= SIGNIFICANT {
        return unchanged();
    }
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() => {
            let rounded: f64 = format!("{v:.prec$e}", prec = SIGNIFICANT - 1)
                .parse()
                .unwrap_or(v);
            ryu::Buffer::new().format(rounded).as_bytes().to_vec()
        }
        _ => unchanged(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_lose_their_arithmetic_noise_and_nothing_else_changes() {
        let clean = |s: &str| String::from_utf8(without_float_noise(s.as_bytes())).unwrap();
        assert_eq!(clean("112264.99999999907"), "112265.0");
        assert_eq!(clean("0.30000000000000004"), "0.3");
        assert_eq!(clean("-0.000012345678901234567"), "-0.0000123456789012");
        for same in [
            "1.10",
            "7.0.15",
            "12345678901234567",
            "0.125",
            "lua-bucket",
            "",
            "1e300",
        ] {
            assert_eq!(clean(same), same);
        }
        let out = tempfile::tempdir().unwrap();
        let staging = Staging::new(out.path(), "x").unwrap();
        #[derive(Serialize)]
        struct Measured {
            name: &'static str,
            mean_ms: f64,
        }
        let mut sink = staging.csv::<Measured>("m.csv").unwrap();
        for mean_ms in [112264.99999999907, 2.5] {
            sink.write(&Measured {
                name: "a,b",
                mean_ms,
            })
            .unwrap();
        }
        let text = fs::read_to_string(staging.path().join("m.csv")).unwrap();
        assert_eq!(text, "name,mean_ms\n\"a,b\",112265.0\n\"a,b\",2.5\n");
        // Without quotes, field by field; the header comes with the first row.
        let mut sink = staging.csv::<Measured>("n.csv").unwrap();
        for mean_ms in [0.1 + 0.2, 2.5] {
            sink.write(&Measured {
                name: "ab",
                mean_ms,
            })
            .unwrap();
        }
        let text = fs::read_to_string(staging.path().join("n.csv")).unwrap();
        assert_eq!(text, "name,mean_ms\nab,0.3\nab,2.5\n");
    }

    #[derive(Serialize)]
    struct Row {
        a: u32,
        b: &'static str,
    }

    #[test]
    fn abandoned_staging_of_a_dead_process_is_removed() {
        let out = tempfile::tempdir().unwrap();
        // No process has pid 0 in /proc, so this one was abandoned; our own pid is alive.
        fs::create_dir(out.path().join(".x.partial-0")).unwrap();
        let alive = out
            .path()
            .join(format!(".y.partial-{}", std::process::id()));
        fs::create_dir(&alive).unwrap();
        let staging = Staging::new(out.path(), "x").unwrap();
        assert!(!out.path().join(".x.partial-0").exists());
        assert!(
            alive.exists(),
            "another experiment's staging is not ours to remove"
        );
        drop(staging.commit());
    }

    #[test]
    fn commit_replaces_previous_results_and_failure_keeps_them() {
        let out = tempfile::tempdir().unwrap();
        let first = Staging::new(out.path(), "x").unwrap();
        let mut sink = first.csv::<Row>("x.csv").unwrap();
        sink.write(&Row { a: 1, b: "one" }).unwrap();
        first.commit().unwrap();
        let good = fs::read_to_string(out.path().join("x/x.csv")).unwrap();
        assert_eq!(good, "a,b\n1,one\n");

        // A run that fails midway leaves the good results alone.
        {
            let failed = Staging::new(out.path(), "x").unwrap();
            let mut sink = failed.csv::<Row>("x.csv").unwrap();
            sink.write(&Row { a: 2, b: "half" }).unwrap();
        }
        assert_eq!(
            fs::read_to_string(out.path().join("x/x.csv")).unwrap(),
            good
        );
        assert!(out.path().join(".x.failed/x.csv").exists());

        let second = Staging::new(out.path(), "x").unwrap();
        second
            .csv::<Row>("x.csv")
            .unwrap()
            .write(&Row { a: 3, b: "three" })
            .unwrap();
        second.commit().unwrap();
        let now = fs::read_to_string(out.path().join("x/x.csv")).unwrap();
        assert_eq!(now, "a,b\n3,three\n");
        let leftovers: Vec<_> = fs::read_dir(out.path())
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("partial"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
}
