//! The command line. Parsing only: `Cli::into_ctx` validates once and the library takes over.

use crate::context::{Ctx, Profile};
use crate::experiments::params::parse_set;
use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// Reproduces published Redis rate-limiter measurements against a real redis-server.
#[derive(Debug, Parser)]
#[command(name = "ratelab", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// What to do.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List every experiment with the seed it reproduces.
    List,
    /// Run one experiment into DIR/<id>/.
    Run {
        /// Experiment id (see `ratelab list`).
        id: String,
        #[command(flatten)]
        run: RunArgs,
        /// Override a parameter: --set name=value (repeatable).
        #[arg(long = "set", value_name = "NAME=VALUE")]
        sets: Vec<String>,
    },
    /// Run every experiment, then draw the charts and write the report.
    All {
        #[command(flatten)]
        run: RunArgs,
    },
    /// Redraw the charts of a results directory from its CSVs (no Redis needed).
    Chart {
        /// A results directory (e.g. results/latest).
        dir: PathBuf,
    },
    /// Write REPORT.md for a results directory from its CSVs (no Redis needed).
    Report {
        /// A results directory (e.g. results/latest); two or more set the runs side by side.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// With two or more directories: write the comparison here instead of to stdout.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Publish a results directory as one verifiable dataset: datapackage.json, SHA256SUMS,
    /// CITATION.cff and README.md beside the CSVs, and a .tar.gz of it all.
    Publish {
        /// A results directory with REPORT.md (e.g. results/reference).
        dir: PathBuf,
        /// The archive to write (default: DIR.tar.gz beside DIR).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Verify a published dataset: checksums, schemas, and charts and report redrawn from the CSVs.
    Verify {
        /// The .tar.gz archive or its unpacked directory.
        path: PathBuf,
    },
    /// Print how long running every experiment is planned to take (analysis/budget.toml).
    Estimate {
        #[arg(long, value_enum, default_value = "full")]
        profile: Profile,
    },
    /// Internal: one load-generator process, driven over stdin/stdout by its parent.
    #[command(hide = true)]
    Worker,
}

/// Options shared by `run` and `all`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// quick: fewer trials, same semantics (CI); full: the seeds' sizes.
    #[arg(long, value_enum, default_value = "full")]
    pub profile: Profile,
    /// Where results go.
    #[arg(long, default_value = "results/latest")]
    pub out: PathBuf,
    /// redis-server binary for the servers ratelab starts (another Redis or Valkey version).
    #[arg(long, default_value = "redis-server")]
    pub redis_server: PathBuf,
    /// Use a server you run instead; experiments that must break or reconfigure it refuse.
    #[arg(long)]
    pub redis_url: Option<String>,
    /// Root of every random choice.
    #[arg(long, default_value_t = 0x5eed)]
    pub seed: u64,
    /// Never draw progress bars.
    #[arg(long)]
    pub quiet: bool,
}

impl RunArgs {
    /// Validates the options into the context experiments run with.
    pub fn into_ctx(self, sets: &[String]) -> anyhow::Result<Ctx> {
        use std::io::IsTerminal;
        let worker_exe = std::env::current_exe()?;
        // Checked before any server starts: a file in the way would fail only at the first write.
        if self.out.exists() && !self.out.is_dir() {
            anyhow::bail!(
                "--out {} is a file, not a directory: name a directory (it is created if missing)",
                self.out.display()
            );
        }
        let mut ctx = Ctx::new(self.out, worker_exe);
        ctx.profile = self.profile;
        ctx.sets = sets
            .iter()
            .map(|s| parse_set(s))
            .collect::<Result<_, _>>()?;
        ctx.redis_server = self.redis_server;
        ctx.redis_url = self.redis_url;
        ctx.seed = self.seed;
        ctx.progress =
            !self.quiet && std::io::stderr().is_terminal() && std::env::var_os("CI").is_none();
        Ok(ctx)
    }
}
