//! The kernel's view of a server the harness started: how long its main thread was runnable but
//! waiting for a CPU, and how much of its pinned core the hypervisor took (steal).
//!
//! Why: Redis's own counters say how long its thread ran, not why it did not run the rest of the
//! time. On a shared machine the difference between "Redis waited for the client" (idle in
//! epoll) and "Redis wanted a CPU and did not get one" decides whether a busy figure under 100%
//! describes the load generator or the machine.

/// One reading of `/proc/<pid>/task/<pid>/schedstat` and of `/proc/stat` for the server's CPUs.
/// It carries no clock: the server sample it belongs to times it (`ServerSample::at`), so busy,
/// waiting and idle are shares of one wall time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SchedSample {
    /// Time the main thread spent runnable on a run queue, waiting for a CPU, ns.
    pub run_delay_ns: u64,
    /// Steal on the CPUs the server is pinned to, ns (None when it is not pinned).
    pub steal_ns: Option<u64>,
}

/// What the kernel saw between two samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SchedCost {
    /// The main thread was runnable but another task held its CPU, ns.
    pub run_queue_ns: u64,
    /// The hypervisor ran something else on the server's CPU, ns (None when not pinned).
    pub steal_ns: Option<u64>,
}

impl SchedSample {
    /// Reads the main thread (`tid == pid`) of `pid` and the steal of `cpus`; None where the
    /// kernel does not expose schedstat (or the process is gone).
    pub fn read(pid: u32, cpus: &[usize]) -> Option<Self> {
        let schedstat =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/schedstat")).ok()?;
        Some(SchedSample {
            run_delay_ns: parse_run_delay(&schedstat)?,
            steal_ns: match cpus.is_empty() {
                true => None,
                false => steal_of(&steal_ns_by_cpu(), cpus),
            },
        })
    }

    /// What happened from this (earlier) sample to `later`.
    pub fn cost_until(&self, later: &SchedSample) -> SchedCost {
        SchedCost {
            run_queue_ns: later.run_delay_ns.saturating_sub(self.run_delay_ns),
            steal_ns: (self.steal_ns)
                .zip(later.steal_ns)
                .map(|(before, after)| after.saturating_sub(before)),
        }
    }
}

/// The calling thread's schedstat, opened once (`/proc/thread-self` is the thread that opens it):
/// its time runnable but waiting for a CPU, read again and again without reopening.
pub(crate) struct ThreadRunDelay(Option<std::fs::File>);

impl ThreadRunDelay {
    /// The calling thread's; reads nothing where there is no schedstat.
    pub(crate) fn open() -> Self {
        ThreadRunDelay(std::fs::File::open("/proc/thread-self/schedstat").ok())
    }

    /// Its run-queue wait so far, ns.
    pub(crate) fn now_ns(&self) -> Option<u64> {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 96];
        let n = self.0.as_ref()?.read_at(&mut buf, 0).ok()?;
        parse_run_delay(std::str::from_utf8(&buf[..n]).ok()?)
    }
}

/// The second field of a schedstat line: `<on-cpu ns> <run-queue wait ns> <timeslices>`.
pub(crate) fn parse_run_delay(schedstat: &str) -> Option<u64> {
    schedstat.split_whitespace().nth(1)?.parse().ok()
}

/// A per-CPU figure summed over `cpus`; None if one of them is not listed.
fn steal_of(by_cpu: &[(usize, u64)], cpus: &[usize]) -> Option<u64> {
    (cpus.iter())
        .map(|cpu| by_cpu.iter().find(|(c, _)| c == cpu).map(|(_, v)| v))
        .sum()
}

/// (CPU, steal ticks) for every `cpuN` line of `/proc/stat`, in its order.
fn parse_steal_by_cpu(stat: &str) -> Vec<(usize, u64)> {
    stat.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let cpu = fields.next()?.strip_prefix("cpu")?.parse().ok()?;
            Some((cpu, fields.nth(7)?.parse().ok()?))
        })
        .collect()
}

/// Steal per CPU so far, ns: the time the hypervisor ran something else on each of this machine's
/// CPUs (empty where /proc/stat cannot be read).
pub fn steal_ns_by_cpu() -> Vec<(usize, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let hz = clock_ticks_per_s();
    (parse_steal_by_cpu(&stat).into_iter())
        .map(|(cpu, ticks)| (cpu, ticks * 1_000_000_000 / hz))
        .collect()
}

/// USER_HZ, the unit of /proc/stat.
fn clock_ticks_per_s() -> u64 {
    // SAFETY: sysconf reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as u64
    } else {
        100
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_threads_run_delay_is_read_and_counts_forward() {
        let waits = ThreadRunDelay::open();
        let before = waits.now_ns().expect("schedstat has a run delay");
        std::thread::yield_now();
        assert!(waits.now_ns().unwrap() >= before);
    }

    use super::*;

    #[test]
    fn reads_run_delay_and_steal_of_the_pinned_cpus() {
        assert_eq!(parse_run_delay("123 4567 89\n"), Some(4567));
        assert_eq!(parse_run_delay("garbage"), None);
        let stat = "cpu  1310 0 1515 258022 1975 0 16 92 0 0\n\
                    cpu0 344 0 602 130343 142 0 3 49 0 0\n\
                    cpu1 966 0 912 127679 1832 0 12 43 0 0\n";
        let by_cpu = parse_steal_by_cpu(stat);
        assert_eq!(
            by_cpu,
            vec![(0, 49), (1, 43)],
            "the all-CPU line is not one"
        );
        assert_eq!(steal_of(&by_cpu, &[0]), Some(49));
        assert_eq!(steal_of(&by_cpu, &[0, 1]), Some(92));
        assert_eq!(
            steal_of(&by_cpu, &[5]),
            None,
            "a CPU /proc/stat does not list"
        );
    }

    #[test]
    fn cost_is_the_difference_and_unpinned_has_no_steal() {
        let before = SchedSample {
            run_delay_ns: 1_000,
            steal_ns: Some(0),
        };
        let after = SchedSample {
            run_delay_ns: 51_000_000 + 1_000,
            steal_ns: Some(20_000_000),
        };
        let cost = before.cost_until(&after);
        assert_eq!(cost.run_queue_ns, 51_000_000);
        assert_eq!(cost.steal_ns, Some(20_000_000));
        let unpinned = SchedSample {
            steal_ns: None,
            ..after
        };
        assert_eq!(before.cost_until(&unpinned).steal_ns, None);
    }

    #[test]
    fn reads_this_process_main_thread() {
        // The test process's own main thread: schedstat exists wherever the kernel keeps it.
        let pid = std::process::id();
        if std::path::Path::new(&format!("/proc/{pid}/task/{pid}/schedstat")).exists() {
            let sample = SchedSample::read(pid, &[0]).expect("schedstat and /proc/stat readable");
            assert!(sample.steal_ns.is_some());
        }
    }
}
