//! Server-side cost: Redis main-thread CPU from `INFO cpu` and per-command time from
//! `INFO commandstats`, sampled before and after a run and differenced.

use super::sched::{SchedCost, SchedSample};
use super::{Info, ServerError, Target};
use std::collections::BTreeMap;
use std::time::Instant;

/// One sample of the server's counters.
#[derive(Debug, Clone)]
pub struct ServerSample {
    /// Main-thread CPU (user + sys) in µs: the thread that runs commands and scripts.
    pub main_thread_cpu_us: f64,
    /// Per command (lower-case, e.g. `evalsha`): (calls, usec).
    pub commands: BTreeMap<String, (u64, u64)>,
    /// When the sample was taken (monotonic).
    pub at: Instant,
    /// The kernel's view of a server the harness started (None for one the user named).
    pub sched: Option<SchedSample>,
}

/// What a run cost the server, between two samples.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerCost {
    /// Main-thread CPU spent, µs.
    pub main_thread_cpu_us: f64,
    /// Wall time between the samples, µs.
    pub wall_us: f64,
    /// Per command: (calls, usec) spent in the command itself.
    pub commands: BTreeMap<String, (u64, u64)>,
    /// Run-queue wait and steal of a server the harness started (None for one the user named).
    pub sched: Option<SchedCost>,
}

impl ServerCost {
    /// Share of wall time the main thread was on a CPU, in percent.
    pub fn busy_pct(&self) -> f64 {
        self.share_pct(self.main_thread_cpu_us)
    }

    /// `us` as a percentage of the wall time between the samples.
    fn share_pct(&self, us: f64) -> f64 {
        if self.wall_us > 0.0 {
            100.0 * us / self.wall_us
        } else {
            0.0
        }
    }

    /// Share of wall time the main thread was runnable but off a CPU: on a run queue behind another
    /// task, or stolen by the hypervisor (the kernel excludes steal from the thread's CPU time).
    /// None for a server the user named.
    pub fn waiting_for_cpu_pct(&self) -> Option<f64> {
        Some(self.share_pct(self.off_cpu_us()?))
    }

    /// Time the main thread was runnable but off a CPU between the samples (run queue and steal),
    /// µs: the most any command's wall time can owe the machine rather than Redis. None for a
    /// server the user named.
    pub fn off_cpu_us(&self) -> Option<f64> {
        let sched = self.sched?;
        Some((sched.run_queue_ns + sched.steal_ns.unwrap_or(0)) as f64 / 1e3)
    }

    /// Share of wall time the main thread was neither on a CPU nor waiting for one: idle in its
    /// event loop, waiting for requests. None for a server the user named.
    pub fn idle_pct(&self) -> Option<f64> {
        Some((100.0 - self.busy_pct() - self.waiting_for_cpu_pct()?).max(0.0))
    }

    /// Commands Redis executed between the samples (`calls` in INFO commandstats), less the
    /// sampling's own: each command a script ran and each one inside MULTI/EXEC counts, so this is
    /// load on Redis, not round trips. Everything else any client sent is counted.
    pub fn commands_executed(&self) -> u64 {
        (self.commands.iter())
            .filter(|(name, _)| !SAMPLER_COMMANDS.contains(&name.as_str()))
            .map(|(_, (calls, _))| calls)
            .sum()
    }

    /// Mean µs per call of the busiest command (the one under test), and its name.
    pub fn busiest_command(&self) -> Option<(String, f64)> {
        self.commands
            .iter()
            .filter(|(_, (calls, _))| *calls > 0)
            .max_by_key(|(_, (_, usec))| *usec)
            .map(|(name, (calls, usec))| (name.clone(), *usec as f64 / *calls as f64))
    }
}

/// What [`ServerSample::take`] itself sends, as INFO commandstats names it: its INFO calls and
/// the handshake redis-rs sends on each new connection (an error before Redis 7.2, so not
/// counted there). No AUTH or SELECT: a server ratelab starts has no password and uses db 0.
const SAMPLER_COMMANDS: [&str; 2] = ["info", "client|setinfo"];

/// Main-thread CPU in µs from an `INFO cpu` reply (Redis >= 6.2 reports per-thread counters).
pub fn main_thread_cpu_us(info: &Info) -> Option<f64> {
    let user = info.get_f64("used_cpu_user_main_thread")?;
    let sys = info.get_f64("used_cpu_sys_main_thread")?;
    Some((user + sys) * 1e6)
}

