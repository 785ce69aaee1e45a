//! Redis's threads as the kernel sees them: who ran and who waited for a CPU while a big log went.
//!
//! Why: LATENCY and the probe say that Redis was late, not why. A lazy free moves the work to the
//! `bio_lazy_free` thread; whether the main thread then waits for that thread (both on one pinned
//! core) is the kernel's per-thread schedstat: on-CPU time and time runnable but not running. The
//! `idle` variation lowers the freeing thread to SCHED_IDLE, so it runs only when the main thread
//! does not want the core: if the stall is the two threads sharing a core, it goes with that.

use std::io;

/// The thread Redis frees objects on (its `comm`, as Redis 7 names it).
pub const LAZY_FREE_THREAD: &str = "bio_lazy_free";

/// One reading of a thread's `/proc/<pid>/task/<tid>/schedstat`, ns.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ThreadTimes {
    /// Time it ran.
    pub on_cpu_ns: u64,
    /// Time it was runnable, waiting for a CPU another task held.
    pub run_queue_ns: u64,
}

impl ThreadTimes {
    /// Reads one thread; None when the kernel does not expose schedstat or the thread is gone.
    pub fn read(pid: u32, tid: u32) -> Option<Self> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/schedstat")).ok()?;
        let mut fields = text.split_whitespace().map(|f| f.parse::<u64>().ok());
        Some(ThreadTimes {
            on_cpu_ns: fields.next()??,
            run_queue_ns: fields.next()??,
        })
    }

    /// What the thread did from this (earlier) reading to `later`, in ms: (on CPU, run queue).
    pub fn ms_until(&self, later: &ThreadTimes) -> (f64, f64) {
        let ms = |a: u64, b: u64| b.saturating_sub(a) as f64 / 1e6;
        (
            ms(self.on_cpu_ns, later.on_cpu_ns),
            ms(self.run_queue_ns, later.run_queue_ns),
        )
    }
}

/// The id of `pid`'s thread named `name`, if it has one.
pub fn thread_named(pid: u32, name: &str) -> Option<u32> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    tasks.flatten().find_map(|task| {
        let tid: u32 = task.file_name().to_str()?.parse().ok()?;
        let comm = std::fs::read_to_string(task.path().join("comm")).ok()?;
        (comm.trim() == name).then_some(tid)
    })
}

/// Puts one thread of a process this user owns at SCHED_IDLE (no privilege needed to lower it).
pub fn make_idle(tid: u32) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: a plain syscall on a thread id; `param` outlives the call.
    let rc = unsafe { libc::sched_setscheduler(tid as libc::pid_t, libc::SCHED_IDLE, &param) };
    match rc {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// The server's main thread and its lazy-free thread, read together around an operation.
#[derive(Debug, Clone, Copy)]
pub struct Watched {
    pid: u32,
    lazy_free: Option<u32>,
}

/// What the two threads did during an operation, ms; None where the kernel did not say.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spent {
    pub main_cpu_ms: Option<f64>,
    pub main_run_queue_ms: Option<f64>,
    pub lazy_free_cpu_ms: Option<f64>,
    pub lazy_free_run_queue_ms: Option<f64>,
}

/// One reading of both threads.
#[derive(Debug, Clone, Copy)]
pub struct Reading {
    main: Option<ThreadTimes>,
    lazy_free: Option<ThreadTimes>,
}

impl Watched {
    /// The threads of the server process `pid`.
    pub fn of(pid: u32) -> Self {
        Watched {
            pid,
            lazy_free: thread_named(pid, LAZY_FREE_THREAD),
        }
    }

    pub fn read(&self) -> Reading {
        Reading {
            main: ThreadTimes::read(self.pid, self.pid),
            lazy_free: self.lazy_free.and_then(|t| ThreadTimes::read(self.pid, t)),
        }
    }
}

impl Reading {
    /// What happened from this (earlier) reading to `later`.
    pub fn spent_until(&self, later: &Reading) -> Spent {
        let both =
            |a: Option<ThreadTimes>, b: Option<ThreadTimes>| a.zip(b).map(|(a, b)| a.ms_until(&b));
        let main = both(self.main, later.main);
        let lazy = both(self.lazy_free, later.lazy_free);
        Spent {
            main_cpu_ms: main.map(|m| m.0),
            main_run_queue_ms: main.map(|m| m.1),
            lazy_free_cpu_ms: lazy.map(|l| l.0),
            lazy_free_run_queue_ms: lazy.map(|l| l.1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_thread_is_read_and_counts_forward() {
        let pid = std::process::id();
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() } as u32;
        let before = ThreadTimes::read(pid, tid).expect("schedstat of this thread");
        let spin = std::time::Instant::now();
        while spin.elapsed() < std::time::Duration::from_millis(5) {}
        let after = ThreadTimes::read(pid, tid).unwrap();
        let (cpu_ms, _) = before.ms_until(&after);
        assert!(cpu_ms > 0.0, "{before:?} {after:?}");
        assert_eq!(thread_named(pid, "no-such-thread-name"), None);
    }
}
