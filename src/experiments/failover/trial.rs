//! One failover trial against real servers: a primary, a replica that replicates through a
//! fault proxy (so the link can be cut), steady open-loop load over K keys, the promotion at a
//! planned phase of a window, and every client moved to the promoted replica at one instant.

use super::rows::Variant;
use super::tally::{Answer, Check};
use super::Params;
use crate::context::Ctx;
use crate::experiments::{PhaseError, Session};
use crate::fault::{Direction, Fault, Proxy, ProxyThread};
use crate::limiter::{Invocation, LimitSpec, Limiter, Strategy};
use crate::load::drill::{Arrival, Drill, Ran, Schedule, When};
use crate::load::rng::SplitMix64;
use crate::server::{Persistence, RedisServer, ServerError};
use redis::aio::MultiplexedConnection;
use std::cell::RefCell;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Connections per side; a key always uses the same one (`key % CONNECTIONS`).
pub(super) const CONNECTIONS: usize = 8;
/// Random stream of the keys' phases.
const PHASE_STREAM: u64 = 0xfa11_0ce5;
/// Time between the warm-up and the first scheduled check.
pub(super) const LEAD: Duration = Duration::from_millis(50);
/// How long a promotion may take before the trial fails.
pub(super) const PROMOTE_TIMEOUT: Duration = Duration::from_secs(10);

/// One cell of the matrix.
#[derive(Debug, Clone, Copy)]
pub struct Case {
    pub variant: Variant,
    pub strategy: Strategy,
    pub invocation: Invocation,
    pub keys: u64,
    pub offered: f64,
    pub trial: u32,
    /// The Sentinels' down-after-milliseconds (0: no Sentinel).
    pub down_after_ms: u64,
}

/// What one trial measured.
pub struct Measured {
    pub checks: Vec<Check>,
    pub switch_unix_ms: f64,
    pub promote_ms: f64,
    pub switch_after_promote_ms: f64,
    pub lag_ms: f64,
    pub lost_repl_bytes: i64,
    /// Per key: checks admitted by the old primary after the cut (what the replica never got).
    pub lost_admits: Vec<u64>,
    pub replica_keys: u64,
    /// The old primary's role when the load stopped: master, slave or unreachable.
    pub old_primary_role: String,
    pub first_call: String,
    pub send_lag_max_ms: f64,
    /// Whole windows counted after the switch's (its own included): `post_windows`, and in the
    /// Sentinel variants as many more as the last client took to move.
    pub post_windows: u64,
    /// The Sentinel variants: each client's move (none in the others).
    pub clients: Vec<super::tally::ClientReading>,
}

/// The limit both strategies enforce: `burst` per window, the bucket refilling at that rate.
pub fn limit(p: &Params) -> LimitSpec {
    LimitSpec {
        capacity: p.burst,
        refill_per_sec: p.burst as f64 * 1000.0 / p.window_ms as f64,
        window_ms: p.window_ms,
        ..LimitSpec::default()
    }
}

fn unix_now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

/// The monotonic clock read against the Unix clock once, so every instant has a Unix time.
#[derive(Clone, Copy)]
pub(super) struct Clock {
    at: Instant,
    unix_ms: f64,
}

impl Clock {
    pub(super) fn now() -> Clock {
        Clock {
            at: Instant::now(),
            unix_ms: unix_now_ms(),
        }
    }
    pub(super) fn unix(&self, t: Instant) -> f64 {
        self.unix_ms + t.saturating_duration_since(self.at).as_secs_f64() * 1e3
    }
    fn instant(&self, unix_ms: f64) -> Instant {
        self.at + Duration::from_secs_f64(((unix_ms - self.unix_ms) / 1e3).max(0.0))
    }
}

/// Runs one case on servers of its own, built through the session: a primary and a replica that
/// reaches it through a fault proxy; `rt` runs the load and the timeline.
pub fn run(
    s: &Session,
    p: &Params,
    case: Case,
    rt: &tokio::runtime::Runtime,
) -> Result<Measured, PhaseError> {
    let seed = s.ctx.seed ^ u64::from(case.trial).wrapping_mul(0x9e37_79b9);
    let mut proxy = None;
    let set = s.build_replicated_via(1, |o| o.persistence = Persistence::None, &mut |primary| {
        prepare(primary)?;
        let upstream: SocketAddr = ([127, 0, 0, 1], primary.port()).into();
        let link = ProxyThread::start(upstream, seed)?;
        let port = link.proxy().addr().port();
        proxy = Some(link);
        Ok(port)
    })?;
    let link = proxy.ok_or_else(|| PhaseError::Invalid("no replica was started".into()))?;
    let limiter = Limiter::with_invocation(case.strategy, limit(p), case.invocation)
        .map_err(|e| PhaseError::Invalid(e.to_string()))?;
    let sides = Sides {
        primary: set.primary.url(),
        replica: set.replicas[0].url(),
        proxy: link.proxy(),
    };
    rt.block_on(timeline(s.ctx, p, case, &sides, limiter, seed))
}

