//! The machine, from sysinfo: what it is (CPU brand, cores, memory, OS, kernel) and how busy it
//! was over a run (load average at the start and end, CPU time of the harness and of the
//! redis-server processes it started, each CPU's steal), so a noisy machine is visible in the data.

use super::HostMeta;
use crate::server::steal_ns_by_cpu;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::time::Instant;
use sysinfo::{CpuRefreshKind, Pid, ProcessRefreshKind, ProcessesToUpdate, System};

/// The machine's facts; what sysinfo cannot read is `unknown` or absent.
pub fn host() -> HostMeta {
    let mut sys = System::new().ok();
    if let Some(sys) = sys.as_mut() {
        sys.refresh_cpu_list(CpuRefreshKind::nothing());
        sys.refresh_memory();
    }
    let brand = (sys.as_ref())
        .and_then(|s| s.cpus().first().map(|c| c.brand().trim().to_string()))
        .filter(|b| !b.is_empty());
    let logical = sys.as_ref().map_or(0, |s| s.cpus().len());
    HostMeta {
        cpu_model: brand.unwrap_or_else(|| "unknown".into()),
        // SAFETY: sysconf has no preconditions (a fallback when sysinfo saw no CPU).
        cpus_online: if logical > 0 {
            logical
        } else {
            unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize
        },
        kernel: System::kernel_version().unwrap_or_else(|_| "unknown".into()),
        hostname: System::host_name().unwrap_or_default(),
        physical_cores: System::physical_core_count().ok(),
        total_memory_bytes: sys.as_ref().map(|s| s.total_memory()).filter(|&b| b > 0),
        os: System::long_os_version().ok(),
    }
}

/// How busy the machine was and what the run's own processes used, start to end.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunResources {
    /// 1, 5 and 15-minute load averages when the run started, and when it ended.
    pub load_average_start: [f64; 3],
    pub load_average_end: [f64; 3],
    /// CPU seconds (user + system) of the harness process and of its live load-generator workers.
    pub harness_cpu_s: f64,
    /// CPU seconds of the redis-server processes the harness started that were alive at the end.
    pub redis_server_cpu_s: f64,
    /// How many such servers were alive at the end (0 against `--redis-url`).
    pub redis_server_processes: usize,
    /// CPU seconds of child processes that ended during the run (workers, replaced servers), from
    /// the kernel's account of reaped children: sysinfo cannot see a process that is gone.
    pub reaped_children_cpu_s: f64,
    /// Per CPU, the share of the run's wall time the hypervisor gave to something else (steal in
    /// /proc/stat): what a shared machine took that no process of the run could see.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_pct_by_cpu: Option<Vec<CpuSteal>>,
}

/// One CPU's steal over a run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CpuSteal {
    pub cpu: usize,
    /// Percent of the wall time between the run's first and last sample.
    pub steal_pct: f64,
}

/// One look at the machine and the run's processes.
pub struct Sample {
    load: [f64; 3],
    own_ms: u64,
    /// The harness's children by pid: whether it is a worker (the harness's own binary), its CPU ms.
    children: HashMap<Pid, (bool, u64)>,
    reaped_children_s: f64,
    /// Steal so far per CPU, ns, and when it was read (the wall time it is a share of).
    steal_ns: Vec<(usize, u64)>,
    at: Instant,
}

impl Sample {
    /// Reads the load average and the CPU time of this process and its children now.
    pub fn take() -> Self {
        let load = System::load_average()
            .map(|l| [l.one, l.five, l.fifteen])
            .unwrap_or_default();
        let own = Pid::from_u32(std::process::id());
        let me = std::env::current_exe().ok();
        let mut children = HashMap::new();
        let mut own_ms = 0;
        if let Ok(mut sys) = System::new() {
            let kind = ProcessRefreshKind::nothing()
                .with_cpu()
                .with_exe(sysinfo::UpdateKind::OnlyIfNotSet);
            sys.refresh_processes_specifics(ProcessesToUpdate::All, true, kind);
            for (pid, p) in sys.processes() {
                if *pid == own {
                    own_ms = p.accumulated_cpu_time();
                } else if p.parent() == Some(own) {
                    let worker = me.is_some() && p.exe() == me.as_deref();
                    children.insert(*pid, (worker, p.accumulated_cpu_time()));
                }
            }
        }
        Sample {
            load,
            own_ms,
            children,
            reaped_children_s: reaped_children_cpu_s(),
            steal_ns: steal_ns_by_cpu(),
            at: Instant::now(),
        }
    }

