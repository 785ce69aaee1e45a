//! One Sentinel failover trial (sentinel-planned, sentinel-crash): a primary, one replica and
//! three Sentinels built through the session (`Topology::Sentinel`), steady open-loop load over
//! K keys from clients that find the primary through the Sentinels (finder.rs), and at a planned
//! phase of a window the failover's start: `SENTINEL FAILOVER` (seed 003's drill) or SIGKILL of
//! the primary. The harness moves no client: each moves when a failed check (an error, a READONLY
//! refusal) makes it ask the Sentinels. The drill runs until every client has moved, then
//! `post_windows` whole windows more, so the count after the switch covers the whole failover.

use super::finder::{Finder, Lease};
use super::rows::Variant;
use super::tally::{Answer, Check, ClientReading};
use super::trial::{self, Case, Clock, Measured, CONNECTIONS, LEAD, PROMOTE_TIMEOUT};
use super::Params;
use crate::experiments::{PhaseError, Session};
use crate::limiter::process::Reach;
use crate::limiter::Check as LimiterCheck;
use crate::limiter::{Decide, Decider, Invocation, LimitSpec, Limiter, LimiterError, Strategy};
use crate::load::drill::{Arrival, Drill, Ran, Record, Schedule, Stopper, When};
use crate::server::{Deployment, Persistence, Topology, Watched};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// The topology a Sentinel case runs on.
fn topology(p: &Params, case: Case) -> Topology {
    Topology::Sentinel {
        replicas: 1,
        sentinels: 3,
        quorum: p.quorum,
        down_after: Duration::from_millis(case.down_after_ms),
        failover_timeout: Duration::from_millis(p.failover_timeout_ms),
    }
}

/// Runs one Sentinel case on servers and Sentinels of its own, built through the session.
pub fn run(
    s: &Session,
    p: &Params,
    case: Case,
    rt: &tokio::runtime::Runtime,
) -> Result<Measured, PhaseError> {
    // Racing: the killed primary comes back with every write it acknowledged (its AOF).
    let persistence = match case.variant {
        Variant::SentinelRacing => Persistence::Aof,
        _ => Persistence::None,
    };
    let built = s.build_with(&topology(p, case), |o| o.persistence = persistence);
    let built = built.map_err(|e| PhaseError::Invalid(format!("building the Sentinels: {e}")))?;
    let Deployment::Sentinel(mut watched) = built else {
        return Err(PhaseError::Invalid(
            "a Sentinel topology built something else".into(),
        ));
    };
    // Functions travel with the replication stream: the replica has the library when promoted.
    (redis::cmd("FUNCTION").arg("LOAD").arg("REPLACE"))
        .arg(crate::limiter::library())
        .query::<String>(&mut watched.set.primary.connection()?)
        .map_err(|e| PhaseError::Invalid(format!("FUNCTION LOAD: {e}")))?;
    let clients = match case.strategy.is_process() {
        true => Clients::library(
            s.reach_through_sentinels(&watched),
            trial::limit(p),
            case.strategy,
        )?,
        false => Clients::Finders {
            limiter: Limiter::with_invocation(case.strategy, trial::limit(p), case.invocation)
                .map_err(|e| PhaseError::Invalid(e.to_string()))?,
            finders: Vec::new(),
        },
    };
    let seed = s.ctx.seed ^ u64::from(case.trial).wrapping_mul(0x9e37_79b9);
    rt.block_on(timeline(s, p, case, &mut watched, clients, seed))
}

/// Who sends the checks.
enum Clients {
    /// ratelab's clients, one per connection (a key always on the same one), each finding the
    /// primary through the Sentinels (finder.rs).
    Finders {
        limiter: Limiter,
        finders: Vec<Finder>,
    },
    /// A limiter process, whose library's own Sentinel client finds the primary: which server
    /// decided a check is not seen, only that it decided.
    Library(Library),
}

/// A limiter process as failover's client.
struct Library {
    decider: Decider,
    /// When the last decision came.
    last_decided: Cell<Option<Instant>>,
    /// Why the adapter broke (exited, wrote garbage, fell silent): the trial fails.
    broken: RefCell<Option<String>>,
}

