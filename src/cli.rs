//! The command line. Parsing only: `Cli::into_ctx` validates once and the library takes over.

use crate::context::{Ctx, Profile};
use crate::experiments::params::parse_set;
use crate::server::endpoint::{user_url, TlsFiles};
use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// Reproduces published Redis rate-limiter measurements against a real redis-server.
#[derive(Debug, Parser)]
#[command(name = "ratelab", version = env!("RATELAB_VERSION"), about)]
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
        /// Run your own limiter beside the built-in strategies: a manifest (TOML) beside its .lua
        /// file (examples/limiters/), or a library's adapter process (examples/adapters/) (repeatable).
        #[arg(long = "limiter", value_name = "MANIFEST")]
        limiters: Vec<PathBuf>,
    },
    /// Run every experiment, then draw the charts and write the report.
    All {
        /// Only these experiments (ids from `ratelab list`), in the registry's order; every one
        /// when none is named.
        ids: Vec<String>,
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
    /// CITATION.cff, LICENSE and README.md beside the CSVs, and a .tar.gz of it all.
    Publish {
        /// A results directory with REPORT.md (e.g. results/reference).
        dir: PathBuf,
        /// The archive to write (default: ratelab-<DIR's name>.tar.gz beside DIR, unpacking
        /// into ratelab-<DIR's name>/).
        #[arg(long)]
        out: Option<PathBuf>,
        /// The package's title in datapackage.json, CITATION.cff and README.md (default: the
        /// title DIR was published under before, else one made from DIR's name).
        #[arg(long)]
        title: Option<String>,
    },
    /// Verify a published dataset: checksums, schemas, and charts and report redrawn from the CSVs.
    Verify {
        /// The .tar.gz archive or its unpacked directory.
        path: PathBuf,
    },
    /// Every parameter of an experiment: its type, its value in each profile, its unit and what
    /// it means, and the experiment's planned time.
    Params {
        /// Experiment id (see `ratelab list`).
        id: String,
        /// The profile a run would use (its planned time is shown).
        #[arg(long, value_enum, default_value = "full")]
        profile: Profile,
        /// A value to try, checked as `run --set` checks it: --set name=value (repeatable).
        #[arg(long = "set", value_name = "NAME=VALUE")]
        sets: Vec<String>,
    },
    /// Print how long running experiments is planned to take (analysis/budget.toml).
    Estimate {
        /// The experiments to add up (default: every one, as `all` runs them).
        ids: Vec<String>,
        #[arg(long, value_enum, default_value = "full")]
        profile: Profile,
        /// With one experiment: a value to try, checked as `run --set` checks it (the plan is
        /// for the profile as written; what a --set changes is named, not modelled).
        #[arg(long = "set", value_name = "NAME=VALUE")]
        sets: Vec<String>,
    },
    /// Run the failure-mode battery over your limiter (docs/check.md): every check's limiter claims
    /// judged; exit 0 when all hold, 1 when one does not, 2 for a bad manifest or an adapter that
    /// breaks the protocol.
    Check {
        /// Checks to run alone (default: the whole battery; `--list` names them).
        names: Vec<String>,
        /// The limiter to check: a manifest (a Lua script, or a library's adapter) (repeatable).
        #[arg(
            long = "limiter",
            value_name = "MANIFEST",
            required_unless_present = "list"
        )]
        limiters: Vec<PathBuf>,
        /// Write a JUnit XML report here: a test suite per check, a test case per claim.
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        /// Write the judged claims here, as claims.json has them.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// A claim the run could not decide (inconclusive, no data) fails too.
        #[arg(long)]
        strict: bool,
        /// Name every check and what it asserts, and run nothing.
        #[arg(long)]
        list: bool,
        /// Where the runs' results go (each check's CSVs, REPORT.md).
        #[arg(long, default_value = "results/check")]
        out: PathBuf,
        /// redis-server binary for the servers ratelab starts.
        #[arg(long, default_value = "redis-server")]
        redis_server: PathBuf,
        /// Check against a server you run: only the checks that need not signal, restart or
        /// reconfigure it run; the others are skipped, saying why.
        #[arg(long, env = "RATELAB_REDIS_URL", hide_env_values = true)]
        redis_url: Option<String>,
        /// Never draw progress bars.
        #[arg(long)]
        quiet: bool,
    },
    /// Every library adapter in examples/adapters/ through check's battery, all in each check's
    /// one run: SCOREBOARD.md (a library per row, a failure mode per column), its HTML and CSV,
    /// beside the runs' CSVs and REPORT.md.
    Scoreboard {
        /// Checks to run alone (default: the whole battery; `ratelab check --list` names them).
        checks: Vec<String>,
        /// Only these adapters (their manifests' names).
        #[arg(long, num_args = 1..)]
        only: Vec<String>,
        /// Where the adapters are: a folder per library, each with its manifest(s).
        #[arg(long, default_value = "examples/adapters")]
        adapters: PathBuf,
        /// Where the runs' results go.
        #[arg(long, default_value = "results/scoreboard")]
        out: PathBuf,
        /// redis-server binary for the servers ratelab starts.
        #[arg(long, default_value = "redis-server")]
        redis_server: PathBuf,
        /// Never draw progress bars.
        #[arg(long)]
        quiet: bool,
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
    /// Use a server you run instead (redis://user:password@host:port/db, or rediss:// for TLS);
    /// experiments that must break or reconfigure it refuse. From the environment, the password
    /// stays out of the process list.
    #[arg(long, env = "RATELAB_REDIS_URL", hide_env_values = true)]
    pub redis_url: Option<String>,
    /// With a rediss:// URL: the CA (PEM) that signed your server's certificate.
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// With a rediss:// URL: a client certificate (PEM), for a server with tls-auth-clients.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Start ratelab's own servers with TLS only (a CA and certificates made for each server).
    #[arg(long, conflicts_with = "redis_url")]
    pub tls: bool,
    /// Root of every random choice.
    #[arg(long, default_value_t = 0x5eed)]
    pub seed: u64,
    /// Never draw progress bars.
    #[arg(long)]
    pub quiet: bool,
}