    /// What happened between `self` (the start) and `end`.
    pub fn until(&self, end: &Sample) -> RunResources {
        let mut harness_ms = end.own_ms.saturating_sub(self.own_ms);
        let mut redis_ms = 0;
        let mut servers = 0;
        for (pid, &(worker, ms)) in &end.children {
            let before = self.children.get(pid).map_or(0, |c| c.1);
            let used = ms.saturating_sub(before);
            if worker {
                harness_ms += used;
            } else {
                redis_ms += used;
                servers += 1;
            }
        }
        RunResources {
            load_average_start: self.load,
            load_average_end: end.load,
            harness_cpu_s: harness_ms as f64 / 1e3,
            redis_server_cpu_s: redis_ms as f64 / 1e3,
            redis_server_processes: servers,
            reaped_children_cpu_s: (end.reaped_children_s - self.reaped_children_s).max(0.0),
            steal_pct_by_cpu: self.steal_until(end),
        }
    }

    /// Each CPU's steal between the samples as a share of the wall time; None without /proc/stat.
    fn steal_until(&self, end: &Sample) -> Option<Vec<CpuSteal>> {
        let wall_ns = end.at.duration_since(self.at).as_nanos() as f64;
        let steal: Vec<CpuSteal> = (end.steal_ns.iter())
            .filter_map(|&(cpu, after)| {
                let before = self.steal_ns.iter().find(|(c, _)| *c == cpu)?.1;
                let steal_pct = match wall_ns > 0.0 {
                    true => 100.0 * after.saturating_sub(before) as f64 / wall_ns,
                    false => 0.0,
                };
                Some(CpuSteal { cpu, steal_pct })
            })
            .collect();
        (!steal.is_empty()).then_some(steal)
    }
}

/// User + system CPU seconds of every reaped child of this process so far.
fn reaped_children_cpu_s() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) } != 0 {
        return 0.0;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_is_described() {
        let h = host();
        assert!(h.cpus_online >= 1);
        assert_ne!(h.cpu_model, "");
        assert!(h.total_memory_bytes.is_some_and(|b| b > 1 << 20), "{h:?}");
        assert!(!h.kernel.is_empty());
    }

    #[test]
    fn a_busy_loop_shows_as_harness_cpu_and_a_child_as_redis_cpu() {
        let start = Sample::take();
        // A child that is not the harness's binary, busy for a while, alive at the end. It execs
        // its sleep, so killing it leaves no grandchild holding the test's output open (nextest
        // called the test leaky).
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; exec sleep 5",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed() < std::time::Duration::from_millis(300) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        std::hint::black_box(x);
        std::thread::sleep(std::time::Duration::from_millis(500));
        let end = Sample::take();
        let _ = child.kill();
        let _ = child.wait();
        let r = start.until(&end);
        // The loop spun at least until its own clock said 300 ms, minus what a preempting
        // neighbour took: more than nothing is what the clocks guarantee.
        assert!(r.harness_cpu_s > 0.0, "{r:?}");
        assert!(r.redis_server_processes >= 1, "{r:?}");
        assert!(r.load_average_end.iter().all(|l| *l >= 0.0));
        let steal = r.steal_pct_by_cpu.expect("/proc/stat lists every CPU");
        assert_eq!(steal.len(), host().cpus_online, "{steal:?}");
        assert!(
            steal.iter().all(|s| (0.0..=100.0).contains(&s.steal_pct)),
            "{steal:?}"
        );
    }
}
