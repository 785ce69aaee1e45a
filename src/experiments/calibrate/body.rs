//! calibrate's measurement: ratelab's workers and redis-benchmark, pair by pair.

use super::CALIBRATE;
use super::{BenchCommand, CalibrateRow, Params};
use crate::experiments::measure::{children_cpu_s, measure, Measured};
use crate::experiments::{ExperimentError, Phase, PhaseError, Session};
use crate::limiter::{LimitSpec, Limiter, Strategy};
use crate::load::{ClosedLoop, KeyChoice, Stop, WorkerSpec};
use crate::server::{pin, set_parent_death_signal, steal_ns_by_cpu, ServerSample, Target};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let benchmark = redis_benchmark().phase(|| "finding redis-benchmark".into())?;
    let server = crate::server::endpoint::tool_args(&s.target.url())
        .map_err(|e| PhaseError::Invalid(format!("the server's address: {e}")))
        .phase(|| "reading the server's address for redis-benchmark".into())?;
    if server.iter().any(|a| a == "-a") {
        s.note(
            "redis-benchmark takes the server's password only on its command line (-a): while it ran, \
            other users of this machine could read it in the process list.",
        );
    }
    let mut rows = CALIBRATE.create(&s.run.staging)?;
    let depth_ones = p.depths.iter().filter(|&&d| d == 1).count();
    let runs = p.commands.len() * p.pairs as usize * (p.depths.len() * 2 + depth_ones);
    let bar = s.progress(runs as u64);
    prepare(&s.target, p, &s.prefix).phase(|| "loading keys and the script".into())?;
    for &command in &p.commands {
        for &depth in &p.depths {
            let key_prefix = s.key(format!("{}:", command.name().to_lowercase()));
            let mut plan = s.closed_loop(1, worker(p, command, depth, &key_prefix));
            let target = &s.target;
            let name = || format!("{} at depth {depth}", command.name());
            if p.warmup_seconds > 0.0 {
                measure(target, &plan, &|| format!("warm-up of {}", name()))?;
            }
            plan.template.stop = Stop::AfterMs((p.seconds * 1000.0) as u64);
            // ratelab's decisions in its last run: redis-benchmark runs as many requests.
            let mut last_ops = 0;
            for pair in 0..p.pairs {
                for tool in tools_of(depth, pair) {
                    let row = match tool {
                        Tool::Benchmark => {
                            let bench = Bench {
                                binary: &benchmark,
                                server: &server,
                                command,
                                key_prefix: &key_prefix,
                                requests: last_ops.max(1),
                                pair,
                                depth,
                            };
                            (bench.run(s, p))
                                .phase(|| format!("pair {pair} of {}: redis-benchmark", name()))?
                        }
                        Tool::Lean | Tool::RedisRs => {
                            plan.template.pipelined = tool == Tool::Lean;
                            let what = || format!("pair {pair} of {}: {}", name(), tool.name());
                            let row = ratelab_run(s, p, &plan, (command, tool, pair), &what)?;
                            if tool == Tool::Lean {
                                last_ops = row.ops;
                            }
                            row
                        }
                    };
                    rows.write(&row)?;
                    bar.inc(1);
                }
            }
        }
    }
    bar.finish_and_clear();
    Ok(())
}

/// Who sends a run's requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tool {
    /// ratelab's lean raw-RESP client (`load::pipelined`).
    Lean,
    /// ratelab's redis-rs path: what the experiments' one-at-a-time checks run on.
    RedisRs,
    /// Redis's own redis-benchmark.
    Benchmark,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::Lean => "ratelab",
            Tool::RedisRs => "redis-rs",
            Tool::Benchmark => "redis-benchmark",
        }
    }
}

/// Steal on the harness's CPUs so far, ns (a client the hypervisor stopped sends nothing); None
/// when the harness is not pinned.
fn harness_steal_ns(s: &Session) -> Option<u64> {
    let harness = &s.ctx.pin.harness;
    let steal = (steal_ns_by_cpu().into_iter())
        .filter(|(cpu, _)| harness.contains(cpu))
        .map(|(_, ns)| ns);
    (!harness.is_empty()).then(|| steal.sum())
}

/// The steal between two readings of [`harness_steal_ns`], as a share of `wall_s`.
fn steal_pct(before: Option<u64>, after: Option<u64>, wall_s: f64) -> Option<f64> {
    let (before, after) = (before?, after?);
    Some(share_pct(after.saturating_sub(before) as f64 / 1e9, wall_s))
}

