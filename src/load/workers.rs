//! Multi-process closed loop. Each worker is this binary re-executed as the hidden `worker`
//! subcommand: a real OS process, as the seeds' Node processes and pods were.
//!
//! Protocol on the worker's stdin/stdout, one line each: parent sends the job (JSON: a closed- or
//! open-loop spec); worker connects and answers `ready`; parent sends `go` to all workers at once,
//! so they overlap; worker answers its tally (JSON) and exits. A worker that fails says why on
//! stderr and exits non-zero.

use super::closed::{self, connect, run_checks};
use super::open::{OpenLoop, OpenSpec, OpenTally};
use super::pod::{self, PodFleet, PodSpec, PodTally};
use super::{open_worker, pipelined, CheckTally, LoadError, Stop, WorkerSpec};
use crate::server::{pin, set_parent_death_signal};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};

/// A closed-loop run: `processes` workers built from one template.
#[derive(Debug, Clone)]
pub struct ClosedLoop<'a> {
    /// The ratelab binary to re-execute.
    pub exe: &'a Path,
    /// CPUs the workers are pinned to (empty: not pinned).
    pub cpus: &'a [usize],
    /// Number of worker processes.
    pub processes: usize,
    /// Spec of every worker; `Stop::AfterChecks` is the total across all of them.
    pub template: WorkerSpec,
}

/// What a worker process is asked to do: the first line its parent sends.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Job {
    Closed(WorkerSpec),
    Open(OpenSpec),
    Pod(PodSpec),
}

/// The first line: the job, and the custom limiters the parent loaded (`--limiter`), which the
/// worker registers before it reads the job, so their names resolve to their scripts.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Envelope {
    #[serde(default)]
    limiters: Vec<crate::limiter::custom::CustomLimiter>,
    job: serde_json::Value,
}

/// Splits `total` as evenly as possible over `parts` (the first ones take the remainder).
pub fn split_checks(total: u64, parts: usize) -> Vec<u64> {
    let parts = parts.max(1) as u64;
    (0..parts)
        .map(|i| total / parts + u64::from(i < total % parts))
        .collect()
}

/// The specs of each worker: checks split, a stream index each.
fn worker_specs(plan: &ClosedLoop) -> Vec<WorkerSpec> {
    let stops: Vec<Stop> = match plan.template.stop {
        Stop::AfterChecks(total) => split_checks(total, plan.processes)
            .into_iter()
            .map(Stop::AfterChecks)
            .collect(),
        Stop::AfterMs(ms) => vec![Stop::AfterMs(ms); plan.processes.max(1)],
    };
    stops
        .into_iter()
        .enumerate()
        .map(|(i, stop)| WorkerSpec {
            stop,
            worker_index: i as u64,
            ..plan.template.clone()
        })
        .collect()
}

struct Running {
    child: Child,
    stdout: BufReader<ChildStdout>,
    reaped: bool,
}

/// Worker processes, connected and waiting for `go`. Dropping it kills any still running.
pub struct Fleet {
    workers: Vec<Running>,
}

impl Fleet {
    /// Spawns every worker and waits until all have connected.
    pub fn spawn(plan: &ClosedLoop) -> Result<Self, LoadError> {
        let jobs = worker_specs(plan).into_iter().map(Job::Closed);
        Self::spawn_jobs(plan.exe, plan.cpus, jobs)
    }

    /// Spawns every open-loop worker and waits until all have connected.
    pub fn spawn_open(plan: &OpenLoop) -> Result<Self, LoadError> {
        let jobs = plan.specs().into_iter().map(Job::Open);
        Self::spawn_jobs(plan.exe, plan.cpus, jobs)
    }

    /// Spawns every pod and waits until all have connected to Redis and to the sink.
    pub fn spawn_pods(plan: &PodFleet) -> Result<Self, LoadError> {
        let jobs = plan.specs().into_iter().map(Job::Pod);
        Self::spawn_jobs(plan.open.exe, plan.open.cpus, jobs)
    }

