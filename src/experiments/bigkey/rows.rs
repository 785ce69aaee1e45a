//! bigkey's CSV schema.

use super::{Operation, YesNo};
use crate::record::CsvFile;
use serde::{Deserialize, Serialize};

/// Where Redis's background threads (bio: lazy free, fsync, close) ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bio {
    /// On Redis's own pinned core, beside the main thread (the run's usual pinning).
    Shared,
    /// On the harness's core (`bio_cpulist`), the main thread alone on Redis's (`server_cpulist`).
    Apart,
    /// On Redis's own core, the lazy-free thread at SCHED_IDLE: it runs only when the main thread
    /// does not want the core.
    Idle,
}

/// `bigkey.csv`: One row per operation on one big log.
pub const BIGKEY: CsvFile<BigkeyRow> = CsvFile::new("bigkey.csv");

/// One operation on one big log.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BigkeyRow {
    /// `trim` (one ZREMRANGEBYSCORE removing every entry) or `expire` (the key's own expiry,
    /// found by Redis's active expire cycle).
    pub operation: Operation,
    /// Entries in the sorted-set log before the operation.
    pub entries: u64,
    /// lazyfree-lazy-expire in effect.
    pub lazyfree: YesNo,
    /// Where Redis's background threads ran.
    pub bio: Bio,
    pub repeat: u32,
    /// Entries the operation removed (all of them, or the run fails).
    pub removed: u64,
    /// MEMORY USAGE of the log before the operation (Redis's default sampling).
    pub key_bytes: u64,
    /// trim: the command's round trip as the harness saw it (empty for expire: no command).
    pub command_ms: Option<f64>,
    /// trim: the command's own duration by SLOWLOG.
    pub slowlog_ms: Option<f64>,
    /// The worst PING round trip overlapping the operation: how long other clients waited.
    pub probe_max_stall_ms: f64,
    /// The probe's median round trip before the operation, for scale.
    pub probe_p50_ms: f64,
    /// The probe's worst round trip before the operation: what this machine's noise alone does.
    pub probe_baseline_max_ms: f64,
    /// PINGs overlapping the operation.
    pub probe_pings: u64,
    /// The operation's own event in LATENCY LATEST (`command` for trim, `expire-*` for expire),
    /// in ms: how long the main thread was blocked by its own account; 0 when under 1 ms.
    pub server_blocked_ms: f64,
    /// Every event LATENCY LATEST held, `name=max_ms`, worst first.
    pub latency_events: String,
    /// expire: from the key's disappearance until no object waited to be freed in the background.
    pub background_free_ms: Option<f64>,
    /// The span the probe was read over: the command's round trip, or expiry deadline to freed.
    pub span_ms: f64,
    /// The main thread's time on a CPU from just before the operation to its end (schedstat).
    pub main_cpu_ms: Option<f64>,
    /// The main thread's time runnable but waiting for a CPU another task held, over the same span:
    /// how long Redis wanted its core and did not get it.
    pub main_run_queue_ms: Option<f64>,
    /// The lazy-free thread's (`bio_lazy_free`) time on a CPU over the same span: the free's work.
    pub lazy_free_cpu_ms: Option<f64>,
    /// The lazy-free thread's time runnable but waiting for a CPU over the same span.
    pub lazy_free_run_queue_ms: Option<f64>,
    /// Of the worst PING overlapping the operation (`probe_max_stall_ms`), the time the probe's own
    /// thread was runnable but waiting for a CPU (schedstat): the harness's delay, not the server's.
    pub probe_run_queue_ms: Option<f64>,
    /// How long building the log with ZADD took, before the operation.
    pub build_s: f64,
}
