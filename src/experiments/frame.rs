//! The frame every experiment runs in: resolve and check the parameters, refuse a server it may
//! not own, start (or name) the server, record, run the body with a [`Session`], delete this
//! run's keys whatever happened, then write meta.json and move the results into place.

use super::error::{ExperimentError, Phase, PhaseError};
use super::limiters::LimiterRow;
use super::params::{self, ParamError};
use super::registry::Definition;
use crate::context::Ctx;
use crate::limiter::Strategy;
use crate::load::{CheckTally, ClosedLoop, OpenLoop, OpenSpec, WorkerSpec};
use crate::record::{CsvSink, RunRecord};
use crate::server::{ServerError, ServerOptions, Target};
use serde::Serialize;
use std::path::PathBuf;

/// The experiment's parameter file in its results directory, as the run used it.
pub const EXPERIMENT_TOML: &str = "experiment.toml";

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
    pub target: Target,
    /// The staging directory and meta.json in the making.
    pub run: RunRecord,
    /// Prefix of every key this run writes; they are deleted at the end.
    pub prefix: String,
    id: &'static str,
}

impl<'a> Session<'a> {
    /// Opens `name` in the staging directory for rows of type `R`, flushed one by one.
    pub fn csv<R: Serialize>(&self, name: &str) -> Result<CsvSink<R>, ExperimentError> {
        Ok(self.run.staging.csv(name)?)
    }

    /// Adds a sentence meta.json carries for the reader.
    pub fn note(&mut self, text: impl Into<String>) {
        self.run.note(text);
    }

    /// A key of this run: the prefix and `suffix`.
    pub fn key(&self, suffix: impl std::fmt::Display) -> String {
        format!("{}{suffix}", self.prefix)
    }

    /// `builtins` followed by the run's custom limiters (`--limiter`), each once: the strategies
    /// an experiment that takes custom limiters runs.
    pub fn with_limiters(&self, builtins: &[Strategy]) -> Vec<Strategy> {
        let mut all = builtins.to_vec();
        for &custom in &self.ctx.limiters {
            if !all.contains(&custom) {
                all.push(custom);
            }
        }
        all
    }

    /// A progress bar labelled with the experiment, on a terminal only.
    pub fn progress(&self, total: u64) -> indicatif::ProgressBar {
        progress_bar(self.ctx, self.id, total)
    }

    /// A closed loop of `processes` workers running `spec` against this run's server, with the
    /// run's worker binary, CPUs, seed and client timeouts.
    pub fn closed_loop(&self, processes: usize, spec: WorkerSpec) -> ClosedLoop<'a> {
        ClosedLoop {
            exe: &self.ctx.worker_exe,
            cpus: &self.ctx.pin.harness,
            processes,
            template: WorkerSpec {
                url: self.target.url(),
                seed: self.ctx.seed,
                timeouts: self.ctx.timeouts,
                ..spec
            },
        }
    }

    /// An open loop of `processes` workers running `spec` against this run's server, with the
    /// run's worker binary, CPUs and client timeouts (the schedule's seed is the caller's).
    pub fn open_loop(&self, processes: usize, spec: OpenSpec) -> OpenLoop<'a> {
        OpenLoop {
            exe: &self.ctx.worker_exe,
            cpus: &self.ctx.pin.harness,
            processes,
            template: OpenSpec {
                url: self.target.url(),
                timeouts: self.ctx.timeouts,
                ..spec
            },
        }
    }

    /// A run with failed checks is not a measurement: see [`fail_on_errors`].
    pub fn fail_on_errors(&self, tally: &CheckTally) -> Result<(), PhaseError> {
        fail_on_errors(&self.target, tally)
    }

    /// Replaces the server with a fresh one of the same build (the old one is stopped): for
    /// experiments that need a clean server per setting. Only for experiments that own it.
    pub fn fresh_server(&mut self) -> Result<(), ServerError> {
        self.fresh_server_with(|_| {})
    }

    /// As [`Session::fresh_server`], the new server's options changed by `change` (pinning,
    /// startup-only settings).
    pub fn fresh_server_with(
        &mut self,
        change: impl FnOnce(&mut ServerOptions),
    ) -> Result<(), ServerError> {
        if !self.target.is_managed() {
            return Err(ServerError::NotManaged(format!(
                "{} starts fresh servers",
                self.id
            )));
        }
        self.target = self.ctx.target_with(change)?;
        Ok(())
    }
}