    fn spawn_jobs(
        exe: &Path,
        cpus: &[usize],
        jobs: impl Iterator<Item = Job>,
    ) -> Result<Self, LoadError> {
        let mut fleet = Fleet {
            workers: Vec::new(),
        };
        for job in jobs {
            fleet.workers.push(spawn_worker(exe, cpus, &job)?);
        }
        // Every worker connected before any starts, so the processes overlap from the first check.
        for (index, worker) in fleet.workers.iter_mut().enumerate() {
            let line = read_line(worker, index)?;
            if line != "ready" {
                return Err(LoadError::Protocol(format!(
                    "worker {index} said `{line}`, expected ready"
                )));
            }
        }
        Ok(fleet)
    }

    /// Starts all workers at once.
    pub fn go(&mut self) -> Result<(), LoadError> {
        for worker in self.workers.iter_mut() {
            if let Some(stdin) = worker.child.stdin.as_mut() {
                stdin.write_all(b"go\n")?;
                stdin.flush()?;
            }
        }
        Ok(())
    }

    /// Waits for every worker's tally and merges them.
    pub fn collect(self) -> Result<CheckTally, LoadError> {
        let mut merged = CheckTally::default();
        for tally in self.results::<CheckTally>()? {
            merged.merge(tally);
        }
        Ok(merged)
    }

    /// Waits for every open-loop worker's tally and merges them.
    pub fn collect_open(self) -> Result<OpenTally, LoadError> {
        let mut merged = OpenTally::default();
        for tally in self.results::<OpenTally>()? {
            merged.merge(tally);
        }
        Ok(merged)
    }

    /// Waits for every pod's tally and merges them.
    pub fn collect_pods(self) -> Result<PodTally, LoadError> {
        let mut merged = PodTally::default();
        for tally in self.results::<PodTally>()? {
            merged.merge(tally);
        }
        Ok(merged)
    }

    /// Every worker's result line, parsed; then each is reaped.
    fn results<T: DeserializeOwned>(mut self) -> Result<Vec<T>, LoadError> {
        let mut out = Vec::with_capacity(self.workers.len());
        for (index, worker) in self.workers.iter_mut().enumerate() {
            let line = read_line(worker, index)?;
            out.push(serde_json::from_str(&line)?);
            let status = worker.child.wait()?;
            worker.reaped = true;
            crate::server::unregister(worker.child.id());
            if !status.success() {
                return Err(LoadError::Worker {
                    index,
                    detail: format!("exited with {status}"),
                });
            }
        }
        Ok(out)
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for worker in self.workers.iter_mut().filter(|w| !w.reaped) {
            let _ = worker.child.kill();
            let _ = worker.child.wait();
            crate::server::unregister(worker.child.id());
        }
    }
}

/// Runs the workers to completion and merges their tallies.
pub fn run_closed_loop(plan: &ClosedLoop) -> Result<CheckTally, LoadError> {
    let mut fleet = Fleet::spawn(plan)?;
    fleet.go()?;
    fleet.collect()
}

/// Runs the open-loop workers to completion and merges their tallies.
pub fn run_open_loop(plan: &OpenLoop) -> Result<OpenTally, LoadError> {
    let mut fleet = Fleet::spawn_open(plan)?;
    fleet.go()?;
    fleet.collect_open()
}

/// Runs the pods to completion and merges their tallies.
pub fn run_pods(plan: &PodFleet) -> Result<PodTally, LoadError> {
    let mut fleet = Fleet::spawn_pods(plan)?;
    fleet.go()?;
    fleet.collect_pods()
}

fn spawn_worker(exe: &Path, cpus: &[usize], job: &Job) -> Result<Running, LoadError> {
    let mut cmd = Command::new(exe);
    cmd.arg("worker")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    set_parent_death_signal(&mut cmd);
    pin::pin_command(&mut cmd, cpus);
    let mut child = cmd.spawn().map_err(|source| LoadError::Spawn {
        exe: exe.display().to_string(),
        source,
    })?;
    crate::server::register(child.id());
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| LoadError::Protocol("no stdout".into()))?;
    if let Some(stdin) = child.stdin.as_mut() {
        let envelope = Envelope {
            limiters: crate::limiter::custom::loaded(),
            job: serde_json::to_value(job)?,
        };
        writeln!(stdin, "{}", serde_json::to_string(&envelope)?)?;
        stdin.flush()?;
    }
    Ok(Running {
        child,
        stdout: BufReader::new(stdout),
        reaped: false,
    })
}