/// Reads, checks and registers every `--limiter` manifest; two of one name are refused.
pub fn load_limiters(paths: &[PathBuf]) -> anyhow::Result<Vec<crate::limiter::Strategy>> {
    let mut loaded: Vec<crate::limiter::custom::CustomLimiter> = Vec::new();
    for path in paths {
        let limiter = crate::limiter::custom::load(path)?;
        if let Some(first) = loaded.iter().find(|l| l.name == limiter.name) {
            anyhow::bail!(
                "limiter manifests {} and {} both name their limiter `{}`: names must differ",
                first.manifest,
                limiter.manifest,
                limiter.name
            );
        }
        loaded.push(limiter);
    }
    Ok(loaded
        .into_iter()
        .map(crate::limiter::custom::register)
        .collect())
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
        ensure_writable(&self.out)?;
        let mut ctx = Ctx::new(self.out, worker_exe);
        ctx.profile = self.profile;
        ctx.sets = sets
            .iter()
            .map(|s| parse_set(s))
            .collect::<Result<_, _>>()?;
        ctx.redis_server = self.redis_server;
        let tls_files = TlsFiles {
            ca: self.tls_ca,
            cert: self.tls_cert,
            key: self.tls_key,
        };
        ctx.redis_url = match self.redis_url {
            Some(url) => Some(user_url(&url, &tls_files)?),
            None if !tls_files.is_empty() => anyhow::bail!(
                "--tls-ca, --tls-cert and --tls-key are for your own server: give --redis-url rediss://..."
            ),
            None => None,
        };
        ctx.tls = self.tls;
        ctx.seed = self.seed;
        ctx.progress =
            !self.quiet && std::io::stderr().is_terminal() && std::env::var_os("CI").is_none();
        ctx.progress_lines = !self.quiet && !ctx.progress;
        Ok(ctx)
    }
}

/// `--out`, or the directory it would be created in, takes a new file: checked before any server
/// starts, creating nothing (a run refused later, e.g. for a bad manifest, leaves no directory).
fn ensure_writable(out: &std::path::Path) -> anyhow::Result<()> {
    use anyhow::Context;
    let absolute = std::path::absolute(out)
        .with_context(|| format!("--out {}: cannot resolve it", out.display()))?;
    let existing = (absolute.ancestors())
        .find(|dir| dir.is_dir())
        .with_context(|| format!("--out {}: no existing directory above it", out.display()))?;
    tempfile::Builder::new()
        .prefix(".ratelab-write-check")
        .tempfile_in(existing)
        .with_context(|| {
            format!(
                "--out {} is not writable ({} refuses a new file)",
                out.display(),
                existing.display()
            )
        })?;
    Ok(())
}

/// An unknown option, said with the fix: a near option's name when there is one, and that an
/// experiment's parameters are `--set name=value`, not options of their own.
pub fn unknown_option(err: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let text = |kind| match err.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(s)) => s.first().cloned(),
        _ => None,
    };
    let option = text(ContextKind::InvalidArg).unwrap_or_default();
    let mut out = format!("ratelab: error: unknown option `{option}`");
    if let Some(near) = text(ContextKind::SuggestedArg) {
        out.push_str(&format!("; did you mean `{near}`?"));
    }
    out.push_str(
        "\n  an experiment's parameters are set with `--set name=value` (`ratelab params ID` lists them); \
         `ratelab help COMMAND` lists a command's options",
    );
    out
}
