//! The frame every experiment runs in: resolve and check the parameters, refuse a server it may
//! not own, build the topology the experiment declares (or name the user's server), record, run
//! the body with a [`Session`], delete this run's keys whatever happened, then write meta.json and
//! move the results into place. It knows experiments only through [`Definition`], never the list
//! of them (registry.rs), so the registry sits above it.

use super::definition::Definition;
use super::error::{ExperimentError, Phase};
use super::limiters::{LimiterRow, PromiseRow, PROCESS_INVOCATION};
use super::params::{self, ParamError};
use super::session::{Parts, Session};
use crate::context::Ctx;
use crate::limiter::custom::{CustomLimiter, Probe};
use crate::limiter::process::{Handshake, Reach};
use crate::limiter::Strategy;
use crate::record::RunRecord;
use crate::server::{ServerError, Target, Topology};
use std::path::PathBuf;

pub use super::definition::Validate;
pub use super::session::{fail_on_errors, progress_bar};

/// The experiment's parameter file in its results directory, as the run used it.
pub const EXPERIMENT_TOML: &str = "experiment.toml";

/// What [`prepare`] resolved: the parameters, their table, and the experiment's own limiters,
/// loaded and checked.
pub type Prepared<P> = (P, toml::Table, Vec<CustomLimiter>);

