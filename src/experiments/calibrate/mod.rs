//! # calibrate
//! Hypothesis: the harness's load generator is not the bottleneck. If it were, every throughput
//! and CPU-per-decision figure would measure the client, not Redis.
//!
//! Method: the same command (GET; EVALSHA of lua-bucket) from 16 clients over 10,000 keys, at
//! each depth (requests in flight per connection), first from ratelab's lean pipelined worker
//! for `seconds`, then from `redis-benchmark -c 16 -r 10000 -P depth` for as many requests as
//! ratelab's last run made, for `pairs` pairs in the order A B, B A, A B, ... (so a drift of the
//! shared machine within a cell does not always fall on the second tool), both pinned to the
//! harness's CPUs.
//! Keys are named alike (`prefix` + 12-digit index), so both tools hit the same keys. Recorded
//! per run: ops, ops/s, client CPU seconds (rusage of the reaped processes, start-up included for
//! both), Redis main-thread CPU per op. A warm-up run per command and depth (excluded) loads keys
//! and the script.
//!
//! What the profile showed (issue 17; `perf record -g` of the quick run, release build): the
//! redis-rs worker spent ~62% of its samples in the kernel (TCP send and receive per request,
//! and wake-ups: `_raw_spin_unlock_irqrestore`, `finish_task_switch`), and its own code's top
//! entries were the multiplexed connection's path: tokio's mpsc `Sender::send`,
//! `req_packed_command`, `PipelineSink::start_send`, `Pipeline::send_recv`, with malloc and free
//! around them (a `Cmd`, a `Vec` per argument, a oneshot and a `Value` tree per request). The
//! lean worker (`load::pipelined`) has none of those: a connection's batch of `depth` requests is
//! encoded into one reused buffer and sent in one write, replies are parsed in place, and a short
//! read clears readiness so no read returns EAGAIN. Its profile's top user entry was then the
//! key's formatting (a char-by-char push, replaced by one `push_str`); the rest is the kernel's.
//! At EVALSHA depth 16 (Redis saturated, the worker ~13% of a core) the next profile's user entries
//! were the bucket's constant arguments formatted per request (`ryu` 4.5% of samples, `itoa` 2.1%,
//! bulk framing 3.9%) and RESP integers parsed through `str` (1.8%): a decision's bytes around its
//! key are now copied from `Limiter::key_template` and integers parsed by hand (encode 204 -> 63
//! ns in `benches/`). What remains is the kernel's: epoll wake-ups and `recv` waiting for the
//! socket lock the softirq delivering Redis's replies holds (~40% of samples between them).
//! The measured ratios are in the calibrate section of REPORT.md: the median of the pairs' ratios.
//!
//! At depth 1 a third client runs in every pair: ratelab's redis-rs path (tool `redis-rs`), which
//! the experiments' one-at-a-time checks take where the lean client does not serve them (issue
//! 39): its ops/s, client CPU per op and Redis's busy and idle shares sit beside the other two.
//! Per run, the client's CPU over the wall time and the steal on the harness's CPUs say whether a
//! run that left Redis idle had a busy client, a waiting one, or a machine that took its CPU.
//!
//! Writes `calibrate/calibrate.csv` (one row per run), `calibrate/meta.json`.

mod body;
mod charts;
mod report;
mod rows;

pub use body::parse_benchmark_rps;
pub use rows::{CalibrateRow, CALIBRATE};

use super::{Body, Definition, ExperimentError, Phase, Render, Summarize, Validate};
use crate::limiter::Strategy;
use crate::record::Table;
use serde::{Deserialize, Serialize};

/// The calibrate experiment.
pub struct Calibrate;

impl Definition for Calibrate {
    const ID: &'static str = "calibrate";
    const TOML: &'static str = include_str!("../../../experiments/calibrate.toml");
    type Params = Params;

    fn precondition() -> Result<(), ExperimentError> {
        // Without redis-benchmark there is nothing to compare against.
        body::redis_benchmark()
            .map(|_| ())
            .phase(|| "finding redis-benchmark".into())
    }
    const BODY: Body<Params> = body::run;
    const CHARTS: Render = charts::render;
    const SUMMARY: Summarize = report::summary;

    fn tables() -> Vec<Table> {
        vec![CALIBRATE.table()]
    }
}

/// Parameters; defaults in `experiments/calibrate.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Pairs of runs per command and depth, ratelab then redis-benchmark and the reverse in turn,
    /// so a drift of the machine falls on both.
    pub pairs: u32,
    /// Measured seconds per run.
    pub seconds: f64,
    /// Unmeasured seconds before each run.
    pub warmup_seconds: f64,
    /// Connections of each run, for ratelab as for redis-benchmark.
    pub clients: usize,
    /// Keys the requests are spread over.
    pub keys: u64,
    /// Requests in flight per connection: ratelab pipelines this many, redis-benchmark `-P`.
    pub depths: Vec<usize>,
    /// What both tools send: `GET`, and `EVALSHA` of lua-bucket.
    pub commands: Vec<BenchCommand>,
    /// lua-bucket's capacity for EVALSHA, high enough that every call takes the admit path.
    pub capacity: u64,
    /// lua-bucket's refill rate for EVALSHA, tokens per second.
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
    pub(crate) fn name(self) -> &'static str {
        match self {
            BenchCommand::Get => "GET",
            BenchCommand::Evalsha => "EVALSHA",
        }
    }

    pub(crate) fn strategy(self) -> Strategy {
        match self {
            BenchCommand::Get => Strategy::Get,
            BenchCommand::Evalsha => Strategy::LuaBucket,
        }
    }
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        if self.pairs == 0 || self.seconds <= 0.0 || self.clients == 0 || self.keys == 0 {
            return Err("pairs, seconds, clients, keys must be > 0".into());
        }
        if self.depths.is_empty() || self.depths.contains(&0) {
            return Err("depths must list at least one depth, each >= 1".into());
        }
        Ok(())
    }
}
