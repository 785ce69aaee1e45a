//! scripts's survival matrix: per mode and event, a fresh server (and replica) built through the
//! session with the script cached and the library loaded, the event, what is left, and how the
//! first call goes.

use super::bucket::{bucket, bucket_script, libraries, load_scripts, script_exists};
use super::rows::{CustomSurvivalRow, Event, SurvivalRow, CUSTOM_SURVIVAL, SURVIVAL};
use super::Params;
use crate::experiments::limiters::PROCESS_INVOCATION;
use crate::experiments::{ExperimentError, Phase, PhaseError, Session};
use crate::limiter::{
    Attempt, Check, Decide, Decider, Invocation, LimitSpec, Limiter, LimiterError, Strategy,
};
use crate::load::ClientTimeouts;
use crate::server::{self, Deployment, Persistence, RedisServer, Topology, ADMIN_TIMEOUT};
use redis::{ErrorKind, ServerErrorKind};
use std::time::{Duration, Instant};

/// The one bucket every case checks (each case has servers of its own).
const KEY: &str = "ratelab:scripts:survival";

pub(super) fn run(
    s: &mut Session,
    p: &Params,
    rt: &tokio::runtime::Runtime,
) -> Result<(), ExperimentError> {
    let mut rows = SURVIVAL.create(&s.run.staging)?;
    let bar = s.progress((p.events.len() * p.survival_modes.len()) as u64);
    for &event in &p.events {
        for &mode in &p.survival_modes {
            let what = || format!("survival of {mode} after {}", event.name());
            rows.write(&case(s, p, rt, mode, event).phase(what)?)?;
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    custom_run(s, p, rt)
}

/// Every custom limiter, in its own invocation mode, through every event: a fresh server, one
/// decision (its fallback loads what it needs), the event, the first call after it. A limiter
/// process is set up with one server (with Sentinels, for `promoted`), so it goes through every
/// event but the one that sends its call to a replica.
fn custom_run(
    s: &mut Session,
    p: &Params,
    rt: &tokio::runtime::Runtime,
) -> Result<(), ExperimentError> {
    if s.ctx.limiters.is_empty() {
        return Ok(());
    }
    let mut rows = CUSTOM_SURVIVAL.create(&s.run.staging)?;
    for strategy in s.ctx.limiters.clone() {
        let process = strategy.is_process();
        // A process follows a promotion through Sentinels, as its library would; it cannot be
        // pointed at a replica.
        let (events, moved): (Vec<Event>, Vec<Event>) =
            (p.events.iter()).partition(|&&e| !(process && e == Event::Replica));
        for event in events {
            let what = || {
                format!(
                    "survival of custom limiter {strategy} after {}",
                    event.name()
                )
            };
            let row = match process {
                true => process_survival(s, p.limit(), rt, strategy, event),
                false => custom_case(s, p, rt, strategy, event),
            };
            if let Err(PhaseError::Limiter(LimiterError::NoClientFor { why, .. })) = &row {
                s.note(format!(
                    "survival: {strategy} not asked after {}: {why}",
                    event.name()
                ));
                continue;
            }
            rows.write(&row.phase(what)?)?;
        }
        if !moved.is_empty() {
            let names: Vec<String> = moved.iter().map(|e| e.name()).collect();
            s.note(format!(
                "survival: {strategy} is a limiter process set up with the primary's URL; it was not \
                 asked after {} (the call moves to a replica it does not know)",
                names.join(", ")
            ));
        }
    }
    Ok(())
}

/// How long a limiter process's library is given to decide again by itself after an event.
pub(super) const RECOVERY_WAIT: Duration = Duration::from_secs(10);

/// A limiter process through one event: its adapter set up with a fresh primary, one decision,
/// the event, its first check after it and, when that failed, how long its library took to decide
/// again on its own (reconnecting, reloading its script).
/// libraries runs the seeds' own adapters through it too.
pub(crate) fn process_survival(
    s: &Session,
    limit: LimitSpec,
    rt: &tokio::runtime::Runtime,
    strategy: Strategy,
    event: Event,
) -> Result<CustomSurvivalRow, PhaseError> {
    if event == Event::Promoted {
        return promoted_by_sentinel(s, limit, rt, strategy);
    }
    let (mut primary, _) = servers(s, event)?;
    let reach = s.ctx.timeouts.reach(&primary.url());
    let decider = Decider::reaching(strategy, limit, Invocation::default(), &reach)?;
    warm_up(rt, &decider, strategy)?;
    let (_, called_name) = apply(event, &mut primary, None)?;
    let ended = Instant::now();
    first_after(rt, &decider, strategy, event, called_name, ended)
}

/// One decision on a fresh primary, before the event: a limiter that cannot decide there
/// measures nothing after it.
fn warm_up(
    rt: &tokio::runtime::Runtime,
    decider: &Decider,
    strategy: Strategy,
) -> Result<(), PhaseError> {
    match rt.block_on(ask(decider))?.1.outcome {
        Ok(_) => Ok(()),
        Err(e) => Err(PhaseError::Invalid(format!(
            "{strategy} fails on a fresh primary: {e}"
        ))),
    }
}

/// A limiter process's library through a promotion it must follow by itself: a primary, its
/// replica and three Sentinels; the adapter is told the Sentinels (its library's Sentinel client,
/// or it is refused), one decision, SENTINEL FAILOVER, and its first check once the Sentinels name
/// the replica and the old primary is gone.
fn promoted_by_sentinel(
    s: &Session,
    limit: LimitSpec,
    rt: &tokio::runtime::Runtime,
    strategy: Strategy,
) -> Result<CustomSurvivalRow, PhaseError> {
    let topology = Topology::Sentinel {
        replicas: 1,
        sentinels: 3,
        quorum: 2,
        down_after: SENTINEL_DOWN_AFTER,
        failover_timeout: SENTINEL_FAILOVER_TIMEOUT,
    };
    let Deployment::Sentinel(mut watched) = s.build_with(&topology, |_| {})? else {
        return Err(PhaseError::Invalid(format!(
            "{} built as something else",
            topology.describe()
        )));
    };
    let reach = s.reach_through_sentinels(&watched);
    let decider = Decider::reaching(strategy, limit, Invocation::default(), &reach)?;
    warm_up(rt, &decider, strategy)?;
    let replica = &watched.set.replicas[0];
    server::wait_caught_up(&watched.set.primary, replica, ADMIN_TIMEOUT)?;
    let asked = watched.sentinels.failover()?;
    while watched.sentinels.primary_port().ok() != Some(replica.port()) {
        if asked.elapsed() > SENTINEL_FAILOVER_TIMEOUT {
            return Err(PhaseError::Invalid(
                "the Sentinels never named the replica after SENTINEL FAILOVER".into(),
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // Sentinel demotes the old primary only at a later poll (seconds): gone, it leaves one server
    // to decide on, so a check that decides went to the promoted replica.
    watched.set.primary.kill()?;
    let ended = Instant::now();
    first_after(
        rt,
        &decider,
        strategy,
        Event::Promoted,
        "promoted replica",
        ended,
    )
}

/// A Sentinel-watched primary is down for Sentinel after this long (a planned failover does not
/// wait for it).
const SENTINEL_DOWN_AFTER: Duration = Duration::from_millis(1000);
/// How long a failover may take.
const SENTINEL_FAILOVER_TIMEOUT: Duration = Duration::from_secs(10);

/// The first check after an event that ended at `ended` and, when it failed, how long the library
/// took to decide again on its own: the row.
fn first_after(
    rt: &tokio::runtime::Runtime,
    decider: &Decider,
    strategy: Strategy,
    event: Event,
    called_name: &'static str,
    ended: Instant,
) -> Result<CustomSurvivalRow, PhaseError> {
    let (first_call_us, attempt) = rt.block_on(ask(decider))?;
    let recovered_ms = match attempt.outcome.is_ok() {
        true => None,
        false => rt.block_on(recovery(decider, ended))?,
    };
    let first = FirstCall {
        called: called_name,
        us: first_call_us,
        attempt,
    };
    Ok(first.row(strategy, PROCESS_INVOCATION, event, recovered_ms))
}

/// The first call after an event: where it went, how long it took, what it got.
struct FirstCall {
    called: &'static str,
    us: f64,
    attempt: Attempt,
}

impl FirstCall {
    /// Its row in survival_custom.csv (a process's attempt never reports NOSCRIPT: its library
    /// handles that out of sight).
    fn row(
        &self,
        strategy: Strategy,
        mode: &str,
        event: Event,
        recovered_ms: Option<f64>,
    ) -> CustomSurvivalRow {
        let (first_outcome, error) = outcome(&self.attempt);
        CustomSurvivalRow {
            strategy,
            mode: mode.to_string(),
            event,
            called: self.called.to_string(),
            first_outcome: first_outcome.to_string(),
            error,
            ok: u8::from(self.attempt.outcome.is_ok()),
            noscript: u8::from(self.attempt.noscript),
            round_trips: self.attempt.round_trips,
            first_call_us: self.us,
            recovered_ms,
            decided_after_ms: match self.attempt.outcome.is_ok() {
                true => Some(self.us / 1000.0),
                false => recovered_ms,
            },
        }
    }
}

/// One check through a limiter process, timed (µs); the adapter itself failing stops the run.
async fn ask(decider: &Decider) -> Result<(f64, Attempt), LimiterError> {
    let start = Instant::now();
    let attempt = decider.decide(None, Check::one(KEY)).await;
    if let Err(e @ LimiterError::Process { .. }) = attempt.outcome {
        return Err(e);
    }
    Ok((start.elapsed().as_secs_f64() * 1e6, attempt))
}

/// ms from `since` to the first check that decides, asking every 50 ms, up to [`RECOVERY_WAIT`].
async fn recovery(decider: &Decider, since: Instant) -> Result<Option<f64>, LimiterError> {
    while since.elapsed() < RECOVERY_WAIT {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if ask(decider).await?.1.outcome.is_ok() {
            return Ok(Some(since.elapsed().as_secs_f64() * 1e3));
        }
    }
    Ok(None)
}

fn custom_case(
    s: &Session,
    p: &Params,
    rt: &tokio::runtime::Runtime,
    strategy: Strategy,
    event: Event,
) -> Result<CustomSurvivalRow, PhaseError> {
    let ctx = s.ctx;
    let (mut primary, replica) = servers(s, event)?;
    let limiter = Limiter::new(strategy, p.limit());
    // A mode without a fallback loads its script once at start-up, as its library does.
    rt.block_on(async {
        let client = crate::server::endpoint::client(&primary.url())?;
        let mut con = client.get_multiplexed_async_connection().await?;
        crate::limiter::custom::initialise(&mut con, strategy).await
    })?;
    let warm = rt.block_on(first_call(&primary.url(), &limiter, ctx.timeouts))?;
    if let Err(e) = warm.1.outcome {
        return Err(PhaseError::Invalid(format!(
            "{strategy} fails on a fresh primary: {e}"
        )));
    }
    if let Some(replica) = &replica {
        server::wait_caught_up(&primary, replica, ADMIN_TIMEOUT)?;
    }
    let (called, called_name) = apply(event, &mut primary, replica.as_ref())?;
    let (first_call_us, attempt) =
        rt.block_on(first_call(&called.url(), &limiter, ctx.timeouts))?;
    let first = FirstCall {
        called: called_name,
        us: first_call_us,
        attempt,
    };
    Ok(first.row(strategy, &limiter.invocation().to_string(), event, None))
}

/// A fresh primary persisting as `event` needs, and its replica if the event needs one.
fn servers(s: &Session, event: Event) -> Result<(RedisServer, Option<RedisServer>), PhaseError> {
    let topology = Topology::Replicated {
        replicas: usize::from(event.needs_replica()),
    };
    match s.build_with(&topology, |o| o.persistence = event.persistence())? {
        Deployment::Replicated(mut set) => Ok((set.primary, set.replicas.pop())),
        _ => Err(PhaseError::Invalid(format!(
            "{} built as something else",
            topology.describe()
        ))),
    }
}

impl Event {
    /// The name in parameters and CSVs.
    pub fn name(self) -> String {
        crate::record::csv_text(&self)
    }

    /// What the server must persist for the event to mean what it says.
    fn persistence(self) -> Persistence {
        match self {
            Event::RestartRdb => Persistence::Rdb,
            Event::RestartAof => Persistence::Aof,
            _ => Persistence::None,
        }
    }

    pub(crate) fn needs_replica(self) -> bool {
        matches!(self, Event::Replica | Event::Promoted)
    }
}

fn persistence_name(p: Persistence) -> &'static str {
    match p {
        Persistence::None => "none",
        Persistence::Rdb => "rdb",
        Persistence::Aof => "aof",
    }
}

/// SCRIPT EXISTS and FUNCTION LIST on one server at one moment.
struct Held {
    script: u8,
    libraries: u32,
}

fn held(server: &RedisServer, hash: &str) -> Result<Held, PhaseError> {
    let mut con = server.connection()?;
    Ok(Held {
        script: script_exists(&mut con, hash)?,
        libraries: libraries(&mut con)?,
    })
}

fn case(
    s: &Session,
    p: &Params,
    rt: &tokio::runtime::Runtime,
    mode: Invocation,
    event: Event,
) -> Result<SurvivalRow, PhaseError> {
    let ctx = s.ctx;
    // The replica is attached before anything is loaded: what reaches it is what replication carries.
    let (mut primary, replica) = servers(s, event)?;
    let limiter = bucket(p, mode)?;
    let (source, hash) = bucket_script(p);
    load_scripts(&mut primary.connection()?, source)?;
    let warm = rt.block_on(first_call(&primary.url(), &limiter, ctx.timeouts))?;
    if let Err(e) = warm.1.outcome {
        return Err(PhaseError::Invalid(format!(
            "{mode} fails on a fresh primary: {e}"
        )));
    }
    if let Some(replica) = &replica {
        server::wait_caught_up(&primary, replica, ADMIN_TIMEOUT)?;
    }
    let before = held(&primary, &hash)?;
    let (called, called_name) = apply(event, &mut primary, replica.as_ref())?;
    let after = held(called, &hash)?;
    let (first_call_us, attempt) =
        rt.block_on(first_call(&called.url(), &limiter, ctx.timeouts))?;
    let (first_outcome, error) = outcome(&attempt);
    Ok(SurvivalRow {
        mode,
        fallback: mode.fallback().to_string(),
        event,
        persistence: persistence_name(event.persistence()).to_string(),
        called: called_name.to_string(),
        script_exists_before: before.script,
        script_exists_after: after.script,
        libraries_before: before.libraries,
        libraries_after: after.libraries,
        first_outcome: first_outcome.to_string(),
        error,
        ok: u8::from(attempt.outcome.is_ok()),
        noscript: u8::from(attempt.noscript),
        round_trips: attempt.round_trips,
        first_call_us,
    })
}

/// Makes the event happen; returns the server the first call goes to, and what to call it.
fn apply<'a>(
    event: Event,
    primary: &'a mut RedisServer,
    replica: Option<&'a RedisServer>,
) -> Result<(&'a RedisServer, &'static str), PhaseError> {
    let flush = |container: &str, server: &RedisServer| -> Result<(), PhaseError> {
        (redis::cmd(container).arg("FLUSH")).query::<()>(&mut server.connection()?)?;
        Ok(())
    };
    match (event, replica) {
        (Event::RestartNoPersistence | Event::RestartRdb | Event::RestartAof, _) => {
            primary.restart_keeping_data()?;
            Ok((primary, "primary"))
        }
        (Event::Replica, Some(replica)) => Ok((replica, "replica")),
        (Event::Promoted, Some(replica)) => {
            replica.promote()?;
            Ok((replica, "promoted replica"))
        }
        (Event::ScriptFlush, _) => flush("SCRIPT", primary).map(|()| (&*primary, "primary")),
        (Event::FunctionFlush, _) => flush("FUNCTION", primary).map(|()| (&*primary, "primary")),
        (Event::Replica | Event::Promoted, None) => Err(PhaseError::Invalid(format!(
            "{} needs a replica",
            event.name()
        ))),
    }
}

/// One check on a connection opened beforehand (so connecting is not timed): µs and attempt.
async fn first_call(
    url: &str,
    limiter: &Limiter,
    timeouts: ClientTimeouts,
) -> Result<(f64, Attempt), redis::RedisError> {
    let client = crate::server::endpoint::client(url)?;
    let mut con = client
        .get_multiplexed_async_connection_with_config(&timeouts.config())
        .await?;
    let start = Instant::now();
    let attempt = limiter.attempt(&mut con, KEY).await;
    Ok((start.elapsed().as_secs_f64() * 1e6, attempt))
}

/// ok, noscript, readonly or error, and the error's text.
fn outcome(attempt: &Attempt) -> (&'static str, String) {
    let e = match &attempt.outcome {
        Ok(_) => return ("ok", String::new()),
        Err(e) => e,
    };
    let kind = match e {
        LimiterError::Redis(r) if r.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
            "noscript"
        }
        LimiterError::Redis(r) if r.kind() == ErrorKind::Server(ServerErrorKind::ReadOnly) => {
            "readonly"
        }
        _ => "error",
    };
    (kind, e.to_string())
}