/// Resolves and validates `D`'s parameters for this context, checks its precondition and loads
/// its own limiters; `takers(processes)` names the experiments that do take `--limiter` (limiter
/// processes with `true`), for the error of one that does not.
pub fn prepare<D: Definition>(
    ctx: &Ctx,
    takers: fn(bool) -> String,
) -> Result<Prepared<D::Params>, ExperimentError> {
    let (params, table): (D::Params, _) = params::resolve(D::ID, D::TOML, ctx.profile, &ctx.sets)?;
    params.validate().map_err(|reason| ParamError::Invalid {
        experiment: D::ID.into(),
        reason,
    })?;
    if let (Some(why), Some(_)) = (D::MUST_OWN_SERVER, &ctx.redis_url) {
        return Err(ExperimentError::MustOwnServer { id: D::ID, why });
    }
    if ctx.redis_url.is_some() && D::TOPOLOGY != Topology::Standalone {
        return Err(ExperimentError::NeedsOwnTopology {
            id: D::ID,
            topology: D::TOPOLOGY.describe(),
        });
    }
    let script = (ctx.limiters.iter()).find(|l| !l.is_process());
    match (script, D::TAKES_LIMITERS, D::TAKES_PROCESSES) {
        (Some(l), false, true) => {
            return Err(ExperimentError::NoLimiterScripts {
                id: D::ID,
                name: l.to_string(),
                takers: takers(false),
            })
        }
        (_, false, false) if !ctx.limiters.is_empty() => {
            return Err(ExperimentError::NoCustomLimiters {
                id: D::ID,
                takers: takers(false),
            })
        }
        _ => {}
    }
    let process = (ctx.limiters.iter()).find(|l| l.is_process());
    if let (Some(l), false) = (process, D::TAKES_PROCESSES) {
        return Err(ExperimentError::NoLimiterProcesses {
            id: D::ID,
            name: l.to_string(),
            takers: takers(true),
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
    let own = own_limiters_ready(&D::own_limiters(&params))?;
    if let (Some(why), true) = (D::NO_MANAGED_TLS, ctx.tls) {
        return Err(ExperimentError::NoManagedTls { id: D::ID, why });
    }
    D::precondition()?;
    Ok((params, table, own))
}

/// `D`'s parameters for a profile and overrides, as `run` would resolve them.
pub fn resolve<D: Definition>(
    profile: crate::context::Profile,
    sets: &[(String, String)],
) -> Result<D::Params, ParamError> {
    params::resolve(D::ID, D::TOML, profile, sets).map(|(p, _)| p)
}

/// Runs `D` in the frame and returns its committed results directory: its declared topology built
/// (or the user's server named), the body run, this run's keys deleted whatever happened, and
/// every server the frame built stopped when the session drops, on every exit path.
pub fn run<D: Definition>(
    ctx: &Ctx,
    takers: fn(bool) -> String,
) -> Result<PathBuf, ExperimentError> {
    let (params, table, own) = prepare::<D>(ctx, takers)?;
    let with_own = with_limiters(ctx, own);
    let ctx = with_own.as_ref().unwrap_or(ctx);
    let info = params::info(D::TOML)?;
    let parts = build::<D>(ctx).phase(|| "starting redis-server".into())?;
    let prefix = format!(
        "ratelab:{}:{:x}:{}:",
        D::ID,
        crate::limiter::unix_ms(),
        std::process::id()
    );
    let target = &parts.target;
    // A user's server: every permission the run needs, checked before anything is measured.
    let checked_by = match target {
        Target::External { endpoint } => Some(
            crate::server::acl::preflight(
                &endpoint.url(),
                D::ID,
                &prefix,
                D::ON_CLUSTER_NODE,
                D::PERMISSIONS,
            )
            .phase(|| "checking the --redis-url server and its user's permissions".into())?,
        ),
        Target::Managed(_) | Target::NoServer => None,
    };
    // Without a server while the body runs (its own per trial), the build is described, and
    // custom limiters probed, on one started for that alone and stopped before the body.
    let described = || "reading the server's INFO and CONFIG".to_string();
    let stand_in = match target {
        Target::NoServer => Some(Target::Managed(
            crate::server::RedisServer::start(&ctx.server_options()).phase(described)?,
        )),
        _ => None,
    };
    let seen = stand_in.as_ref().unwrap_or(target);
    let redis = seen.describe().phase(described)?;
    // Before anything is recorded: a manifest that cannot work leaves no partial results.
    let probes = probe_limiters(ctx, seen, &prefix, D::ON_CLUSTER_NODE);
    drop(stand_in);
    let cleaned = delete_keys(target, &prefix);
    let probes = probes?;
    cleaned.phase(|| "deleting the probes' keys".into())?;
    let mut run = RunRecord::begin(ctx, D::ID, &table, redis)?;
    if !probes.is_empty() {
        let mut sink = run
            .staging
            .csv::<LimiterRow>(super::limiters::LIMITERS_CSV)?;
        for (row, note) in &probes {
            sink.write(row)?;
            run.note(note.clone());
        }
        record_promises(&mut run, &probes)?;
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
        target: parts.target,
        replicas: parts.replicas,
        cluster: parts.cluster,
        sentinels: parts.sentinels,
        run,
        prefix,
        id: D::ID,
        topology: D::TOPOLOGY,
    };
    let outcome = (D::BODY)(&mut session, &params);
    // Our keys only, whether the body succeeded or not; a managed server dies with them anyway.
    let cleaned = delete_keys(&session.target, &session.prefix);
    outcome?;
    cleaned.phase(|| "deleting this run's keys".into())?;
    Ok(session.run.finish(ctx)?)
}

/// An experiment's own limiter manifests, read and checked before anything starts (so `all` skips
/// the experiment with the reason): each reads, no two name one limiter, an adapter's program is on
/// PATH, and an adapter folder with a package.json has its packages installed.
fn own_limiters_ready(manifests: &[PathBuf]) -> Result<Vec<CustomLimiter>, ExperimentError> {
    let mut loaded: Vec<CustomLimiter> = Vec::new();
    for path in manifests {
        let limiter = crate::limiter::custom::load(path)?;
        let refuse = |message: String| crate::limiter::custom::ManifestError {
            manifest: limiter.manifest.clone(),
            line: None,
            message,
        };
        if let Some(first) = loaded.iter().find(|l| l.name == limiter.name) {
            let why = format!(
                "{} names limiter `{}` too: names must differ",
                first.manifest, limiter.name
            );
            return Err(refuse(why).into());
        }
        if let Some(p) = &limiter.process {
            let program = p.argv.first().map(String::as_str).unwrap_or_default();
            if !program.contains('/') && !on_path(program) {
                return Err(refuse(format!(
                    "its adapter runs `{program}`, which is not on PATH"
                ))
                .into());
            }
            let folder = std::path::Path::new(&p.dir);
            if folder.join("package.json").is_file() && !folder.join("node_modules").is_dir() {
                let why = format!(
                    "{} has no node_modules: install it with `bash scripts/adapters.sh`",
                    p.dir
                );
                return Err(refuse(why).into());
            }
        }
        loaded.push(limiter);
    }
    Ok(loaded)
}

fn on_path(program: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| dir.join(program).is_file())
}

/// `ctx` with the experiment's own limiters registered after its own, when there are any.
fn with_limiters(ctx: &Ctx, own: Vec<CustomLimiter>) -> Option<Ctx> {
    if own.is_empty() {
        return None;
    }
    let mut with = ctx.clone();
    (with.limiters).extend(own.into_iter().map(crate::limiter::custom::register));
    Some(with)
}

/// `D`'s declared topology, built with this run's binary, pinning and TLS, or the user's
/// `--redis-url` server (a standalone endpoint, never stopped, flushed or reconfigured).
fn build<D: Definition>(ctx: &Ctx) -> Result<Parts, ServerError> {
    if let Some(external) = ctx.external()? {
        return Ok(Parts {
            target: external,
            replicas: Vec::new(),
            cluster: None,
            sentinels: None,
        });
    }
    Ok(Parts::from(D::TOPOLOGY.build(&ctx.server_options())?))
}

/// Deletes this run's keys on the target (nothing to delete without one).
fn delete_keys(target: &Target, prefix: &str) -> Result<u64, ServerError> {
    match target {
        Target::NoServer => Ok(0),
        _ => target.delete_keys_with_prefix(prefix),
    }
}

/// A custom limiter's row of `limiters.csv` and the note on what its probe saw; a limiter
/// process's `handshake` names its library.
fn limiter_row(
    limiter: Strategy,
    d: &CustomLimiter,
    probe: Probe,
    handshake: Option<&Handshake>,
) -> (LimiterRow, String) {
    let library = handshake.map_or(String::new(), |h| match h.client.is_empty() {
        true => format!("{} {}", h.library, h.version),
        false => format!("{} {} ({})", h.library, h.version, h.client),
    });
    let kind = match handshake {
        Some(_) => format!("process `{}` running {library}", d.script),
        None => format!("reference {}", d.algorithm.reference()),
    };
    let mut note = format!(
        "custom limiter {limiter} ({}, {}, {kind}): probed before the run, it admitted {} of {} calls made one at \
         a time on a fresh key with limit {}",
        d.manifest,
        d.algorithm.name(),
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
        invocation: match handshake {
            Some(_) => PROCESS_INVOCATION.to_string(),
            None => d.mode.to_string(),
        },
        library,
        anchor: match d.algorithm.has_windows() {
            true => d.anchor.name().to_string(),
            false => String::new(),
        },
        // A script's clock is in its manifest; a library's, in what its adapter said.
        caller_clock: match handshake {
            Some(h) => h.clock == Some(crate::limiter::process::Clock::Caller),
            None => d.uses_caller_clock(),
        },
        probe_calls: probe.calls,
        probe_admitted: probe.admitted,
        probe_limit: probe.limit,
    };
    (row, note)
}

/// Calls every custom limiter on a fresh key of the run before any measurement (see
/// [`crate::limiter::custom::probe`]): its row of `limiters.csv` and a note on what the probe saw.
/// promises.csv: what each probed limiter's manifest promised (written only when one did).
fn record_promises(
    run: &mut RunRecord,
    probes: &[(LimiterRow, String)],
) -> Result<(), ExperimentError> {
    let mut rows = Vec::new();
    for (row, _) in probes {
        if let Strategy::Custom(name) = row.strategy {
            let promises = name.definition().map(|d| d.promises).unwrap_or_default();
            rows.extend(promises.iter().map(|p| PromiseRow::of(row.strategy, p)));
        }
    }
    if rows.is_empty() {
        return Ok(());
    }
    let mut sink = run
        .staging
        .csv::<PromiseRow>(super::limiters::PROMISES_CSV)?;
    rows.iter().try_for_each(|r| sink.write(r))?;
    Ok(())
}

fn probe_limiters(
    ctx: &Ctx,
    target: &Target,
    prefix: &str,
    on_cluster_node: bool,
) -> Result<Vec<(LimiterRow, String)>, ExperimentError> {
    if ctx.limiters.is_empty() {
        return Ok(Vec::new());
    }
    // A user's cluster node: a limiter process is probed through its library's cluster client,
    // as the run will ask it (a plain client there meets MOVED for another node's keys).
    let cluster_node = on_cluster_node && target.is_users_cluster_node().unwrap_or(false);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .phase(|| "starting a runtime to probe custom limiters".into())?;
    let endpoint = target
        .endpoint()
        .phase(|| "probing custom limiters".into())?;
    let mut out = Vec::new();
    for &limiter in &ctx.limiters {
        let Strategy::Custom(name) = limiter else {
            continue;
        };
        let Some(d) = name.definition() else {
            continue;
        };
        let key = format!("{prefix}probe:{limiter}");
        if d.process.is_some() {
            let reach = Reach {
                cluster: cluster_node,
                ..ctx.timeouts.reach(&endpoint.url())
            };
            let probed =
                runtime.block_on(crate::limiter::process::probe(name.as_str(), &reach, &key))?;
            out.push(limiter_row(limiter, &d, probed.0, Some(&probed.1)));
            anchor_seen(out.last_mut(), &d, &endpoint, &key, cluster_node);
            continue;
        }
        let probe = runtime.block_on(async {
            let client = endpoint.client()?;
            let mut con = client.get_multiplexed_async_connection().await?;
            // A mode without a fallback finds its script loaded, as its library's start-up does.
            crate::limiter::custom::initialise(&mut con, limiter).await?;
            Ok::<_, redis::RedisError>(crate::limiter::custom::probe(&mut con, limiter, &key).await)
        });
        let probe = probe.phase(|| format!("connecting to probe custom limiter {limiter}"))??;
        out.push(limiter_row(limiter, &d, probe, None));
        anchor_seen(out.last_mut(), &d, &endpoint, &key, cluster_node);
    }
    Ok(out)
}

/// Where a window limiter's windows start, read from its probe key's expiry (see
/// [`crate::limiter::custom::anchor`]), added to its probe note; a warning when its manifest says
/// otherwise (window-edge measures the edge the manifest names). Not read on a user's cluster,
/// whose keys are on other nodes.
fn anchor_seen(
    probed: Option<&mut (LimiterRow, String)>,
    d: &crate::limiter::custom::CustomLimiter,
    endpoint: &crate::server::Endpoint,
    key: &str,
    cluster_node: bool,
) {
    use crate::limiter::custom::{anchor, Anchor, PROBE_WINDOW_MS};
    let Some((row, note)) = probed else { return };
    if !d.algorithm.has_windows() || cluster_node {
        return;
    }
    let pttl =
        (endpoint.connection().ok()).and_then(|mut c| anchor::longest_expiry(&mut c, key).ok());
    let now = crate::limiter::unix_ms();
    let Some(seen) = pttl
        .flatten()
        .and_then(|p| anchor::from_expiry(p, now, PROBE_WINDOW_MS))
    else {
        return;
    };
    // The probe's origin is its own start: an origin-anchored window opens with its first call.
    let declared = match d.anchor {
        Anchor::Origin => Anchor::FirstHit,
        a => a,
    };
    // A key named after an epoch window but given a whole window's expiry reads as a first hit:
    // the words say what was read, and the manifest's author decides.
    let read = match seen {
        Anchor::FirstHit => "a whole window left, as a window opened by its first check has",
        _ => "what is left of the epoch's window, as a window aligned to the epoch has",
    };
    note.push_str(&format!("; its key's expiry after the probe: {read}"));
    if seen != declared {
        let warning = format!(
            "custom limiter {}: its manifest says anchor = \"{}\", but its key's expiry after the probe \
             was {read}: if so, set anchor = \"{}\" in {} (window-edge measures the edge the \
             manifest names)",
            row.strategy,
            d.anchor.name(),
            seen.name(),
            d.manifest
        );
        eprintln!("ratelab: warning: {warning}");
        note.push_str(&format!("; WARNING: {warning}"));
    }
}
