//! meta.json: everything needed to judge or repeat a run — the server, its config, the machine,
//! the pinning, the harness build, the parameters, the seed, the clocks.

use crate::load::{ClientTimeouts, OpenLoopHealth};
use crate::server::pin::PinPlan;
use serde::{Deserialize, Serialize};

pub use super::machine::{CpuSteal, RunResources};
pub use super::stalls::HarnessStalls;
pub use crate::server::RedisMeta;

/// The setup of one experiment run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Meta {
    pub experiment: String,
    pub profile: String,
    pub harness_version: String,
    pub git_commit: String,
    pub started_at: String,
    pub ended_at: String,
    pub wall_seconds: f64,
    pub seed: u64,
    pub params: serde_json::Value,
    pub redis: RedisMeta,
    pub host: HostMeta,
    pub pinning: PinPlan,
    pub client_timeouts: ClientTimeouts,
    pub suspend: SuspendCheck,
    /// What the reader must know to interpret the numbers (warm-up, exclusions, caveats).
    pub notes: Vec<String>,
    /// Whether the open-loop generator kept to its schedule (experiments that use it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<OpenLoopHealth>,
    /// How busy the machine was and what the run's processes used (absent in older runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<RunResources>,
    /// How often and how long the harness itself was held off its CPU (absent in older runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness_stalls: Option<HarnessStalls>,
}

/// The machine the run happened on (from sysinfo; the optional fields are absent in older runs).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostMeta {
    /// The CPU's brand string.
    pub cpu_model: String,
    /// Logical CPUs.
    pub cpus_online: usize,
    pub kernel: String,
    pub hostname: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical_cores: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_memory_bytes: Option<u64>,
    /// The OS's long name and version (e.g. "Linux (Debian GNU/Linux 12)").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<String>,
}

/// Whether the machine slept during the run: timers cannot fire while suspended, so a sleep
/// looks like a huge stall (the trap seed 000 fell into).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, Default)]
pub struct SuspendCheck {
    /// CLOCK_BOOTTIME minus CLOCK_MONOTONIC at the start, in ns.
    pub offset_start_ns: i128,
    /// The same at the end.
    pub offset_end_ns: i128,
    /// True when the offset grew by more than 100 ms: the machine was suspended.
    pub suspended: bool,
}

impl SuspendCheck {
    /// Compares the offsets taken at the start and end of a run.
    pub fn between(offset_start_ns: i128, offset_end_ns: i128) -> Self {
        SuspendCheck {
            offset_start_ns,
            offset_end_ns,
            suspended: offset_end_ns - offset_start_ns > 100_000_000,
        }
    }
}

fn clock_ns(clock: libc::clockid_t) -> i128 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid clock id and out pointer.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128
}

/// CLOCK_BOOTTIME minus CLOCK_MONOTONIC now: grows only while the machine is suspended.
pub fn suspend_offset_ns() -> i128 {
    clock_ns(libc::CLOCK_BOOTTIME) - clock_ns(libc::CLOCK_MONOTONIC)
}

/// The commit the binary was built from (`-dirty` when the tree had changes), or "unknown".
pub fn git_commit() -> String {
    option_env!("RATELAB_GIT_COMMIT")
        .unwrap_or("unknown")
        .to_string()
}

/// The machine's CPU brand, logical and physical cores, memory, OS, kernel and hostname.
pub fn host_meta() -> HostMeta {
    super::machine::host()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suspend_is_flagged_only_past_100ms() {
        assert!(!SuspendCheck::between(5, 5 + 1_000_000).suspended);
        assert!(SuspendCheck::between(0, 1_808_000_000_000).suspended);
    }

    #[test]
    fn offset_is_monotone_enough() {
        let a = suspend_offset_ns();
        let b = suspend_offset_ns();
        assert!((b - a).abs() < 100_000_000);
    }
}
