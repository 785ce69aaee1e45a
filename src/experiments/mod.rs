//! One module per experiment behind one shape: a `Params` struct whose defaults live in
//! `experiments/<id>.toml`, and a `run(&Ctx)` that writes raw rows and meta.json.

pub mod atomic;
pub mod bigkey;
pub mod calibrate;
mod common;
pub mod cost;
pub mod latency;
pub mod measure;
pub mod memory;
pub mod params;
pub mod race;

pub use common::{Concurrency, ExperimentError, Phase, PhaseError, RunRecord};

use crate::context::Ctx;
use params::{ExperimentInfo, ParamError};
use std::path::PathBuf;

/// Every experiment the harness can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Experiment {
    /// Naive read-then-write limiters vs atomic ones under overlapping requests (seeds 000, 001).
    Race,
    /// Lua vs MULTI vs WATCH under contention: admission error against Redis CPU (seed 002).
    Atomic,
    /// Redis CPU and throughput per decision over 10,000 keys (seed 002).
    Cost,
    /// Latency of one check at a time (seed 000).
    Latency,
    /// The harness's load generator against redis-benchmark, side by side.
    Calibrate,
    /// Memory per busy client per strategy; the sliding log's listpack cliff (seed 002).
    Memory,
    /// One big sorted set trimmed or expired (lazyfree on/off) while a probe PINGs (seed 002).
    Bigkey,
}

impl Experiment {
    /// All experiments, in the order `all` runs them.
    pub const ALL: &'static [Experiment] = &[
        Experiment::Race,
        Experiment::Atomic,
        Experiment::Cost,
        Experiment::Latency,
        Experiment::Calibrate,
        Experiment::Memory,
        Experiment::Bigkey,
    ];

    /// The id used on the command line and as the results subdirectory.
    pub fn id(self) -> &'static str {
        match self {
            Experiment::Race => "race",
            Experiment::Atomic => "atomic",
            Experiment::Cost => "cost",
            Experiment::Latency => "latency",
            Experiment::Calibrate => "calibrate",
            Experiment::Memory => "memory",
            Experiment::Bigkey => "bigkey",
        }
    }

    /// The embedded parameter file.
    pub fn params_toml(self) -> &'static str {
        match self {
            Experiment::Race => include_str!("../../experiments/race.toml"),
            Experiment::Atomic => include_str!("../../experiments/atomic.toml"),
            Experiment::Cost => include_str!("../../experiments/cost.toml"),
            Experiment::Latency => include_str!("../../experiments/latency.toml"),
            Experiment::Calibrate => include_str!("../../experiments/calibrate.toml"),
            Experiment::Memory => include_str!("../../experiments/memory.toml"),
            Experiment::Bigkey => include_str!("../../experiments/bigkey.toml"),
        }
    }

    /// Seeds and summary from the parameter file.
    pub fn info(self) -> Result<ExperimentInfo, ParamError> {
        params::info(self.params_toml())
    }

    /// Looks an id up, or says which ids exist.
    pub fn from_id(id: &str) -> Result<Self, ExperimentError> {
        Self::ALL
            .iter()
            .copied()
            .find(|e| e.id() == id)
            .ok_or_else(|| {
                let valid: Vec<_> = Self::ALL.iter().map(|e| e.id()).collect();
                ExperimentError::Unknown {
                    id: id.to_string(),
                    valid: valid.join(", "),
                }
            })
    }

    /// Runs the experiment into `ctx.out_dir/<id>/` and returns that directory.
    pub fn run(self, ctx: &Ctx) -> Result<PathBuf, ExperimentError> {
        match self {
            Experiment::Race => race::run(ctx),
            Experiment::Atomic => atomic::run(ctx),
            Experiment::Cost => cost::run(ctx),
            Experiment::Latency => latency::run(ctx),
            Experiment::Calibrate => calibrate::run(ctx),
            Experiment::Memory => memory::run(ctx),
            Experiment::Bigkey => bigkey::run(ctx),
        }
    }
}