/// The tools of one pair in the order they run: A B, then B A (odd pairs), so a drift of the
/// machine within a cell falls on both tools alike instead of always on the one that runs second.
/// redis-rs, the path the experiments' one-at-a-time checks take, runs between them at depth 1.
fn tools_of(depth: usize, pair: u32) -> Vec<Tool> {
    let mut tools = vec![Tool::Lean];
    if depth == 1 {
        tools.push(Tool::RedisRs);
    }
    tools.push(Tool::Benchmark);
    if pair % 2 == 1 {
        tools.reverse();
    }
    tools
}

/// One measured run of ratelab's `plan` (lean or redis-rs, as its template says) and its row,
/// with the harness CPUs' steal around it.
fn ratelab_run(
    s: &Session,
    p: &Params,
    plan: &ClosedLoop,
    (command, tool, pair): (BenchCommand, Tool, u32),
    what: &dyn Fn() -> String,
) -> Result<CalibrateRow, ExperimentError> {
    let steal_before = harness_steal_ns(s);
    let m = measure(&s.target, plan, what)?;
    let steal = (steal_before, harness_steal_ns(s));
    Ok(ratelab_row(
        p,
        (command, tool, pair),
        plan.template.in_flight,
        &m,
        steal,
    ))
}

/// The row of one ratelab run (lean or redis-rs); `steal` the harness CPUs' steal before and
/// after it.
fn ratelab_row(
    p: &Params,
    (command, tool, pair): (BenchCommand, Tool, u32),
    depth: usize,
    m: &Measured,
    steal: (Option<u64>, Option<u64>),
) -> CalibrateRow {
    let ops = m.tally.admitted + m.tally.denied;
    let duration_s = m.tally.elapsed_ns as f64 / 1e9;
    CalibrateRow {
        command: command.name().into(),
        tool: tool.name().into(),
        pair,
        depth,
        ops,
        ops_per_s: m.decisions_per_s(),
        client_cpu_s: m.client_cpu_s,
        client_cpu_us_per_op: per_op_us(m.client_cpu_s, ops),
        duration_s,
        clients: p.clients,
        keys: p.keys,
        redis_cpu_us_per_op: m.cpu_us_per_decision(),
        redis_busy_pct: m.server.busy_pct(),
        redis_waiting_for_cpu_pct: m.server.waiting_for_cpu_pct(),
        redis_idle_pct: m.server.idle_pct(),
        client_cpu_pct: Some(share_pct(m.client_cpu_s, duration_s)),
        harness_steal_pct: steal_pct(steal.0, steal.1, duration_s),
    }
}

/// `part_s` as a percentage of `whole_s`.
fn share_pct(part_s: f64, whole_s: f64) -> f64 {
    if whole_s > 0.0 {
        100.0 * part_s / whole_s
    } else {
        0.0
    }
}

/// ratelab's side: one lean pipelined worker, `clients` connections, `depth` in flight on each.
fn worker(p: &Params, command: BenchCommand, depth: usize, key_prefix: &str) -> WorkerSpec {
    let limit = LimitSpec {
        capacity: p.capacity,
        refill_per_sec: p.refill_per_sec,
        ..LimitSpec::default()
    };
    let keys = KeyChoice::Uniform {
        prefix: key_prefix.to_string(),
        count: p.keys,
    };
    let stop = Stop::AfterMs((p.warmup_seconds * 1000.0) as u64);
    WorkerSpec {
        connections: p.clients,
        in_flight: depth,
        pipelined: true,
        ..WorkerSpec::new(command.strategy(), limit, keys, stop)
    }
}

fn per_op_us(cpu_s: f64, ops: u64) -> f64 {
    if ops > 0 {
        cpu_s * 1e6 / ops as f64
    } else {
        0.0
    }
}

/// Keys for GET exist (a GET of a missing key is cheaper); the script is cached for EVALSHA.
fn prepare(target: &Target, p: &Params, prefix: &str) -> Result<(), crate::server::ServerError> {
    let mut con = target.connection()?;
    let mut pipe = redis::pipe();
    for i in 0..p.keys {
        pipe.set(format!("{prefix}get:{i:012}"), "x").ignore();
    }
    pipe.query::<()>(&mut con)?;
    let limiter = Limiter::new(Strategy::LuaBucket, LimitSpec::default());
    if let Some((source, _)) = limiter.script() {
        redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(source)
            .query::<String>(&mut con)?;
    }
    Ok(())
}

/// One redis-benchmark run: as many requests of `command` as ratelab's run of the pair made.
struct Bench<'a> {
    binary: &'a Path,
    /// How redis-benchmark reaches the server (`-h -p`, credentials, TLS files).
    server: &'a [String],
    command: BenchCommand,
    key_prefix: &'a str,
    requests: u64,
    pair: u32,
    depth: usize,
}