/// Parses `cmdstat_<name>:calls=N,usec=M,...` lines of `INFO commandstats`.
pub fn command_stats(info: &Info) -> BTreeMap<String, (u64, u64)> {
    info.fields()
        .iter()
        .filter_map(|(k, v)| {
            let name = k.strip_prefix("cmdstat_")?;
            let field = |f: &str| {
                v.split(',')
                    .find_map(|kv| kv.strip_prefix(f)?.strip_prefix('=')?.parse::<u64>().ok())
            };
            Some((name.to_string(), (field("calls")?, field("usec")?)))
        })
        .collect()
}

impl ServerSample {
    /// Reads INFO cpu and INFO commandstats now.
    pub fn take(target: &Target) -> Result<Self, ServerError> {
        let cpu = target.info("cpu")?;
        let main_thread_cpu_us = main_thread_cpu_us(&cpu).ok_or_else(|| {
            ServerError::Unsupported("INFO cpu has no *_main_thread counters (Redis < 6.2?)".into())
        })?;
        let commands = command_stats(&target.info("commandstats")?);
        let sched = match target {
            Target::Managed(server) => SchedSample::read(server.pid(), &server.options().cpus),
            Target::External { .. } | Target::NoServer => None,
        };
        Ok(ServerSample {
            main_thread_cpu_us,
            commands,
            at: Instant::now(),
            sched,
        })
    }

    /// The cost between this (earlier) sample and `later`.
    pub fn cost_until(&self, later: &ServerSample) -> ServerCost {
        let commands = later
            .commands
            .iter()
            .map(|(name, &(calls, usec))| {
                let (c0, u0) = self.commands.get(name).copied().unwrap_or((0, 0));
                (
                    name.clone(),
                    (calls.saturating_sub(c0), usec.saturating_sub(u0)),
                )
            })
            .filter(|(_, (calls, _))| *calls > 0)
            .collect();
        ServerCost {
            main_thread_cpu_us: later.main_thread_cpu_us - self.main_thread_cpu_us,
            wall_us: later.at.duration_since(self.at).as_secs_f64() * 1e6,
            commands,
            sched: (self.sched.as_ref())
                .zip(later.sched.as_ref())
                .map(|(before, after)| before.cost_until(after)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cpu_and_commandstats() {
        let info = Info::parse(
            "# CPU\r\nused_cpu_sys_main_thread:1.250000\r\nused_cpu_user_main_thread:0.750000\r\n\
             # Commandstats\r\ncmdstat_evalsha:calls=10,usec=120,\
             usec_per_call=12.00,rejected_calls=0,failed_calls=0\r\n\
             cmdstat_get:calls=3,usec=3,usec_per_call=1.00\r\n",
        );
        assert_eq!(main_thread_cpu_us(&info), Some(2_000_000.0));
        let stats = command_stats(&info);
        assert_eq!(stats["evalsha"], (10, 120));
        assert_eq!(stats["get"], (3, 3));
    }

    #[test]
    fn cost_is_a_difference_and_picks_the_busiest_command() {
        let t0 = Instant::now();
        let before = ServerSample {
            main_thread_cpu_us: 100.0,
            commands: [
                ("evalsha".to_string(), (10, 100)),
                ("info".to_string(), (5, 50)),
            ]
            .into(),
            at: t0,
            sched: None,
        };
        let after = ServerSample {
            main_thread_cpu_us: 600.0,
            commands: [
                ("evalsha".to_string(), (60, 700)),
                ("info".to_string(), (7, 60)),
            ]
            .into(),
            at: t0 + std::time::Duration::from_millis(1),
            sched: None,
        };
        let cost = before.cost_until(&after);
        assert_eq!(cost.main_thread_cpu_us, 500.0);
        assert!((cost.busy_pct() - 50.0).abs() < 1e-9);
        assert_eq!(cost.busiest_command(), Some(("evalsha".to_string(), 12.0)));
        assert_eq!(
            cost.commands_executed(),
            50,
            "the sampling's INFO calls are not counted"
        );
        assert_eq!((cost.waiting_for_cpu_pct(), cost.idle_pct()), (None, None));
        // With the kernel's view: 1 ms of wall, 0.5 ms busy, 51 µs queued and 20 µs stolen.
        let sched = |run_delay_ns, steal_ns| {
            Some(SchedSample {
                run_delay_ns,
                steal_ns,
            })
        };
        let before = ServerSample {
            sched: sched(1_000, Some(0)),
            ..before
        };
        let after = ServerSample {
            sched: sched(52_000, Some(20_000)),
            ..after
        };
        let cost = before.cost_until(&after);
        assert!(
            (cost.waiting_for_cpu_pct().unwrap() - 7.1).abs() < 1e-6,
            "{cost:?}"
        );
        assert!((cost.idle_pct().unwrap() - 42.9).abs() < 1e-6, "{cost:?}");
    }
}
