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
pub mod outage;
pub mod params;
pub mod race;
pub mod tsmember;
pub mod window_edge;

pub use common::{Concurrency, ExperimentError, Phase, PhaseError, RunRecord, Validate};

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
    /// Checks through SIGKILL, restart, SIGSTOP and SIGCONT; the circuit breaker (seed 000).
    Outage,
    /// The time as sliding-log member under open-loop arrivals (seed 002).
    Tsmember,
    /// The fixed window's edge burst: the limit twice within one second (seed 001).
    WindowEdge,
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
        Experiment::Outage,
        Experiment::Tsmember,
        Experiment::WindowEdge,
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
            Experiment::Outage => "outage",
            Experiment::Tsmember => "tsmember",
            Experiment::WindowEdge => "window-edge",
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
            Experiment::Outage => include_str!("../../experiments/outage.toml"),
            Experiment::Tsmember => include_str!("../../experiments/tsmember.toml"),
            Experiment::WindowEdge => include_str!("../../experiments/window-edge.toml"),
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

    /// Why the experiment must own the server (it signals, restarts or reconfigures it), if it
    /// must: such experiments refuse `--redis-url` before starting anything.
    pub fn needs_managed_server(self) -> Option<&'static str> {
        match self {
            Experiment::Outage => Some(outage::WHY),
            _ => None,
        }
    }

    /// Resolves and validates the parameters without running anything, so `all` fails before
    /// the first experiment rather than an hour in.
    pub fn check_params(
        self,
        profile: params::Profile,
        sets: &[(String, String)],
    ) -> Result<(), ExperimentError> {
        match self {
            Experiment::Race => check::<race::Params>(self, profile, sets),
            Experiment::Atomic => check::<atomic::Params>(self, profile, sets),
            Experiment::Cost => check::<cost::Params>(self, profile, sets),
            Experiment::Latency => check::<latency::Params>(self, profile, sets),
            Experiment::Calibrate => check::<calibrate::Params>(self, profile, sets),
            Experiment::Outage => check::<outage::Params>(self, profile, sets),
            Experiment::Tsmember => check::<tsmember::Params>(self, profile, sets),
            Experiment::WindowEdge => check::<window_edge::Params>(self, profile, sets),
            Experiment::Memory => check::<memory::Params>(self, profile, sets),
            Experiment::Bigkey => check::<bigkey::Params>(self, profile, sets),
        }
    }

    /// Runs the experiment into `ctx.out_dir/<id>/` and returns that directory.
    pub fn run(self, ctx: &Ctx) -> Result<PathBuf, ExperimentError> {
        match self {
            Experiment::Race => race::run(ctx),
            Experiment::Atomic => atomic::run(ctx),
            Experiment::Cost => cost::run(ctx),
            Experiment::Latency => latency::run(ctx),
            Experiment::Calibrate => calibrate::run(ctx),
            Experiment::Outage => outage::run(ctx),
            Experiment::Tsmember => tsmember::run(ctx),
            Experiment::WindowEdge => window_edge::run(ctx),
            Experiment::Memory => memory::run(ctx),
            Experiment::Bigkey => bigkey::run(ctx),
        }
    }
}

fn check<P: serde::de::DeserializeOwned + Validate>(
    experiment: Experiment,
    profile: params::Profile,
    sets: &[(String, String)],
) -> Result<(), ExperimentError> {
    let (p, _): (P, _) = params::resolve(experiment.id(), experiment.params_toml(), profile, sets)?;
    p.validate().map_err(|reason| {
        ParamError::Invalid {
            experiment: experiment.id().into(),
            reason,
        }
        .into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_profile_parses_and_validates() {
        for &e in Experiment::ALL {
            for profile in [params::Profile::Quick, params::Profile::Full] {
                e.check_params(profile, &[])
                    .unwrap_or_else(|err| panic!("{} {profile:?}: {err}", e.id()));
            }
            let info = e.info().unwrap();
            assert_eq!(info.id, e.id());
            assert_eq!(Experiment::from_id(e.id()).unwrap(), e);
        }
    }

    #[test]
    fn invalid_values_are_caught_before_running() {
        let sets = vec![("trials".to_string(), "0".to_string())];
        let err = Experiment::Race
            .check_params(params::Profile::Quick, &sets)
            .unwrap_err();
        assert!(err.to_string().contains("trials"), "{err}");
    }
}