impl Bench<'_> {
    fn run(&self, s: &Session, p: &Params) -> Result<CalibrateRow, PhaseError> {
        let Bench {
            binary: benchmark,
            server,
            command,
            key_prefix,
            requests,
            pair,
            depth,
        } = *self;
        let (ctx, target) = (s.ctx, &s.target);
        let key = format!("{key_prefix}__rand_int__");
        let mut cmd = Command::new(benchmark);
        cmd.args(server)
            .args(["-c", &p.clients.to_string(), "-n", &requests.to_string()])
            .args(["-r", &p.keys.to_string(), "-P", &depth.to_string(), "--csv"]);
        match command {
            BenchCommand::Get => cmd.args(["GET", &key]),
            BenchCommand::Evalsha => {
                let limit = LimitSpec {
                    capacity: p.capacity,
                    refill_per_sec: p.refill_per_sec,
                    ..LimitSpec::default()
                };
                let limiter = Limiter::new(Strategy::LuaBucket, limit);
                let sha = limiter
                    .script()
                    .map(|(_, sha)| sha.to_string())
                    .unwrap_or_default();
                cmd.args(["EVALSHA", &sha, "1", &key]).args([
                    p.capacity.to_string(),
                    p.refill_per_sec.to_string(),
                    "1".into(),
                    limit.bucket_ttl_ms().to_string(),
                ])
            }
        };
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        set_parent_death_signal(&mut cmd);
        pin::pin_command(&mut cmd, &ctx.pin.harness);
        let cpu_before = children_cpu_s();
        let before = ServerSample::take(target)?;
        let started = Instant::now();
        let steal_before = harness_steal_ns(s);
        let output = cmd
            .output()
            .map_err(|e| PhaseError::Invalid(format!("running {}: {e}", benchmark.display())))?;
        let wall = started.elapsed().as_secs_f64();
        let after = ServerSample::take(target)?;
        let client_cpu_s = children_cpu_s() - cpu_before;
        let steal_after = harness_steal_ns(s);
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() {
            return Err(PhaseError::Invalid(format!(
                "redis-benchmark failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        let ops_per_s = parse_benchmark_rps(&stdout).ok_or_else(|| {
            PhaseError::Invalid(format!(
                "could not read requests/s from redis-benchmark output: {stdout:?}"
            ))
        })?;
        let cost = before.cost_until(&after);
        Ok(CalibrateRow {
            command: command.name().into(),
            tool: "redis-benchmark".into(),
            pair,
            depth,
            ops: requests,
            ops_per_s,
            client_cpu_s,
            client_cpu_us_per_op: per_op_us(client_cpu_s, requests),
            duration_s: wall,
            clients: p.clients,
            keys: p.keys,
            redis_cpu_us_per_op: cost.main_thread_cpu_us / requests as f64,
            redis_busy_pct: cost.busy_pct(),
            redis_waiting_for_cpu_pct: cost.waiting_for_cpu_pct(),
            redis_idle_pct: cost.idle_pct(),
            client_cpu_pct: Some(share_pct(client_cpu_s, wall)),
            harness_steal_pct: steal_pct(steal_before, steal_after, wall),
        })
    }
}

/// The `rps` column of `redis-benchmark --csv` (header line, then one quoted row per test).
pub fn parse_benchmark_rps(csv_text: &str) -> Option<f64> {
    let mut lines = csv_text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<String> = split_quoted(lines.next()?);
    let column = header.iter().position(|h| h == "rps")?;
    let row = split_quoted(lines.next()?);
    row.get(column)?.parse().ok()
}

fn split_quoted(line: &str) -> Vec<String> {
    line.split("\",\"")
        .map(|f| f.trim().trim_matches('"').to_string())
        .collect()
}

/// redis-benchmark on PATH, or how to install it.
pub(super) fn redis_benchmark() -> Result<PathBuf, PhaseError> {
    which("redis-benchmark").ok_or_else(|| {
        PhaseError::Invalid(
            "redis-benchmark not found; install it with `apt-get install -y redis-tools`".into(),
        )
    })
}

/// A binary on PATH.
fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rps_from_redis_benchmark_csv() {
        let out = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\"\n\
            \"GET ratelab:x:__rand_int__\",\"81234.57\",\"0.183\",\"0.040\"\n";
        assert_eq!(parse_benchmark_rps(out), Some(81234.57));
        assert_eq!(parse_benchmark_rps("garbage"), None);
    }
}