impl Clients {
    /// A limiter process told the Sentinels; an adapter with no Sentinel client is refused
    /// (`LimiterError::NoClientFor`).
    fn library(reach: Reach, limit: LimitSpec, strategy: Strategy) -> Result<Self, PhaseError> {
        Ok(Clients::Library(Library {
            decider: Decider::reaching(strategy, limit, Invocation::default(), &reach)?,
            last_decided: Cell::new(None),
            broken: RefCell::new(None),
        }))
    }

    /// Whether every client has moved to `new_port` (a library: decided a check after the
    /// promotion at `promoted`, which only the promoted replica could decide after a crash).
    fn moved(&self, new_port: u16, promoted: Instant) -> bool {
        match self {
            Clients::Finders { finders, .. } => finders.iter().all(|f| f.port() == new_port),
            Clients::Library(l) => l.last_decided.get().is_some_and(|at| at >= promoted),
        }
    }
}

impl Library {
    /// A check through the limiter process: its library finds the primary by itself.
    async fn ask(&self, name: &str) -> Sent {
        let mut sent = Sent::new(0);
        match self
            .decider
            .decide(None, LimiterCheck::one(name))
            .await
            .outcome
        {
            Ok(d) => {
                sent.answer = Answer::of(d.allowed);
                self.last_decided.set(Some(Instant::now()));
            }
            Err(e @ LimiterError::Process { .. }) => {
                self.broken.borrow_mut().get_or_insert(e.to_string());
            }
            Err(e) => sent.readonly = e.to_string().contains("READONLY"),
        }
        sent
    }
}

/// The clients and the keys' names.
struct Load {
    clients: Clients,
    names: Vec<String>,
}

/// What one check returned, and where it went (0: a library's check, placed by `reading`).
pub(super) struct Sent {
    answer: Answer,
    noscript: bool,
    readonly: bool,
    port: u16,
}

impl Sent {
    fn new(port: u16) -> Sent {
        Sent {
            answer: Answer::Error,
            noscript: false,
            readonly: false,
            port,
        }
    }
}

impl Load {
    async fn check(self: Rc<Self>, key: u32) -> Sent {
        let name = &self.names[key as usize];
        let (limiter, finders) = match &self.clients {
            Clients::Finders { limiter, finders } => (limiter, finders),
            Clients::Library(library) => return library.ask(name).await,
        };
        let finder = &finders[key as usize % CONNECTIONS];
        let lease = finder.lease();
        let Lease { con, port, .. } = &lease;
        let mut sent = Sent::new(*port);
        let Some(mut con) = con.clone() else {
            finder.failed(&lease).await;
            return sent;
        };
        let attempt = limiter.attempt(&mut con, name).await;
        sent.noscript = attempt.noscript;
        match attempt.outcome {
            Ok(d) => sent.answer = Answer::of(d.allowed),
            Err(e) => {
                sent.readonly = e.to_string().contains("READONLY");
                finder.failed(&lease).await;
            }
        }
        sent
    }

    /// One check per client on a key of its own (connect, cache the script).
    async fn warm_up(&self) -> Result<(), PhaseError> {
        const KEY: &str = "ratelab:failover:warm";
        let (limiter, finders) = match &self.clients {
            Clients::Finders { limiter, finders } => (limiter, finders),
            Clients::Library(library) => {
                let outcome = library
                    .decider
                    .decide(None, LimiterCheck::one(KEY))
                    .await
                    .outcome;
                return (outcome.map(|_| ()))
                    .map_err(|e| PhaseError::Invalid(format!("warm-up check: {e}")));
            }
        };
        for finder in finders {
            let Some(mut con) = finder.lease().con else {
                return Err(PhaseError::Invalid("a client found no primary".into()));
            };
            let attempt = limiter.attempt(&mut con, KEY).await;
            (attempt.outcome).map_err(|e| PhaseError::Invalid(format!("warm-up check: {e}")))?;
        }
        Ok(())
    }
}

/// The failover's instants, monotonic.
#[derive(Default)]
struct Notes {
    started: Option<Instant>,
    promoted: Option<Instant>,
    moved: Option<Instant>,
    replica_keys: u64,
    post_windows: u64,
    old_primary_role: String,
}