/// Reads one protocol line; on EOF the worker died, so its stderr explains why.
fn read_line(worker: &mut Running, index: usize) -> Result<String, LoadError> {
    let mut line = String::new();
    if worker.stdout.read_line(&mut line)? == 0 {
        let mut stderr = String::new();
        if let Some(mut err) = worker.child.stderr.take() {
            let _ = err.read_to_string(&mut stderr);
        }
        let status = worker.child.wait()?;
        worker.reaped = true;
        crate::server::unregister(worker.child.id());
        return Err(LoadError::Worker {
            index,
            detail: format!("exited with {status}: {}", stderr.trim()),
        });
    }
    Ok(line.trim_end().to_string())
}

/// Entry point of the hidden `worker` subcommand.
pub fn worker_main() -> Result<(), LoadError> {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut next_line = move || -> Result<String, LoadError> {
        lines
            .next()
            .transpose()?
            .ok_or_else(|| LoadError::Protocol("stdin closed early".into()))
    };
    let envelope: Envelope = serde_json::from_str(&next_line()?)?;
    for limiter in envelope.limiters {
        crate::limiter::custom::register(limiter);
    }
    let job: Job = serde_json::from_value(envelope.job)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let local = tokio::task::LocalSet::new();
    let mut stdout = std::io::stdout();
    // Connect, say ready, wait for go: connecting is never part of what is measured.
    let mut handshake = |stdout: &mut std::io::Stdout| -> Result<(), LoadError> {
        writeln!(stdout, "ready")?;
        stdout.flush()?;
        match next_line()? {
            go if go == "go" => Ok(()),
            other => Err(LoadError::Protocol(format!("expected go, got `{other}`"))),
        }
    };
    // Deciders are built in the runtime's context: one that starts a process or a task of its
    // own (a limiter process's reader) needs it, before the start signal.
    let _in_runtime = runtime.enter();
    let result = match job {
        Job::Closed(spec) if pipelined::serves(&spec) => {
            let decider = closed::decider(&spec)?;
            let streams = runtime.block_on(pipelined::connect(&spec, &decider))?;
            handshake(&mut stdout)?;
            let run = pipelined::run(&spec, decider, streams);
            serde_json::to_string(&local.block_on(&runtime, run)?)?
        }
        Job::Closed(spec) => {
            let decider = closed::decider(&spec)?;
            let cons = runtime.block_on(connect(&spec, &decider))?;
            handshake(&mut stdout)?;
            serde_json::to_string(&local.block_on(&runtime, run_checks(&spec, decider, cons))?)?
        }
        Job::Open(spec) => {
            let decider = open_worker::decider(&spec)?;
            let cons = runtime.block_on(open_worker::connect(&spec, &decider))?;
            handshake(&mut stdout)?;
            let run = open_worker::run(&spec, decider, cons);
            serde_json::to_string(&local.block_on(&runtime, run)?)?
        }
        Job::Pod(spec) => {
            let decider = pod::decider(&spec)?;
            let (cons, sink) = runtime.block_on(pod::connect(&spec, &decider))?;
            handshake(&mut stdout)?;
            let run = pod::run(&spec, decider, cons, sink);
            serde_json::to_string(&local.block_on(&runtime, run)?)?
        }
    };
    writeln!(stdout, "{result}")?;
    stdout.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::split_checks;

    #[test]
    fn split_is_even_and_exact() {
        assert_eq!(split_checks(1000, 4), vec![250; 4]);
        assert_eq!(split_checks(10, 3), vec![4, 3, 3]);
        assert_eq!(split_checks(1000, 3).iter().sum::<u64>(), 1000);
        assert_eq!(split_checks(5, 0), vec![5]);
    }
}
