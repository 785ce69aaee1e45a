//! CPU pinning: Redis on one core, the load generator on the others.
//!
//! On a 2-core machine an unpinned load generator steals Redis's core and every throughput figure
//! then measures the scheduler. The plan is computed once from the CPUs this process may use.

use serde::{Deserialize, Serialize};
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Which CPUs Redis and the harness (and its workers) run on; recorded in meta.json.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct PinPlan {
    /// CPUs this process was allowed to use when the plan was made.
    pub available: Vec<usize>,
    /// CPUs redis-server is restricted to; empty means not pinned.
    pub redis: Vec<usize>,
    /// CPUs the harness and its worker processes are restricted to; empty means not pinned.
    pub harness: Vec<usize>,
}

impl PinPlan {
    /// Splits the available CPUs: the first for Redis, the rest for the harness (>= 2 CPUs only).
    pub fn from_available(available: Vec<usize>) -> Self {
        if available.len() >= 2 {
            let redis = vec![available[0]];
            let harness = available[1..].to_vec();
            PinPlan {
                available,
                redis,
                harness,
            }
        } else {
            PinPlan {
                available,
                redis: Vec::new(),
                harness: Vec::new(),
            }
        }
    }

    /// Reads the CPUs this process may run on and plans from them.
    pub fn detect() -> Self {
        Self::from_available(allowed_cpus())
    }

    /// Whether pinning is in effect (false on a single CPU).
    pub fn is_pinned(&self) -> bool {
        !self.redis.is_empty()
    }
}

/// CPUs in this thread's affinity mask, ascending.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
            .collect()
    }
}

fn cpu_set(cpus: &[usize]) -> libc::cpu_set_t {
    // SAFETY: zeroed cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        // SAFETY: CPU_SET on an owned set.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    set
}

/// Restricts the calling thread (and the threads and processes it creates later) to `cpus`.
pub fn pin_current_thread(cpus: &[usize]) -> std::io::Result<()> {
    if cpus.is_empty() {
        return Ok(());
    }
    let set = cpu_set(cpus);
    // SAFETY: valid set and size.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Makes the spawned process start restricted to `cpus` (no-op for an empty list).
pub fn pin_command(cmd: &mut Command, cpus: &[usize]) {
    if cpus.is_empty() {
        return;
    }
    let set = cpu_set(cpus);
    // SAFETY: sched_setaffinity is async-signal-safe; the set was built before fork.
    unsafe {
        cmd.pre_exec(move || {
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_cpus_split_one_each() {
        let plan = PinPlan::from_available(vec![0, 1]);
        assert_eq!(plan.redis, vec![0]);
        assert_eq!(plan.harness, vec![1]);
        assert!(plan.is_pinned());
    }

    #[test]
    fn one_cpu_is_not_pinned() {
        let plan = PinPlan::from_available(vec![3]);
        assert!(plan.redis.is_empty() && plan.harness.is_empty());
        assert!(!plan.is_pinned());
    }

    #[test]
    fn redis_takes_the_first_allowed_cpu() {
        let plan = PinPlan::from_available(vec![2, 5, 7]);
        assert_eq!(plan.redis, vec![2]);
        assert_eq!(plan.harness, vec![5, 7]);
    }
}
