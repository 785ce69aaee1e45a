//! What every experiment shares: errors that name the phase, the processes-x-in-flight notation,
//! and the bookkeeping that turns a staging directory into results with meta.json.

use super::params::ParamError;
use crate::context::Ctx;
use crate::load::{CheckTally, LoadError, OpenLoopHealth, OpenTally};
use crate::record::{self, Meta, RecordError, RedisMeta, Staging, SuspendCheck};
use crate::server::{config_snapshot, ServerError, Target};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

/// Why an experiment did not complete.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    #[error("unknown experiment `{id}`; valid: {valid}")]
    Unknown { id: String, valid: String },
    #[error(transparent)]
    Params(#[from] ParamError),
    #[error("{phase}: {source}")]
    Failed { phase: String, source: PhaseError },
}

/// The cause of a failed phase.
#[derive(Debug, thiserror::Error)]
pub enum PhaseError {
    #[error(transparent)]
    Server(#[from] ServerError),
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("{0}")]
    Invalid(String),
}

/// Attaches the phase ("starting redis", "trial 3 of naive-bucket 1x2") to an error.
pub trait Phase<T> {
    /// Names what was being done when the error happened.
    fn phase(self, what: impl FnOnce() -> String) -> Result<T, ExperimentError>;
}

impl<T, E: Into<PhaseError>> Phase<T> for Result<T, E> {
    fn phase(self, what: impl FnOnce() -> String) -> Result<T, ExperimentError> {
        self.map_err(|e| ExperimentError::Failed {
            phase: what(),
            source: e.into(),
        })
    }
}

/// `P x F`: P worker processes, F requests in flight on each one's connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Concurrency {
    pub processes: usize,
    pub in_flight: usize,
}

impl TryFrom<String> for Concurrency {
    type Error = String;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        let bad = || format!("`{s}` is not PROCESSESxIN_FLIGHT (e.g. 4x8, both >= 1)");
        let (p, f) = s.split_once('x').ok_or_else(bad)?;
        let processes: usize = p.trim().parse().map_err(|_| bad())?;
        let in_flight: usize = f.trim().parse().map_err(|_| bad())?;
        if processes == 0 || in_flight == 0 {
            return Err(bad());
        }
        Ok(Concurrency {
            processes,
            in_flight,
        })
    }
}

impl From<Concurrency> for String {
    fn from(c: Concurrency) -> String {
        format!("{}x{}", c.processes, c.in_flight)
    }
}

impl std::fmt::Display for Concurrency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.processes, self.in_flight)
    }
}

/// A run in progress: its staging directory and what meta.json will say about it.
pub struct RunRecord {
    pub staging: Staging,
    experiment: &'static str,
    started_at: String,
    started: Instant,
    suspend_start: i128,
    params: serde_json::Value,
    redis: RedisMeta,
    notes: Vec<String>,
    open_loop: Option<OpenLoopHealth>,
}

impl RunRecord {
    /// Opens the staging directory and records the server's version and config as found.
    pub fn begin(
        ctx: &Ctx,
        experiment: &'static str,
        params: &toml::Table,
        target: &Target,
    ) -> Result<Self, ExperimentError> {
        let staging = Staging::new(&ctx.out_dir, experiment)
            .phase(|| "creating the results directory".into())?;
        let redis = redis_meta(target).phase(|| "reading the server's INFO and CONFIG".into())?;
        let params = serde_json::to_value(params)
            .map_err(RecordError::from)
            .phase(|| "recording parameters".into())?;
        Ok(RunRecord {
            staging,
            experiment,
            started_at: chrono::Utc::now().to_rfc3339(),
            started: Instant::now(),
            suspend_start: record::suspend_offset_ns(),
            params,
            redis,
            notes: Vec::new(),
            open_loop: None,
        })
    }

    /// Adds a sentence the reader needs to interpret the numbers.
    pub fn note(&mut self, text: impl Into<String>) {
        self.notes.push(text.into());
    }

    /// Counts an open-loop run towards meta.json's verdict on whether the generator kept up.
    pub fn open_loop_run(&mut self, label: &str, tally: &OpenTally) {
        self.open_loop
            .get_or_insert_with(OpenLoopHealth::default)
            .add(label, tally);
    }

    /// Writes meta.json and moves the results into place.
    pub fn finish(self, ctx: &Ctx) -> Result<PathBuf, ExperimentError> {
        let suspend = SuspendCheck::between(self.suspend_start, record::suspend_offset_ns());
        let mut notes = self.notes;
        if suspend.suspended {
            notes.push(
                "WARNING: the machine was suspended during this run; timings are not valid".into(),
            );
        }
        if let Some(health) = &self.open_loop {
            notes.push(health.note());
        }
        let meta = Meta {
            experiment: self.experiment.to_string(),
            profile: ctx.profile.name().to_string(),
            harness_version: env!("CARGO_PKG_VERSION").to_string(),
            git_commit: record::git_commit(),
            started_at: self.started_at,
            ended_at: chrono::Utc::now().to_rfc3339(),
            wall_seconds: self.started.elapsed().as_secs_f64(),
            seed: ctx.seed,
            params: self.params,
            redis: self.redis,
            host: record::host_meta(),
            pinning: ctx.pin.clone(),
            client_timeouts: ctx.timeouts,
            suspend,
            notes,
            open_loop: self.open_loop,
        };
        self.staging
            .write_json("meta.json", &meta)
            .phase(|| "writing meta.json".into())?;
        self.staging
            .commit()
            .phase(|| "moving results into place".into())
    }
}

