//! The validated options every experiment runs with; experiments never see clap.

use crate::load::ClientTimeouts;
use crate::server::pin::PinPlan;
use crate::server::{Endpoint, ServerError, ServerOptions, Target};
use std::path::PathBuf;

/// Which parameter set to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Fewer trials and shorter runs, same semantics: what CI runs.
    Quick,
    /// The seeds' sizes.
    Full,
}

impl Profile {
    /// The profile's table name in the TOML.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Quick => "quick",
            Profile::Full => "full",
        }
    }
}

/// Everything an experiment needs besides its own parameters.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// Results go to `out_dir/<id>/`.
    pub out_dir: PathBuf,
    /// quick or full.
    pub profile: Profile,
    /// `--set` overrides, already split into name and value.
    pub sets: Vec<(String, String)>,
    /// redis-server binary for managed servers.
    pub redis_server: PathBuf,
    /// A server the user runs, instead of a managed one: its full URL (password and TLS files
    /// included, see `server::endpoint`); shown only masked.
    pub redis_url: Option<String>,
    /// Managed servers speak TLS only (`--tls`).
    pub tls: bool,
    /// The ratelab binary that worker processes re-execute.
    pub worker_exe: PathBuf,
    /// Redis on one core, harness on the others.
    pub pin: PinPlan,
    /// Root of every random choice; recorded in meta.json.
    pub seed: u64,
    /// Client timeouts of the load generator.
    pub timeouts: ClientTimeouts,
    /// Show progress bars (a terminal, not CI).
    pub progress: bool,
    /// Say every half minute that a run is still going (a log: no bars, not `--quiet`).
    pub progress_lines: bool,
    /// Custom limiters (`--limiter`), loaded and registered, run beside the built-in strategies
    /// by the experiments that take them.
    pub limiters: Vec<crate::limiter::Strategy>,
}

impl Ctx {
    /// Defaults for tests and library users: quick profile, `redis-server` on PATH, pinned.
    pub fn new(out_dir: PathBuf, worker_exe: PathBuf) -> Self {
        Ctx {
            out_dir,
            profile: Profile::Quick,
            sets: Vec::new(),
            redis_server: PathBuf::from("redis-server"),
            redis_url: None,
            tls: false,
            worker_exe,
            pin: PinPlan::detect(),
            seed: 0x5eed,
            timeouts: ClientTimeouts::default(),
            progress: false,
            progress_lines: false,
            limiters: Vec::new(),
        }
    }

    /// How the servers ratelab starts are started: this run's binary, Redis's CPUs, `--tls`.
    pub fn server_options(&self) -> ServerOptions {
        ServerOptions {
            binary: self.redis_server.clone(),
            cpus: self.pin.redis.clone(),
            tls: self.tls,
            ..ServerOptions::default()
        }
    }

    /// The user's `--redis-url` server, when there is one: a standalone endpoint ratelab never
    /// stops, flushes or reconfigures.
    pub fn external(&self) -> Result<Option<Target>, ServerError> {
        let Some(url) = &self.redis_url else {
            return Ok(None);
        };
        let endpoint = Endpoint::from_url(url)?;
        Ok(Some(Target::External { endpoint }))
    }

    /// Restricts the calling thread (the harness) to its share of the CPUs.
    pub fn pin_harness(&self) -> std::io::Result<()> {
        crate::server::pin::pin_current_thread(&self.pin.harness)
    }
}
