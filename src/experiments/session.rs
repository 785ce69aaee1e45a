//! What an experiment's body works with ([`Session`]): the servers of its declared topology as
//! typed handles, sinks for its rows, its keys, its loops, and fresh servers per trial or setting.

use super::error::PhaseError;
use crate::context::Ctx;
use crate::limiter::process::{Reach, SentinelReach};
use crate::limiter::Strategy;
use crate::load::{CheckTally, ClosedLoop, OpenLoop, OpenSpec, WorkerSpec};
use crate::record::RunRecord;
use crate::server::{
    Deployment, Link, RedisCluster, RedisSentinels, RedisServer, Replicated, ServerError,
    ServerOptions, Target, Topology, Watched, SENTINEL_SERVICE,
};

/// What an experiment's body works with.
pub struct Session<'a> {
    /// The validated options.
    pub ctx: &'a Ctx,
    /// The server clients write to: the declared standalone server or primary, the user's
    /// (`--redis-url`), or none (`Topology::None`, and a declared cluster: see `cluster`).
    pub target: Target,
    /// The declared topology's replicas of `target` (`Topology::Replicated`), caught up.
    pub replicas: Vec<RedisServer>,
    /// The declared cluster (`Topology::Cluster`).
    pub cluster: Option<RedisCluster>,
    /// The Sentinels watching `target` and `replicas` (`Topology::Sentinel`); after a failover
    /// they name the primary, which `target` no longer is.
    pub sentinels: Option<RedisSentinels>,
    /// The staging directory and meta.json in the making.
    pub run: RunRecord,
    /// Prefix of every key this run writes; they are deleted at the end.
    pub prefix: String,
    pub(super) id: &'static str,
    pub(super) topology: Topology,
}

/// A built deployment as a session holds it: the writable server apart.
pub(super) struct Parts {
    pub target: Target,
    pub replicas: Vec<RedisServer>,
    pub cluster: Option<RedisCluster>,
    pub sentinels: Option<RedisSentinels>,
}

impl From<Deployment> for Parts {
    fn from(built: Deployment) -> Self {
        let mut sentinels = None;
        let (target, replicas, cluster) = match built {
            Deployment::None => (Target::NoServer, Vec::new(), None),
            Deployment::Standalone(server) => (Target::Managed(server), Vec::new(), None),
            Deployment::Replicated(set) => (Target::Managed(set.primary), set.replicas, None),
            Deployment::Sentinel(watched) => {
                sentinels = Some(watched.sentinels);
                (
                    Target::Managed(watched.set.primary),
                    watched.set.replicas,
                    None,
                )
            }
            Deployment::Cluster(cluster) => (Target::NoServer, Vec::new(), Some(cluster)),
        };
        Parts {
            target,
            replicas,
            cluster,
            sentinels,
        }
    }
}

impl<'a> Session<'a> {
    /// Adds a sentence meta.json carries for the reader.
    pub fn note(&mut self, text: impl Into<String>) {
        self.run.note(text);
    }

    /// A key of this run: the prefix and `suffix`.
    pub fn key(&self, suffix: impl std::fmt::Display) -> String {
        format!("{}{suffix}", self.prefix)
    }

    /// `builtins`, then the built-in references of the run's custom limiters that `builtins` lacks
    /// (what each is compared with), then the custom limiters, each once.
    pub fn with_limiters_and_references(&self, builtins: &[Strategy]) -> Vec<Strategy> {
        let mut all = builtins.to_vec();
        for reference in self.ctx.limiters.iter().map(|l| l.reference()) {
            if !all.contains(&reference) {
                all.push(reference);
            }
        }
        self.with_limiters(&all)
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

    /// A closed loop of `processes` workers running `spec` against this run's server (its URL
    /// derived from the target's endpoint here, where the workers get their arguments), with the
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

    /// What a limiter process is told of `watched`: the Sentinels to ask for its primary (named
    /// [`SENTINEL_SERVICE`]), the primary's URL now and the run's client timeouts.
    pub fn reach_through_sentinels(&self, watched: &Watched) -> Reach {
        let sentinel = SentinelReach {
            name: SENTINEL_SERVICE.to_string(),
            addresses: (watched.sentinels.ports().iter())
                .map(|port| format!("127.0.0.1:{port}"))
                .collect(),
        };
        Reach {
            sentinel: Some(sentinel),
            ..self.ctx.timeouts.reach(&watched.set.primary.url())
        }
    }

    /// A run with failed checks is not a measurement: see [`fail_on_errors`].
    pub fn fail_on_errors(&self, tally: &CheckTally) -> Result<(), PhaseError> {
        fail_on_errors(&self.target, tally)
    }

    /// Builds `topology` afresh with this run's binary, pinning and TLS, for one trial or setting;
    /// it is the caller's, stopped when dropped. Only for experiments that own their servers.
    pub fn build(&self, topology: &Topology) -> Result<Deployment, ServerError> {
        self.build_with(topology, |_| {})
    }

    /// As [`Session::build`], every server's options changed by `change` first (persistence,
    /// pinning, startup-only settings).
    pub fn build_with(
        &self,
        topology: &Topology,
        change: impl FnOnce(&mut ServerOptions),
    ) -> Result<Deployment, ServerError> {
        topology.build(&self.own_options(&topology.describe(), change)?)
    }

    /// A primary and `replicas` replicas, each dialling its primary through the port `link`
    /// names (see [`Link`]), every server's options changed by `change` first.
    pub fn build_replicated_via(
        &self,
        replicas: usize,
        change: impl FnOnce(&mut ServerOptions),
        link: Link<'_>,
    ) -> Result<Replicated, ServerError> {
        let what = Topology::Replicated { replicas }.describe();
        Replicated::start_via(&self.own_options(&what, change)?, replicas, link)
    }

    /// The options of servers this experiment starts for itself (`what`, for the error), or
    /// why it cannot: the user named a server.
    fn own_options(
        &self,
        what: &str,
        change: impl FnOnce(&mut ServerOptions),
    ) -> Result<ServerOptions, ServerError> {
        if self.ctx.redis_url.is_some() {
            let why = format!("{} starts {what} of its own", self.id);
            return Err(ServerError::NotManaged(why));
        }
        let mut opts = self.ctx.server_options();
        change(&mut opts);
        Ok(opts)
    }

    /// Replaces the declared topology with a fresh one of the same build (the old one stopped once
    /// the new one is up): for experiments that need clean servers per setting.
    pub fn fresh_server(&mut self) -> Result<(), ServerError> {
        self.fresh_server_with(|_| {})
    }

    /// As [`Session::fresh_server`], the new servers' options changed by `change` (pinning,
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
        let parts = Parts::from(self.build_with(&self.topology, change)?);
        self.target = parts.target;
        self.replicas = parts.replicas;
        self.cluster = parts.cluster;
        self.sentinels = parts.sentinels;
        Ok(())
    }
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
