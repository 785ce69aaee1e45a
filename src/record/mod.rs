//! Recording: CSV rows flushed as they are measured into a staging directory that replaces the
//! experiment's result directory only when the experiment finished, plus meta.json (the machine
//! from sysinfo) and MONITOR.

pub mod csv_file;
pub mod fields;
mod machine;
mod meta;
mod monitor;
mod run;
pub mod schema;
mod staging;
mod stalls;

pub use csv_file::{CsvFile, ReadError};
pub use fields::{Field, Kind};
pub use meta::{
    git_commit, host_meta, suspend_offset_ns, CpuSteal, HarnessStalls, HostMeta, Meta, RedisMeta,
    RunResources, SuspendCheck,
};
pub use monitor::{parse_monitor_line, MonitorCapture, MonitorLine};
pub use run::RunRecord;
pub use schema::{columns, csv_text, Table};
pub use staging::{set_aside_unfinished, CsvSink, Staging, SIGNIFICANT};
pub use stalls::{StallWatch, STALL};

/// What can go wrong writing results.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{path}")]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("csv {path}")]
    Csv {
        path: std::path::PathBuf,
        source: csv::Error,
    },
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("MONITOR: {0}")]
    Monitor(String),
}

impl RecordError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        RecordError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
