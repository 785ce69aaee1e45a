//! Atomic result directories: an experiment writes into `DIR/.<id>.partial-<pid>` and only a
//! finished run swaps it into `DIR/<id>`; a failed or interrupted run is moved aside to
//! `DIR/.<id>.failed` for inspection and never touches the previous good results.

use super::RecordError;
use serde::Serialize;
use std::fs::{self, File};
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
            writer: csv::Writer::from_writer(file),
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
    writer: csv::Writer<File>,
    path: PathBuf,
    _row: std::marker::PhantomData<R>,
}

impl<R: Serialize> CsvSink<R> {
    /// Appends one row and flushes it, so a crash loses at most the row being measured.
    pub fn write(&mut self, row: &R) -> Result<(), RecordError> {
        let path = &self.path;
        self.writer
            .serialize(row)
            .map_err(|source| RecordError::Csv {
                path: path.clone(),
                source,
            })?;
        self.writer.flush().map_err(|e| RecordError::io(path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