/// The trial as a drill: the keys' checks on the open-loop schedule, the failover as the plan's
/// one fault (which also ends the drill once the count after the last move is complete).
async fn timeline(
    s: &Session<'_>,
    p: &Params,
    case: Case,
    watched: &mut Watched,
    mut clients: Clients,
    seed: u64,
) -> Result<Measured, PhaseError> {
    if let Clients::Finders { finders, .. } = &mut clients {
        let ports = watched.sentinels.ports();
        for _ in 0..CONNECTIONS {
            let finder = Finder::connect(&ports, s.ctx.timeouts.config()).await;
            finders.push(finder.map_err(|e| {
                PhaseError::Invalid(format!(
                    "a client asking the Sentinels for the primary: {e}"
                ))
            })?);
        }
    }
    let names = (0..case.keys)
        .map(|k| format!("ratelab:failover:k{k}"))
        .collect();
    let load = Rc::new(Load { clients, names });
    load.warm_up()
        .await
        .map_err(|e| PhaseError::Invalid(format!("warm-up: {e}")))?;
    let (old_port, new_port) = (watched.set.primary.port(), watched.set.replicas[0].port());
    let replica = crate::server::endpoint::client(&watched.set.replicas[0].url())?;
    let clock = Clock::now();
    let start = Instant::now() + LEAD;
    let (switch_ms, _) = trial::switch_and_end(p, case, clock.unix(start));
    let span_ms = switch_ms
        + deadline(p, case).as_secs_f64() * 1e3
        + ((p.post_windows + 2) * p.window_ms) as f64;
    let arrivals = (trial::schedule(p, case, seed, span_ms).into_iter())
        .map(|(t_ms, key)| Arrival {
            at_ns: (t_ms * 1e6) as u64,
            tag: u64::from(key),
        })
        .collect();
    let drill = Drill::new(start, Schedule::Open(arrivals));
    let failover = Failover {
        p,
        case,
        load: Rc::clone(&load),
        replica,
        config: s.ctx.timeouts.config(),
        new_port,
        stopper: drill.stopper(),
        clock,
        notes: RefCell::default(),
    };
    let checking = Rc::clone(&load);
    let ran = drill
        .fault(
            When::At(Duration::from_secs_f64(switch_ms / 1e3)),
            "fail over",
            || failover.run(watched),
        )
        .run(move |call| Rc::clone(&checking).check(call.tag as u32))
        .await?;
    let notes = failover.notes.into_inner();
    reading(case, &ran, &load, notes, (old_port, new_port), clock)
}

/// How long a failover may take before the trial fails: down-after, a failover's timeout, and
/// the promotion's own.
fn deadline(p: &Params, case: Case) -> Duration {
    Duration::from_millis(case.down_after_ms + p.failover_timeout_ms) + PROMOTE_TIMEOUT
}

/// The plan's fault and what it needs.
struct Failover<'p> {
    p: &'p Params,
    case: Case,
    load: Rc<Load>,
    replica: redis::Client,
    config: redis::AsyncConnectionConfig,
    new_port: u16,
    stopper: Stopper,
    clock: Clock,
    notes: RefCell<Notes>,
}