/// Resolves and validates `D`'s parameters for this context and checks its precondition.
pub fn prepare<D: Definition>(ctx: &Ctx) -> Result<(D::Params, toml::Table), ExperimentError> {
    let (params, table): (D::Params, _) = params::resolve(D::ID, D::TOML, ctx.profile, &ctx.sets)?;
    params.validate().map_err(|reason| ParamError::Invalid {
        experiment: D::ID.into(),
        reason,
    })?;
    if let (Some(why), Some(_)) = (D::MUST_OWN_SERVER, &ctx.redis_url) {
        return Err(ExperimentError::MustOwnServer { id: D::ID, why });
    }
    if !ctx.limiters.is_empty() && !D::TAKES_LIMITERS {
        let takers: Vec<&str> = (super::ALL.iter())
            .filter(|e| e.takes_limiters())
            .map(|e| e.id())
            .collect();
        return Err(ExperimentError::NoCustomLimiters {
            id: D::ID,
            takers: takers.join(", "),
        });
    }
    // FUNCTION LOAD would leave a library in a server that is not ratelab's, outside its keys.
    if ctx.redis_url.is_some() {
        let fcall = (ctx.limiters.iter())
            .filter_map(|l| match l {
                Strategy::Custom(name) => name.definition(),
                _ => None,
            })
            .find(|d| d.mode.uses_function());
        if let Some(d) = fcall {
            return Err(ExperimentError::Manifest(crate::limiter::custom::ManifestError {
                manifest: d.manifest,
                line: None,
                message: format!(
                    "{} is called with FCALL: loading its library would write into a server ratelab does \
                     not own (--redis-url); run it on a server ratelab starts",
                    d.name
                ),
            }));
        }
    }
    if let (Some(why), true) = (D::NO_MANAGED_TLS, ctx.tls) {
        return Err(ExperimentError::NoManagedTls { id: D::ID, why });
    }
    D::precondition()?;
    Ok((params, table))
}

/// `D`'s parameters for a profile and overrides, as `run` would resolve them.
pub fn resolve<D: Definition>(
    profile: crate::context::Profile,
    sets: &[(String, String)],
) -> Result<D::Params, ParamError> {
    params::resolve(D::ID, D::TOML, profile, sets).map(|(p, _)| p)
}