/// The primary before its replica syncs: FUNCTION LOAD (functions travel with the data, scripts
/// do not), and a sync through disk: after a diskless one the primary holds the stream back until
/// the replica's next REPLCONF ACK, up to a second (see RedisServer::start_replica_via).
fn prepare(primary: &RedisServer) -> Result<(), ServerError> {
    let mut con = primary.connection()?;
    (redis::cmd("FUNCTION").arg("LOAD").arg("REPLACE"))
        .arg(crate::limiter::library())
        .query::<String>(&mut con)?;
    crate::server::admin::config_set(&mut con, "repl-diskless-sync", "no")?;
    Ok(())
}

struct Sides<'a> {
    primary: String,
    replica: String,
    proxy: &'a Proxy,
}

async fn connect(url: &str, ctx: &Ctx) -> Result<Vec<MultiplexedConnection>, PhaseError> {
    let client = crate::server::endpoint::client(url)?;
    let mut out = Vec::new();
    for _ in 0..CONNECTIONS {
        let cfg = ctx.timeouts.config();
        out.push(
            client
                .get_multiplexed_async_connection_with_config(&cfg)
                .await?,
        );
    }
    Ok(out)
}

pub(super) async fn info_field(
    con: &mut MultiplexedConnection,
    field: &str,
) -> Result<String, PhaseError> {
    let info: redis::InfoDict = redis::cmd("INFO")
        .arg("replication")
        .query_async(con)
        .await?;
    Ok(info.get::<String>(field).unwrap_or_default())
}

async fn offset(con: &mut MultiplexedConnection, field: &str) -> Result<i64, PhaseError> {
    let text = info_field(con, field).await?;
    text.parse()
        .map_err(|_| PhaseError::Invalid(format!("INFO replication {field} is `{text}`")))
}

/// The clients' side of the load: connections to both servers, and which one checks use.
struct Load {
    limiter: Limiter,
    old: Vec<MultiplexedConnection>,
    new: Vec<MultiplexedConnection>,
    switched: AtomicBool,
    names: Vec<String>,
}

/// What one check returned.
struct Sent {
    answer: Answer,
    noscript: bool,
    after_switch: bool,
}

impl Load {
    async fn check(self: Arc<Self>, key: u32) -> Sent {
        let after_switch = self.switched.load(Ordering::SeqCst);
        let side = if after_switch { &self.new } else { &self.old };
        let mut con = side[key as usize % CONNECTIONS].clone();
        let attempt = (self.limiter)
            .attempt(&mut con, &self.names[key as usize])
            .await;
        let answer = match attempt.outcome {
            Ok(d) => Answer::of(d.allowed),
            Err(_) => Answer::Error,
        };
        Sent {
            answer,
            noscript: attempt.noscript,
            after_switch,
        }
    }

    /// One check per connection on a key of its own (connect, cache the script).
    async fn warm_up(&self) -> Result<(), PhaseError> {
        for con in &self.old {
            let attempt = (self.limiter)
                .attempt(&mut con.clone(), "ratelab:failover:warm")
                .await;
            (attempt.outcome).map_err(|e| PhaseError::Invalid(format!("warm-up check: {e}")))?;
        }
        Ok(())
    }
}

/// Windows before the first counted one: a key starts with a full bucket, which an offer of
/// `offered` x the rate drains in 1 / (offered - 1) windows; one more for the keys' phases. Each
/// key drains at its own phase, so the keys' admissions are not in lockstep. A fixed window
/// starts every window empty: it needs only the one for the phases.
pub fn settle_windows(strategy: Strategy, offered: f64) -> u64 {
    match strategy {
        Strategy::LuaWindow => 1,
        _ => (1.0 / (offered - 1.0)).ceil() as u64 + 1,
    }
}