impl Failover<'_> {
    /// Starts the failover, waits for the promotion and for every client's move, then for
    /// `post_windows` whole windows after the last move's window, and stops the load.
    async fn run(&self, watched: &mut Watched) -> Result<(), PhaseError> {
        let started = match self.case.variant {
            Variant::SentinelCrash | Variant::SentinelRacing => {
                let at = Instant::now();
                watched.set.primary.kill()?;
                at
            }
            _ => (watched.sentinels.failover())
                .map_err(|e| PhaseError::Invalid(format!("SENTINEL FAILOVER: {e}")))?,
        };
        self.notes.borrow_mut().started = Some(started);
        let until = started + deadline(self.p, self.case);
        // Sentinel closes the promoted replica's normal connections (CLIENT KILL TYPE normal,
        // so clients reconnect): each poll on a connection of its own.
        while self.replica_role().await.as_deref() != Some("master") {
            self.give_up_after(until, watched, "the replica was not promoted")?;
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let promoted = Instant::now();
        if self.case.variant == Variant::SentinelRacing {
            watched.set.primary.start_again()?;
        }
        let mut replica = self
            .replica
            .get_multiplexed_async_connection_with_config(&self.config)
            .await?;
        let replica_keys: u64 = redis::cmd("DBSIZE").query_async(&mut replica).await?;
        while !self.load.clients.moved(self.new_port, promoted) {
            // A library that never decides again is what its trial measures (clients.csv shows
            // it); a finder of ratelab's own that never moves is a broken drill.
            if Instant::now() > until && matches!(self.load.clients, Clients::Library(_)) {
                break;
            }
            self.give_up_after(until, watched, "a client never found the promoted replica")?;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let moved = Instant::now();
        let w = self.p.window_ms as f64;
        let switch_window = (self.clock.unix(started) / w).floor();
        let moved_window = (self.clock.unix(moved) / w).floor();
        let post_windows = (moved_window - switch_window) as u64 + self.p.post_windows;
        let end_unix = (switch_window + post_windows as f64) * w + (0.1 * w).max(100.0);
        let end = started
            + Duration::from_secs_f64(((end_unix - self.clock.unix(started)) / 1e3).max(0.0));
        tokio::time::sleep_until(end.into()).await;
        self.stopper.stop();
        let old_primary_role = self.settled_old_primary_role(watched, promoted).await;
        let mut n = self.notes.borrow_mut();
        n.old_primary_role = old_primary_role;
        (n.promoted, n.moved) = (Some(promoted), Some(moved));
        (n.replica_keys, n.post_windows) = (replica_keys, post_windows);
        Ok(())
    }

    /// The old primary's role once Sentinel has had its time to demote it. Sentinel sees the
    /// restarted primary report itself a master at an INFO poll (every 10 s) and demotes it at the
    /// first poll four publish periods (8 s) later: two polls, 20 s at most, bounded here with a
    /// margin from the restart. The racing trial may end sooner, so it waits for the demotion.
    async fn settled_old_primary_role(&self, watched: &Watched, restarted: Instant) -> String {
        const DEMOTION_BOUND: Duration = Duration::from_secs(25);
        loop {
            let role = self.old_primary_role(watched).await;
            let waiting = self.case.variant == Variant::SentinelRacing && role == "master";
            if !waiting || restarted.elapsed() > DEMOTION_BOUND {
                return role;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The old primary's role (INFO replication), or `unreachable`.
    async fn old_primary_role(&self, watched: &Watched) -> String {
        let role = async {
            let client = crate::server::endpoint::client(&watched.set.primary.url()).ok()?;
            let connecting = client.get_multiplexed_async_connection_with_config(&self.config);
            trial::info_field(&mut connecting.await.ok()?, "role")
                .await
                .ok()
        };
        role.await.unwrap_or_else(|| "unreachable".into())
    }

    /// The replica's role, or None when it could not be read (its connections are closed as it
    /// is promoted).
    async fn replica_role(&self) -> Option<String> {
        let mut con = (self.replica)
            .get_multiplexed_async_connection_with_config(&self.config)
            .await
            .ok()?;
        trial::info_field(&mut con, "role").await.ok()
    }

    /// Fails the trial, with the Sentinels' logs, once `until` has passed.
    fn give_up_after(
        &self,
        until: Instant,
        watched: &Watched,
        what: &str,
    ) -> Result<(), PhaseError> {
        match Instant::now() > until {
            true => Err(PhaseError::Invalid(format!(
                "{what} within {:?}; the Sentinels' logs:\n{}",
                deadline(self.p, self.case),
                watched.sentinels.log_tails()
            ))),
            false => Ok(()),
        }
    }
}

/// The trial's reading of the drill: every check on the Unix clock (after the switch: sent to
/// the promoted replica), what the old primary admitted after the promotion, each client's move.
fn reading(
    case: Case,
    ran: &Ran<Sent>,
    load: &Load,
    n: Notes,
    (old_port, new_port): (u16, u16),
    clock: Clock,
) -> Result<Measured, PhaseError> {
    let (Some(started), Some(promoted), Some(moved)) = (n.started, n.promoted, n.moved) else {
        return Err(PhaseError::Invalid("the failover never completed".into()));
    };
    let place = Placement::of(load, ran, promoted, (old_port, new_port))?;
    let port = |r: &Record<Sent>| place.port(r);
    let start_unix = clock.unix(ran.origin);
    let unix = |ns: u64| start_unix + ns as f64 / 1e6;
    let mut checks: Vec<Check> = (ran.records.iter())
        .map(|r| Check {
            key: r.tag as u32,
            sent_unix_ms: unix(r.start_ns),
            answer: r.out.answer,
            noscript: r.out.noscript,
            after_switch: port(r) == new_port,
        })
        .collect();
    checks.sort_by(|a, b| a.sent_unix_ms.total_cmp(&b.sent_unix_ms));
    // The split: the replica has nothing the old primary took after its promotion, or (killed
    // and restarted) after the kill.
    let split_unix = match case.variant {
        Variant::SentinelRacing => clock.unix(started),
        _ => clock.unix(promoted),
    };
    let mut lost_admits = vec![0u64; case.keys as usize];
    let lost =
        (ran.records.iter()).filter(|r| port(r) == old_port && unix(r.start_ns) >= split_unix);
    for r in lost.filter(|r| r.out.answer == Answer::Admitted) {
        if let Some(count) = lost_admits.get_mut(r.tag as usize) {
            *count += 1;
        }
    }
    let first_call = (checks.iter().find(|c| c.after_switch)).map_or("none", |c| match c {
        c if c.noscript => "noscript",
        c if c.answer == Answer::Error => "error",
        _ => "ok",
    });
    let ms = |a: Instant, b: Instant| b.saturating_duration_since(a).as_secs_f64() * 1e3;
    let since = (started, promoted);
    let clients = clients_reading(load, ran, since, new_port, place.mover)?;
    // The last of the clients that moved (a library that never decided again shows in clients.csv).
    let last_move = (clients.iter().filter_map(|c| c.rediscovered_ms)).fold(0.0, f64::max);
    debug_assert!(last_move <= ms(started, moved) + 1.0);
    Ok(Measured {
        checks,
        switch_unix_ms: clock.unix(started),
        promote_ms: ms(started, promoted),
        switch_after_promote_ms: last_move,
        lag_ms: 0.0,
        lost_repl_bytes: -1,
        lost_admits,
        replica_keys: n.replica_keys,
        old_primary_role: n.old_primary_role,
        first_call: first_call.to_string(),
        send_lag_max_ms: (ran.records.iter())
            .map(|r| r.start_ns.saturating_sub(r.intended_ns) as f64 / 1e6)
            .fold(0.0, f64::max),
        post_windows: n.post_windows,
        clients,
    })
}

/// Where each check went: a finder's check to the port it was sent to. A library's decision that
/// came after the promotion was the promoted replica's: between the crash and the promotion no
/// server could decide, so later replies are not the old primary's (a library may hold a check
/// through the failover and send it again). Its failed checks went to the promoted replica once
/// it had decided there; a library that never decided after the promotion stayed on the old one.
struct Placement {
    mover: Mover,
    promoted_ns: i64,
    old_port: u16,
    new_port: u16,
}

/// Who moves the checks to the promoted replica.
#[derive(Clone, Copy)]
enum Mover {
    /// ratelab's finders: each check carries the port it was sent to.
    Finders,
    /// A library's own client: when it first decided after the promotion (ns on the drill's
    /// clock), None if it never did, which the trial records rather than fails on.
    Library(Option<u64>),
}

impl Placement {
    /// A library's adapter that broke fails the trial.
    fn of(
        load: &Load,
        ran: &Ran<Sent>,
        promoted: Instant,
        ports: (u16, u16),
    ) -> Result<Self, PhaseError> {
        let promoted_ns = ran.ns(promoted);
        let mover = match &load.clients {
            Clients::Finders { .. } => Mover::Finders,
            Clients::Library(library) => {
                if let Some(why) = library.broken.borrow().clone() {
                    return Err(PhaseError::Invalid(why));
                }
                Mover::Library(
                    (ran.records.iter())
                        .filter(|r| r.end_ns as i64 >= promoted_ns && r.out.answer != Answer::Error)
                        .map(|r| r.end_ns)
                        .min(),
                )
            }
        };
        let (old_port, new_port) = ports;
        Ok(Placement {
            mover,
            promoted_ns,
            old_port,
            new_port,
        })
    }

    fn port(&self, r: &Record<Sent>) -> u16 {
        let promoted = r.end_ns as i64 >= self.promoted_ns;
        match (self.mover, r.out.answer) {
            (Mover::Finders, _) => r.out.port,
            (Mover::Library(_), Answer::Admitted | Answer::Denied) if promoted => self.new_port,
            (Mover::Library(Some(moved_ns)), Answer::Error) if r.start_ns >= moved_ns => {
                self.new_port
            }
            (Mover::Library(_), _) => self.old_port,
        }
    }
}

/// Each client's move: a finder's to `new_port`, a library's first decision after the promotion.
fn clients_reading(
    load: &Load,
    ran: &Ran<Sent>,
    since: (Instant, Instant),
    new_port: u16,
    mover: Mover,
) -> Result<Vec<ClientReading>, PhaseError> {
    match (&load.clients, mover) {
        (Clients::Finders { finders, .. }, _) => (finders.iter().enumerate())
            .map(|(c, finder)| finder_reading(c, finder, ran, since, new_port))
            .collect(),
        (Clients::Library(_), Mover::Library(moved_ns)) => {
            let library = Client {
                index: 0,
                of: 1,
                asks: 0,
                arrived_ns: moved_ns.map(|ns| ns as i64),
            };
            Ok(vec![client_reading(library, ran, since)])
        }
        (Clients::Library(_), Mover::Finders) => Err(PhaseError::Invalid(
            "a library's checks were placed as a finder's".into(),
        )),
    }
}

/// Finder `c`'s move to `new_port`, read as a client's.
fn finder_reading(
    c: usize,
    finder: &Finder,
    ran: &Ran<Sent>,
    since: (Instant, Instant),
    new_port: u16,
) -> Result<ClientReading, PhaseError> {
    let (asks, moves) = finder.history();
    let Some(arrived) = moves.iter().find(|m| m.to_port == new_port) else {
        return Err(PhaseError::Invalid(format!(
            "client {c} never moved to the promoted replica"
        )));
    };
    let arrived_ns = Some(ran.ns(arrived.at));
    Ok(client_reading(
        Client {
            index: c,
            of: CONNECTIONS,
            asks,
            arrived_ns,
        },
        ran,
        since,
    ))
}

/// One client of `of` (its keys are those with key % of == index), the Sentinel asks it made and
/// when it arrived on the promoted replica (ns on the drill's clock; None: it never did).
struct Client {
    index: usize,
    of: usize,
    asks: u64,
    arrived_ns: Option<i64>,
}

/// What `client`'s checks met from the failover's start (`since.0`, promoted at `since.1`) until
/// it arrived on the promoted replica, or until the run's end when it never did.
fn client_reading(
    client: Client,
    ran: &Ran<Sent>,
    (started, promoted): (Instant, Instant),
) -> ClientReading {
    let from_ns = ran.ns(started);
    let mine: Vec<_> = (ran.records.iter())
        .filter(|r| r.tag as usize % client.of == client.index && r.start_ns as i64 >= from_ns)
        .collect();
    let between: Vec<_> = (mine.iter())
        .filter(|r| {
            client
                .arrived_ns
                .is_none_or(|to_ns| (r.start_ns as i64) < to_ns)
        })
        .collect();
    let failed = between.iter().filter(|r| r.out.answer == Answer::Error);
    let first_failed = mine.iter().find(|r| r.out.answer == Answer::Error);
    // With no decision after the first failure, its keys had no limiter to the run's last check.
    let unavailable_ms = first_failed.map_or(0.0, |f| {
        let back = (mine.iter()).find(|r| r.start_ns > f.start_ns && r.out.answer != Answer::Error);
        let end_ns = back.map_or(
            mine.iter().map(|r| r.end_ns).max().unwrap_or(f.start_ns),
            |b| b.start_ns,
        );
        end_ns.saturating_sub(f.start_ns) as f64 / 1e6
    });
    let ms = |a: Instant, b: Instant| b.saturating_duration_since(a).as_secs_f64() * 1e3;
    ClientReading {
        client: client.index as u64,
        promoted_ms: ms(started, promoted),
        rediscovered_ms: client
            .arrived_ns
            .map(|to_ns| (to_ns - from_ns).max(0) as f64 / 1e6),
        asks: client.asks,
        checks_between: between.len() as u64,
        failed: failed.clone().count() as u64,
        readonly: failed.filter(|r| r.out.readonly).count() as u64,
        unavailable_ms,
    }
}
