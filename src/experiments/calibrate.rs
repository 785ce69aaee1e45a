//! # calibrate
//! Hypothesis: the harness's load generator is not the bottleneck. If it were, every throughput
//! and CPU-per-decision figure would measure the client, not Redis.
//!
//! Method: the same command (GET; EVALSHA of lua-bucket) from 16 clients over 10,000 keys, first
//! from ratelab's workers for `seconds`, then from `redis-benchmark -c 16 -r 10000` for as many
//! requests as ratelab just made, alternating A B A B for `pairs` pairs, both pinned to the
//! harness's CPUs. Keys are named alike (`prefix` + 12-digit index), so both tools hit the same
//! keys. Recorded per run: ops, ops/s, client CPU seconds (rusage of the reaped processes), Redis
//! main-thread CPU per op. A warm-up run per command (excluded) loads keys and the script.
//!
//! Writes `calibrate/calibrate.csv` (one row per run), `calibrate/meta.json`.

use super::common::{
    progress_bar, run_experiment, ExperimentError, Phase, PhaseError, RunRecord, Validate,
};
use super::measure::{children_cpu_s, measure};
use crate::context::Ctx;
use crate::limiter::{LimitSpec, Limiter, Strategy};
use crate::load::{ClosedLoop, KeyChoice, Stop, WorkerSpec};
use crate::server::{pin, set_parent_death_signal, ServerSample, Target};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

const ID: &str = "calibrate";

/// Parameters; defaults in `experiments/calibrate.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub pairs: u32,
    pub seconds: f64,
    pub warmup_seconds: f64,
    pub clients: usize,
    pub keys: u64,
    pub commands: Vec<BenchCommand>,
    pub capacity: u64,
    pub refill_per_sec: f64,
}

/// A command both tools can send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BenchCommand {
    /// A plain GET.
    #[serde(rename = "GET")]
    Get,
    /// EVALSHA of the lua-bucket script.
    #[serde(rename = "EVALSHA")]
    Evalsha,
}

impl BenchCommand {
    fn name(self) -> &'static str {
        match self {
            BenchCommand::Get => "GET",
            BenchCommand::Evalsha => "EVALSHA",
        }
    }

    fn strategy(self) -> Strategy {
        match self {
            BenchCommand::Get => Strategy::Get,
            BenchCommand::Evalsha => Strategy::LuaBucket,
        }
    }
}

/// One run of one tool.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CalibrateRow {
    pub command: String,
    /// `ratelab` or `redis-benchmark`.
    pub tool: String,
    pub pair: u32,
    pub ops: u64,
    pub ops_per_s: f64,
    pub client_cpu_s: f64,
    pub duration_s: f64,
    pub clients: usize,
    pub keys: u64,
    pub redis_cpu_us_per_op: f64,
    pub redis_busy_pct: f64,
}

/// Runs the experiment into `ctx.out_dir/calibrate/`.
pub fn run(ctx: &Ctx) -> Result<PathBuf, ExperimentError> {
    // Before starting anything: without redis-benchmark there is nothing to compare against.
    let benchmark = which("redis-benchmark").ok_or_else(|| ExperimentError::Failed {
        phase: "finding redis-benchmark".into(),
        source: PhaseError::Invalid(
            "redis-benchmark not found; install it with `apt-get install -y redis-tools`".into(),
        ),
    })?;
    run_experiment(ctx, super::Experiment::Calibrate, |s, p: &Params| {
        s.run.note(format!(
            "Warm-up excluded: one {}s ratelab run per command before the pairs.",
            p.warmup_seconds
        ));
        s.run.note("Both tools are single-threaded and pinned to the harness CPUs; redis-benchmark runs as many requests as the preceding ratelab run made.");
        body(s.ctx, p, s.target, s.run, s.prefix, &benchmark)
    })
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        if self.pairs == 0 || self.seconds <= 0.0 || self.clients == 0 || self.keys == 0 {
            return Err("pairs, seconds, clients, keys must be > 0".into());
        }
        Ok(())
    }
}