/// Every key's checks, evenly spaced at its offered rate from a seeded phase, merged in order:
/// (ms after the start, key).
pub(super) fn schedule(p: &Params, case: Case, seed: u64, span_ms: f64) -> Vec<(f64, u32)> {
    let period = p.window_ms as f64 / (p.burst as f64 * case.offered);
    let mut rng = SplitMix64::new(seed, PHASE_STREAM);
    let mut out = Vec::new();
    for key in 0..case.keys as u32 {
        let mut t = rng.unit_open0() * period;
        while t < span_ms {
            out.push((t, key));
            t += period;
        }
    }
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

/// The instants the promotion left behind, on the Unix clock (ms) or the monotonic one.
#[derive(Default)]
struct Promotion {
    /// Where the replica's copy ends: the link's cut (lagging), the primary's offset read just
    /// before (replicated), minus infinity (wiped: nothing survives); NaN: nothing lost.
    cut_unix: f64,
    sent: Option<Instant>,
    promoted: Option<Instant>,
    switched: Option<Instant>,
    replica_offset: i64,
    replica_keys: u64,
    /// The primary's replication offset once every key was warmed up: a replica that reached it
    /// had the stream.
    warmed_offset: i64,
}

/// The admin connections the plan uses.
struct Admin {
    primary: MultiplexedConnection,
    replica: MultiplexedConnection,
}

/// The trial as a drill (crate::load::drill): every key's checks on the open-loop schedule, the
/// plan's faults (the lagging link's cut, the promotion) at their instants, then the reading.
async fn timeline(
    ctx: &Ctx,
    p: &Params,
    case: Case,
    sides: &Sides<'_>,
    limiter: Limiter,
    seed: u64,
) -> Result<Measured, PhaseError> {
    let load = Arc::new(Load {
        limiter,
        old: connect(&sides.primary, ctx).await?,
        new: connect(&sides.replica, ctx).await?,
        switched: AtomicBool::new(false),
        names: (0..case.keys)
            .map(|k| format!("ratelab:failover:k{k}"))
            .collect(),
    });
    let mut admin = Admin {
        primary: load.old[0].clone(),
        replica: crate::server::endpoint::client(sides.replica.as_str())?
            .get_multiplexed_async_connection_with_config(&ctx.timeouts.config())
            .await?,
    };
    load.warm_up().await?;
    let warmed_offset = offset(&mut admin.primary, "master_repl_offset").await?;
    let clock = Clock::now();
    let start = Instant::now() + LEAD;
    let (switch_ms, end_ms) = switch_and_end(p, case, clock.unix(start));
    let arrivals = (schedule(p, case, seed, end_ms).into_iter())
        .map(|(t_ms, key)| Arrival {
            at_ns: (t_ms * 1e6) as u64,
            tag: u64::from(key),
        })
        .collect();
    let promotion = RefCell::new(Promotion {
        cut_unix: f64::NAN,
        warmed_offset,
        ..Promotion::default()
    });
    let promote_at = Duration::from_secs_f64(switch_ms / 1e3);
    let mut drill = Drill::new(start, Schedule::Open(arrivals));
    if case.variant == Variant::Lagging {
        let cut_at = promote_at.saturating_sub(Duration::from_millis(p.lag_ms));
        drill = drill.fault(When::At(cut_at), "cut the link", || async {
            let at = sides.proxy.set(Fault::Blackhole(Direction::Both));
            promotion.borrow_mut().cut_unix = clock.unix(at);
            Ok(())
        });
    }
    let (switching, checking) = (Arc::clone(&load), Arc::clone(&load));
    let ran = drill
        .fault(When::At(promote_at), "promote", || {
            promote(&mut admin, case, switching, &promotion, clock)
        })
        .run(move |call| Arc::clone(&checking).check(call.tag as u32))
        .await?;
    let primary_offset = offset(&mut admin.primary, "master_repl_offset").await?;
    let old_primary_role = info_field(&mut admin.primary, "role").await?;
    let m = measured(
        case,
        &ran,
        clock.unix(start),
        promotion.into_inner(),
        primary_offset,
        clock,
    )?;
    Ok(Measured {
        post_windows: p.post_windows,
        old_primary_role,
        ..m
    })
}

/// The switch and the end of the load, ms after the start `start_unix`: the switch at `phase` of a
/// window after the settling windows and the pre windows; the end a tenth of a window, at least
/// 100 ms, past the last counted one, so checks keep coming until it has closed even when the
/// generator runs late (20 ms at quick's 200 ms windows was not).
pub(super) fn switch_and_end(p: &Params, case: Case, start_unix: f64) -> (f64, f64) {
    let w = p.window_ms as f64;
    let settle = settle_windows(case.strategy, case.offered) as f64;
    let first = ((start_unix / w).floor() + settle + p.pre_windows as f64) * w;
    let switch_unix = first + p.switch_phase * w;
    let end_unix = first + p.post_windows as f64 * w + (0.1 * w).max(100.0);
    (switch_unix - start_unix, end_unix - start_unix)
}

/// The plan's fault: the replica caught up (replicated), promoted, checked, flushed (wiped), and
/// every client moved to it.
async fn promote(
    admin: &mut Admin,
    case: Case,
    load: Arc<Load>,
    notes: &RefCell<Promotion>,
    clock: Clock,
) -> Result<(), PhaseError> {
    if case.variant == Variant::Replicated {
        // The replica reaches the primary's offset of now: only what follows can be lost.
        notes.borrow_mut().cut_unix = clock.unix(Instant::now());
        catch_up(admin).await?;
    }
    let sent = Instant::now();
    redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query_async::<()>(&mut admin.replica)
        .await?;
    while info_field(&mut admin.replica, "role").await? != "master" {
        if sent.elapsed() > PROMOTE_TIMEOUT {
            return Err(PhaseError::Invalid("the replica was not promoted".into()));
        }
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    let promoted = Instant::now();
    let replica_offset = offset(&mut admin.replica, "master_repl_offset").await?;
    let replica_keys: u64 = redis::cmd("DBSIZE").query_async(&mut admin.replica).await?;
    // Every key was written in the warm-up, long before the promotion: a replica short of that
    // offset never got the stream, and its "state loss" would be the harness's, not the
    // variant's. (Its key count cannot say so: a fixed window's keys expire with each window, and
    // a loaded generator may not have written the new window's yet.)
    let warmed_offset = notes.borrow().warmed_offset;
    if replica_offset < warmed_offset {
        return Err(PhaseError::Invalid(format!(
            "the replica's offset was {replica_offset} at its promotion, short of the {warmed_offset} \
             the primary had once every key was written: it never got the stream"
        )));
    }
    if case.variant == Variant::Wiped {
        notes.borrow_mut().cut_unix = f64::NEG_INFINITY;
        (redis::cmd("FLUSHALL").arg("SYNC"))
            .query_async::<()>(&mut admin.replica)
            .await?;
    }
    load.switched.store(true, Ordering::SeqCst);
    let mut n = notes.borrow_mut();
    (n.sent, n.promoted, n.switched) = (Some(sent), Some(promoted), Some(Instant::now()));
    (n.replica_offset, n.replica_keys) = (replica_offset, replica_keys);
    Ok(())
}

/// Waits until the replica has the primary's offset of now.
async fn catch_up(admin: &mut Admin) -> Result<(), PhaseError> {
    let target = offset(&mut admin.primary, "master_repl_offset").await?;
    let waited = Instant::now();
    while offset(&mut admin.replica, "slave_repl_offset").await? < target {
        if waited.elapsed() > PROMOTE_TIMEOUT {
            return Err(PhaseError::Invalid("the replica never caught up".into()));
        }
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    Ok(())
}

/// The trial's reading of the drill: every check on the Unix clock, what the old primary
/// admitted after the cut, how the first call after the switch went.
fn measured(
    case: Case,
    ran: &Ran<Sent>,
    start_unix: f64,
    n: Promotion,
    primary_offset: i64,
    clock: Clock,
) -> Result<Measured, PhaseError> {
    let (Some(sent), Some(promoted), Some(switched)) = (n.sent, n.promoted, n.switched) else {
        return Err(PhaseError::Invalid("the promotion never ran".into()));
    };
    let mut checks: Vec<Check> = (ran.records.iter())
        .map(|r| Check {
            key: r.tag as u32,
            sent_unix_ms: start_unix + r.start_ns as f64 / 1e6,
            answer: r.out.answer,
            noscript: r.out.noscript,
            after_switch: r.out.after_switch,
        })
        .collect();
    checks.sort_by(|a, b| a.sent_unix_ms.total_cmp(&b.sent_unix_ms));
    let send_lag_max_ms = (ran.records.iter())
        .map(|r| r.start_ns.saturating_sub(r.intended_ns) as f64 / 1e6)
        .fold(0.0, f64::max);
    let mut lost_admits = vec![0u64; case.keys as usize];
    let lost = (checks.iter()).filter(|c| {
        !c.after_switch && c.answer == Answer::Admitted && c.sent_unix_ms >= n.cut_unix
    });
    for c in lost {
        if let Some(count) = lost_admits.get_mut(c.key as usize) {
            *count += 1;
        }
    }
    let first_call = (checks.iter().find(|c| c.after_switch)).map_or("none", |c| match c {
        c if c.noscript => "noscript",
        c if c.answer == Answer::Error => "error",
        _ => "ok",
    });
    let ms = |a: Instant, b: Instant| b.saturating_duration_since(a).as_secs_f64() * 1e3;
    Ok(Measured {
        checks,
        switch_unix_ms: clock.unix(switched),
        promote_ms: ms(sent, promoted),
        switch_after_promote_ms: ms(sent, switched),
        lag_ms: match case.variant {
            Variant::Lagging => ms(clock.instant(n.cut_unix), sent),
            _ => 0.0,
        },
        lost_repl_bytes: primary_offset - n.replica_offset,
        lost_admits,
        replica_keys: n.replica_keys,
        first_call: first_call.to_string(),
        old_primary_role: String::new(),
        send_lag_max_ms,
        post_windows: 0,
        clients: Vec::new(),
    })
}