fn redis_meta(target: &Target) -> Result<RedisMeta, ServerError> {
    let info = target.info("server")?;
    let mut con = target.connection()?;
    let keep = [
        "redis_version",
        "redis_mode",
        "os",
        "arch_bits",
        "multiplexing_api",
        "gcc_version",
        "executable",
    ];
    let server_info: BTreeMap<String, String> = keep
        .iter()
        .filter_map(|k| info.get(k).map(|v| (k.to_string(), v.to_string())))
        .collect();
    let (managed, binary) = match target {
        Target::Managed(s) => (true, Some(s.binary().display().to_string())),
        Target::External { .. } => (false, None),
    };
    Ok(RedisMeta {
        managed,
        url: target.url(),
        binary,
        version: info.get("redis_version").unwrap_or("unknown").to_string(),
        mode: info.get("redis_mode").unwrap_or("unknown").to_string(),
        server_info,
        config: config_snapshot(&mut con)?.into_iter().collect(),
    })
}

/// Parameters that can say what is wrong with them before anything starts.
pub trait Validate {
    /// A sentence naming the bad parameters, or Ok.
    fn validate(&self) -> Result<(), String>;
}

/// What an experiment's body works with.
pub struct Session<'a> {
    /// The validated options.
    pub ctx: &'a Ctx,
    /// The server under test.
    pub target: &'a mut Target,
    /// The staging directory and meta.json in the making.
    pub run: &'a mut RunRecord,
    /// Prefix of every key this run writes; they are deleted at the end.
    pub prefix: &'a str,
}

/// The frame every experiment shares: resolve and check the parameters, start (or name) the
/// server, record, run the body, delete this run's keys whatever happened, then write meta.json
/// and move the results into place.
pub fn run_experiment<P: serde::de::DeserializeOwned + Validate>(
    ctx: &Ctx,
    experiment: super::Experiment,
    body: impl FnOnce(&mut Session, &P) -> Result<(), ExperimentError>,
) -> Result<PathBuf, ExperimentError> {
    let id = experiment.id();
    let (params, table): (P, _) =
        super::params::resolve(id, experiment.params_toml(), ctx.profile, &ctx.sets)?;
    params.validate().map_err(|reason| ParamError::Invalid {
        experiment: id.into(),
        reason,
    })?;
    let mut target = ctx.target().phase(|| "starting redis-server".into())?;
    let mut run = RunRecord::begin(ctx, id, &table, &target)?;
    let prefix = format!(
        "ratelab:{id}:{:x}:{}:",
        crate::limiter::unix_ms(),
        std::process::id()
    );
    let outcome = body(
        &mut Session {
            ctx,
            target: &mut target,
            run: &mut run,
            prefix: &prefix,
        },
        &params,
    );
    // Our keys only, whether the body succeeded or not; a managed server dies with them anyway.
    let cleaned = delete_keys_with_prefix(&target, &prefix);
    outcome?;
    cleaned.phase(|| "deleting this run's keys".into())?;
    run.finish(ctx)
}

/// A run with failed checks is not a measurement: a dead server is reported with its log,
/// otherwise the first error is.
pub fn fail_on_errors(target: &Target, tally: &CheckTally) -> Result<(), PhaseError> {
    if tally.errors == 0 {
        return Ok(());
    }
    target.check_alive()?;
    Err(PhaseError::Invalid(format!(
        "{} of {} checks failed; first error: {}",
        tally.errors,
        tally.total(),
        tally.first_error.clone().unwrap_or_default()
    )))
}

/// A progress bar on a terminal, nothing in CI or with --quiet.
pub fn progress_bar(ctx: &Ctx, label: &str, total: u64) -> indicatif::ProgressBar {
    if !ctx.progress {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    let template = format!("{label} {{bar:40}} {{pos}}/{{len}} {{elapsed}}");
    if let Ok(style) = indicatif::ProgressStyle::with_template(&template) {
        bar.set_style(style);
    }
    bar
}

/// Deletes this run's keys (and only them) by prefix, so a user's server is left as found.
pub fn delete_keys_with_prefix(target: &Target, prefix: &str) -> Result<u64, ServerError> {
    let mut con = target.connection()?;
    let pattern = format!("{prefix}*");
    let mut cursor: u64 = 0;
    let mut deleted = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(1000)
            .query(&mut con)?;
        if !keys.is_empty() {
            deleted += redis::cmd("UNLINK").arg(&keys).query::<u64>(&mut con)?;
        }
        if next == 0 {
            return Ok(deleted);
        }
        cursor = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrency_parses_and_prints() {
        let c = Concurrency::try_from("4x8".to_string()).unwrap();
        assert_eq!((c.processes, c.in_flight), (4, 8));
        assert_eq!(c.to_string(), "4x8");
        for bad in ["4", "0x1", "1x0", "ax2", "4x8x1"] {
            assert!(Concurrency::try_from(bad.to_string()).is_err(), "{bad}");
        }
    }
}