fn body(
    ctx: &Ctx,
    p: &Params,
    target: &Target,
    run: &mut RunRecord,
    prefix: &str,
    benchmark: &std::path::Path,
) -> Result<(), ExperimentError> {
    let mut rows = run
        .staging
        .csv::<CalibrateRow>("calibrate.csv")
        .phase(|| "opening calibrate.csv".into())?;
    let bar = progress_bar(ctx, ID, (p.commands.len() as u32 * p.pairs * 2) as u64);
    prepare(target, p, prefix).phase(|| "loading keys and the script".into())?;
    for &command in &p.commands {
        let key_prefix = format!("{prefix}{}:", command.name().to_lowercase());
        let mut plan = ClosedLoop {
            exe: &ctx.worker_exe,
            cpus: &ctx.pin.harness,
            processes: 1,
            template: WorkerSpec {
                url: target.url(),
                strategy: command.strategy(),
                limit: LimitSpec {
                    capacity: p.capacity,
                    refill_per_sec: p.refill_per_sec,
                    ..LimitSpec::default()
                },
                keys: KeyChoice::Uniform {
                    prefix: key_prefix.clone(),
                    count: p.keys,
                },
                stop: Stop::AfterMs((p.warmup_seconds * 1000.0) as u64),
                connections: p.clients,
                in_flight: 1,
                record_latency: false,
                seed: ctx.seed,
                worker_index: 0,
                timeouts: ctx.timeouts,
            },
        };
        if p.warmup_seconds > 0.0 {
            measure(target, &plan, &|| format!("warm-up of {}", command.name()))?;
        }
        plan.template.stop = Stop::AfterMs((p.seconds * 1000.0) as u64);
        for pair in 0..p.pairs {
            let what = || format!("pair {pair} of {}: ratelab", command.name());
            let m = measure(target, &plan, &what)?;
            let ops = m.tally.admitted + m.tally.denied;
            rows.write(&CalibrateRow {
                command: command.name().into(),
                tool: "ratelab".into(),
                pair,
                ops,
                ops_per_s: m.decisions_per_s(),
                client_cpu_s: m.client_cpu_s,
                duration_s: m.tally.elapsed_ns as f64 / 1e9,
                clients: p.clients,
                keys: p.keys,
                redis_cpu_us_per_op: m.cpu_us_per_decision(),
                redis_busy_pct: m.server.busy_pct(),
            })
            .phase(|| "writing calibrate.csv".into())?;
            bar.inc(1);
            let row = run_benchmark(
                ctx,
                p,
                target,
                benchmark,
                command,
                &key_prefix,
                ops.max(1),
                pair,
            )
            .phase(|| format!("pair {pair} of {}: redis-benchmark", command.name()))?;
            rows.write(&row).phase(|| "writing calibrate.csv".into())?;
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok(())
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

#[allow(clippy::too_many_arguments)]
fn run_benchmark(
    ctx: &Ctx,
    p: &Params,
    target: &Target,
    benchmark: &std::path::Path,
    command: BenchCommand,
    key_prefix: &str,
    requests: u64,
    pair: u32,
) -> Result<CalibrateRow, PhaseError> {
    let addr = super::race::host_port(&target.url());
    let (host, port) = addr.rsplit_once(':').unwrap_or((addr.as_str(), "6379"));
    let key = format!("{key_prefix}__rand_int__");
    let mut cmd = Command::new(benchmark);
    cmd.args([
        "-h",
        host,
        "-p",
        port,
        "-c",
        &p.clients.to_string(),
        "-n",
        &requests.to_string(),
    ])
    .args(["-r", &p.keys.to_string(), "--csv"]);
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
    let output = cmd
        .output()
        .map_err(|e| PhaseError::Invalid(format!("running {}: {e}", benchmark.display())))?;
    let wall = started.elapsed().as_secs_f64();
    let after = ServerSample::take(target)?;
    let client_cpu_s = children_cpu_s() - cpu_before;
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
        ops: requests,
        ops_per_s,
        client_cpu_s,
        duration_s: wall,
        clients: p.clients,
        keys: p.keys,
        redis_cpu_us_per_op: cost.main_thread_cpu_us / requests as f64,
        redis_busy_pct: cost.busy_pct(),
    })
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
        let out = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\"\n\"GET ratelab:x:__rand_int__\",\"81234.57\",\"0.183\",\"0.040\"\n";
        assert_eq!(parse_benchmark_rps(out), Some(81234.57));
        assert_eq!(parse_benchmark_rps("garbage"), None);
    }
}