/// Runs `D` in the frame and returns its committed results directory.
pub fn run<D: Definition>(ctx: &Ctx) -> Result<PathBuf, ExperimentError> {
    let (params, table) = prepare::<D>(ctx)?;
    let info = params::info(D::TOML)?;
    let target = ctx.target().phase(|| "starting redis-server".into())?;
    let prefix = format!(
        "ratelab:{}:{:x}:{}:",
        D::ID,
        crate::limiter::unix_ms(),
        std::process::id()
    );
    // A user's server: every permission the run needs, checked before anything is measured.
    let checked_by = match &target {
        Target::External { url } => Some(
            crate::server::acl::preflight(url, D::ID, &prefix, D::ON_CLUSTER_NODE, D::PERMISSIONS)
                .phase(|| "checking the --redis-url server and its user's permissions".into())?,
        ),
        Target::Managed(_) => None,
    };
    let redis = target
        .describe()
        .phase(|| "reading the server's INFO and CONFIG".into())?;
    // Before anything is recorded: a manifest that cannot work leaves no partial results.
    let probes = probe_limiters(ctx, &target, &prefix);
    let cleaned = target.delete_keys_with_prefix(&prefix);
    let probes = probes?;
    cleaned.phase(|| "deleting the probes' keys".into())?;
    let mut run = RunRecord::begin(ctx, D::ID, &table, redis)?;
    if !probes.is_empty() {
        let mut sink = run
            .staging
            .csv::<LimiterRow>(super::limiters::LIMITERS_CSV)?;
        for (row, note) in probes {
            sink.write(&row)?;
            run.note(note);
        }
    }
    // The parameter file as this build ran it, beside the rows: a published dataset carries it.
    run.staging.write_text(EXPERIMENT_TOML, D::TOML)?;
    for note in &info.notes {
        run.note(params::fill_in(note, &table));
    }
    if let Some(by) = checked_by {
        run.note(format!(
            "The --redis-url user's permissions were checked before measuring ({}).",
            match by {
                crate::server::acl::CheckedBy::DryRun => "ACL DRYRUN",
                crate::server::acl::CheckedBy::Probe => "one harmless call of each command",
            }
        ));
    }
    let mut session = Session {
        ctx,
        target,
        run,
        prefix,
        id: D::ID,
    };
    let outcome = (D::BODY)(&mut session, &params);
    // Our keys only, whether the body succeeded or not; a managed server dies with them anyway.
    let cleaned = session.target.delete_keys_with_prefix(&session.prefix);
    outcome?;
    cleaned.phase(|| "deleting this run's keys".into())?;
    Ok(session.run.finish(ctx)?)
}

/// Calls every custom limiter on a fresh key of the run before any measurement (see
/// [`crate::limiter::custom::probe`]): its row of `limiters.csv` and a note on what the probe saw.
fn probe_limiters(
    ctx: &Ctx,
    target: &Target,
    prefix: &str,
) -> Result<Vec<(LimiterRow, String)>, ExperimentError> {
    if ctx.limiters.is_empty() {
        return Ok(Vec::new());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .phase(|| "starting a runtime to probe custom limiters".into())?;
    let url = target.url();
    let mut out = Vec::new();
    for &limiter in &ctx.limiters {
        let Strategy::Custom(name) = limiter else {
            continue;
        };
        let Some(d) = name.definition() else {
            continue;
        };
        let key = format!("{prefix}probe:{limiter}");
        let probe = runtime.block_on(async {
            let client = redis::Client::open(url.as_str())?;
            let mut con = client.get_multiplexed_async_connection().await?;
            // A mode without a fallback finds its script loaded, as its library's start-up does.
            crate::limiter::custom::initialise(&mut con, limiter).await?;
            Ok::<_, redis::RedisError>(crate::limiter::custom::probe(&mut con, limiter, &key).await)
        });
        let probe = probe.phase(|| format!("connecting to probe custom limiter {limiter}"))??;
        let mut note = format!(
            "custom limiter {limiter} ({}, {}, reference {}): probed before the run, it admitted {} of {} \
             calls made one at a time on a fresh key with {{limit}} = {}",
            d.manifest,
            d.algorithm.name(),
            d.algorithm.reference(),
            probe.admitted,
            probe.calls,
            probe.limit
        );
        for key in &d.key_notes {
            note.push_str(&format!("; {key}"));
        }
        let row = LimiterRow {
            strategy: limiter,
            algorithm: d.algorithm,
            reference: d.algorithm.reference(),
            manifest: d.manifest.clone(),
            script: d.script.clone(),
            invocation: d.mode.to_string(),
            anchor: match d.algorithm.has_windows() {
                true => d.anchor.name().to_string(),
                false => String::new(),
            },
            caller_clock: d.uses_caller_clock(),
            probe_calls: probe.calls,
            probe_admitted: probe.admitted,
            probe_limit: probe.limit,
        };
        out.push((row, note));
    }
    Ok(out)
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
