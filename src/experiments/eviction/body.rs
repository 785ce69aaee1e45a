//! eviction's measurement: per trial, layout and policy, empty buckets, a pause, memory pressure
//! from cache data, then who survived and what the limiter admits.

use super::cache::{self, Written};
use super::checks::{each_user, redis_answer, UserTally};
use super::{CellRow, EvictionPolicy, Layout, Params, UserClass, UserRow, MUST_OWN};
use super::{CELLS, USERS};
use crate::analysis::stats::share;
use crate::context::Ctx;
use crate::experiments::{ExperimentError, Phase, PhaseError, Session};
use crate::limiter::{LimitSpec, Limiter, Strategy};
use crate::server::admin::{config_set, flush_all_sync, info_u64, used_memory};
use crate::server::{Deployment, RedisServer, Topology};
use crate::store::{Store, StoreSettings};
use std::time::{Duration, Instant};

/// The database the shared-db layout writes its cache to.
const CACHE_DB: u8 = 1;

/// One cell of the matrix.
#[derive(Debug, Clone, Copy)]
struct Cell {
    layout: Layout,
    policy: EvictionPolicy,
    trial: u32,
}

pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(crate::server::ServerError::from)
        .phase(|| "building the async runtime".into())?;
    let mut user_rows = USERS.create(&s.run.staging)?;
    let mut cell_rows = CELLS.create(&s.run.staging)?;
    let limiter_server = s
        .target
        .owned(MUST_OWN)
        .phase(|| "checking the server".into())?;
    // The dedicated layout's cache lives on a server of its own, built as the frame built the
    // limiter's: this run's binary, pinning and TLS.
    let cache_server = match p.layouts.iter().any(|l| l.cache_apart()) {
        true => Some(
            s.build(&Topology::Standalone)
                .phase(|| "starting the cache's server".into())?,
        ),
        false => None,
    };
    let servers = Servers {
        limiter: limiter_server,
        cache: cache_server.as_ref().and_then(Deployment::writable),
    };
    let cells = p.trials as u64 * p.layouts.len() as u64 * p.policies.len() as u64;
    let bar = s.progress(cells);
    for trial in 0..p.trials {
        for &layout in &p.layouts {
            for &policy in &p.policies {
                let cell = Cell {
                    layout,
                    policy,
                    trial,
                };
                let what = || {
                    format!(
                        "{layout:?} store under {}, trial {trial}",
                        policy.redis_name()
                    )
                };
                let (row, users) =
                    one_cell(s.ctx, p, &rt, &servers, &s.prefix, cell).phase(what)?;
                cell_rows.write(&row)?;
                for u in &users {
                    user_rows.write(u)?;
                }
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    // Leave the server as the frame found it: no limit, nothing of ours in any database.
    let mut con = limiter_server
        .connection()
        .phase(|| "resetting the server".into())?;
    reset(&mut con).phase(|| "resetting the server".into())?;
    s.note(format!(
        "{cells} cells; maxmemory is per server, so the shared-db layout (cache in database {CACHE_DB}) shares \
         the limiter's memory; the dedicated layout's cache went to a second managed server."
    ));
    Ok(())
}

struct Servers<'a> {
    limiter: &'a RedisServer,
    cache: Option<&'a RedisServer>,
}

impl Servers<'_> {
    /// The server the cell's cache data goes to.
    fn cache_of(&self, layout: Layout) -> Result<&RedisServer, PhaseError> {
        match layout.cache_apart() {
            true => self.cache.ok_or_else(|| {
                PhaseError::Invalid("the dedicated layouts have no cache server".into())
            }),
            false => Ok(self.limiter),
        }
    }
}

/// No memory limit and every database empty.
fn reset(con: &mut redis::Connection) -> Result<(), PhaseError> {
    config_set(con, "maxmemory", "0")?;
    config_set(con, "maxmemory-policy", "noeviction")?;
    flush_all_sync(con)?;
    Ok(())
}

/// The limit `used_memory + headroom` and the policy, or none for the control.
fn limit_memory(
    con: &mut redis::Connection,
    headroom: u64,
    policy: EvictionPolicy,
) -> Result<(u64, u64), PhaseError> {
    let used = used_memory(con)?;
    config_set(con, "maxmemory-policy", policy.redis_name())?;
    let max = match policy {
        EvictionPolicy::Unlimited => 0,
        _ => used + headroom,
    };
    config_set(con, "maxmemory", &max.to_string())?;
    Ok((used, max))
}

fn limiter(p: &Params) -> Limiter {
    let spec = LimitSpec {
        capacity: p.capacity,
        refill_per_sec: p.refill_per_sec,
        ..LimitSpec::default()
    };
    Limiter::new(Strategy::LuaBucket, spec)
}

fn store(p: &Params, url: &str) -> Result<Store, PhaseError> {
    let settings = StoreSettings {
        budget: Duration::from_millis(p.budget_ms),
        policy: p.store_policy,
        breaker: None,
        flaw: None,
        reconnect: Default::default(),
    };
    Store::new(url, limiter(p), settings)
        .map_err(|e| PhaseError::Invalid(format!("store: {}", crate::errors::one_line(&e))))
}

/// `checks` checks per user through a fresh store.
fn check_all(
    p: &Params,
    rt: &tokio::runtime::Runtime,
    url: &str,
    prefix: &str,
    keys: &[String],
    checks: u64,
) -> Result<Vec<UserTally>, PhaseError> {
    let store = store(p, url)?;
    // One check on a key of its own opens the store's connection first: checks starting at once
    // on a cold store each open one, and Redis counts every client's buffers (tens of KB each)
    // as used memory, enough to evict buckets from a store with a few MB to spare.
    rt.block_on(store.check(&format!("{prefix}warm")))
        .map_err(|e| PhaseError::Invalid(format!("opening the store's connection: {e}")))?;
    let local = tokio::task::LocalSet::new();
    rt.block_on(local.run_until(each_user(store, keys, checks, p.in_flight)))
        .map_err(|e| PhaseError::Invalid(format!("a check failed outright: {e}")))
}

fn one_cell(
    ctx: &Ctx,
    p: &Params,
    rt: &tokio::runtime::Runtime,
    servers: &Servers,
    prefix: &str,
    cell: Cell,
) -> Result<(CellRow, Vec<UserRow>), PhaseError> {
    let limiter_server = servers.limiter;
    let cache_server = servers.cache_of(cell.layout)?;
    let mut lcon = limiter_server.connection()?;
    reset(&mut lcon)?;
    let mut ccon = cache_server.connection()?;
    if cell.layout.cache_apart() {
        reset(&mut ccon)?;
    }
    let used_empty = used_memory(&mut lcon)?;
    if cell.layout == Layout::SharedDb {
        redis::cmd("SELECT").arg(CACHE_DB).query::<()>(&mut ccon)?;
    }

    let url = limiter_server.url();
    let keys: Vec<String> = (0..p.users).map(|u| format!("{prefix}user:{u}")).collect();
    let before = check_all(p, rt, &url, prefix, &keys, p.capacity)?;
    if let Some((user, t)) = before
        .iter()
        .enumerate()
        .find(|(_, t)| t.allowed != p.capacity)
    {
        return Err(PhaseError::Invalid(format!(
            "user {user} was admitted {} of {} checks on a fresh bucket before any pressure",
            t.allowed, p.capacity
        )));
    }
    // Nothing touches the buckets now: an emptied bucket waiting for its user is live state.
    // Every policy waits, not only the LRU ones that read idle time: the pause also lets
    // used_memory settle after the checks before maxmemory is set from it (without it a
    // noeviction limiter write sometimes still found room).
    std::thread::sleep(Duration::from_millis(p.idle_ms));
    let bucket_bytes = used_memory(&mut lcon)?.saturating_sub(used_empty) / p.users;

    let limiter_evicted_before = evicted(&mut lcon)?;
    let pressure = pressure(p, prefix, cell, &mut lcon, &mut ccon)?;
    let written = pressure.written;
    let growth = match cell.layout {
        Layout::DedicatedGrowth => grow(p, rt, &url, prefix, bucket_bytes)?,
        _ => Growth::default(),
    };
    let limiter_evicted = evicted(&mut lcon)? - limiter_evicted_before;

    let survived = cache::exists(&mut lcon, &keys)?;
    let ttl_survived = cache::count_existing(&mut ccon, &written.ttl_keys)?;
    let plain_survived = cache::count_existing(&mut ccon, &written.plain_keys)?;
    let probe = format!("{prefix}probe");
    let limiter_error = rt.block_on(redis_answer(&url, &limiter(p), &probe, ctx.timeouts));
    let evicted_before_checks = evicted(&mut lcon)?;
    let after = check_all(p, rt, &url, prefix, &keys, p.capacity)?;
    let new_keys: Vec<String> = (p.users..p.users + p.new_users)
        .map(|u| format!("{prefix}user:{u}"))
        .collect();
    let new_after = check_all(p, rt, &url, prefix, &new_keys, 2 * p.capacity)?;
    let evicted_during_checks = evicted(&mut lcon)? - evicted_before_checks;
    limiter_server.check_alive()?;

    let limiter_survived = survived.iter().filter(|&&s| s).count() as u64;
    let row = CellRow {
        layout: cell.layout,
        policy: cell.policy,
        trial: cell.trial,
        maxmemory_bytes: pressure.maxmemory,
        used_before_bytes: pressure.used_before,
        used_after_bytes: pressure.used_after,
        cache_bytes_written: written.bytes,
        evicted_on_limiter_server: limiter_evicted,
        evicted_on_cache_server: pressure.cache_evicted,
        evicted_during_checks,
        limiter_keys: p.users,
        limiter_survived,
        limiter_lost: p.users - limiter_survived,
        limiter_survived_fraction: share(limiter_survived, p.users),
        cache_ttl_keys: written.ttl_keys.len() as u64,
        cache_ttl_survived: ttl_survived,
        cache_ttl_survived_fraction: share(ttl_survived, written.ttl_keys.len() as u64),
        cache_plain_keys: written.plain_keys.len() as u64,
        cache_plain_survived: plain_survived,
        cache_plain_survived_fraction: share(plain_survived, written.plain_keys.len() as u64),
        cache_write_errors: written.errors,
        cache_first_error: written.first_error,
        limiter_oom: u8::from(limiter_error.contains("OOM")),
        limiter_error,
        store_policy: crate::record::csv_text(&p.store_policy),
        pressure_ms: pressure.ms,
        growth_users: growth.users,
        growth_refused: growth.refused,
        limiter_maxmemory_bytes: pressure.limiter_maxmemory,
    };
    let emptied =
        (0..keys.len()).map(|u| user_row(p, cell, u, Some((&before[u], survived[u])), &after[u]));
    let new =
        (new_after.iter().enumerate()).map(|(i, t)| user_row(p, cell, keys.len() + i, None, t));
    Ok((row, emptied.chain(new).collect()))
}

fn evicted(con: &mut redis::Connection) -> Result<u64, crate::server::ServerError> {
    info_u64(con, "stats", "evicted_keys")
}

/// What the memory pressure did.
struct Pressure {
    used_before: u64,
    maxmemory: u64,
    used_after: u64,
    written: Written,
    ms: f64,
    cache_evicted: u64,
    limiter_maxmemory: u64,
}

/// Sets the memory limit and policy where the cell's cache goes (and on the limiter's own
/// server when that is another one), then writes the cache data.
fn pressure(
    p: &Params,
    prefix: &str,
    cell: Cell,
    lcon: &mut redis::Connection,
    ccon: &mut redis::Connection,
) -> Result<Pressure, PhaseError> {
    let (limiter_evicted0, cache_evicted0) = (evicted(lcon)?, evicted(ccon)?);
    let (used_before, maxmemory) = limit_memory(ccon, p.headroom_bytes, cell.policy)?;
    let limiter_maxmemory = match cell.layout {
        Layout::Dedicated => limit_memory(lcon, p.headroom_bytes, cell.policy)?.1,
        Layout::DedicatedGrowth => limit_memory(lcon, p.growth_headroom_bytes, cell.policy)?.1,
        Layout::Shared | Layout::SharedDb => maxmemory,
    };
    let start = Instant::now();
    let written = cache::fill(ccon, prefix, p)?;
    let ms = start.elapsed().as_secs_f64() * 1e3;
    let limiter_evicted = evicted(lcon)? - limiter_evicted0;
    Ok(Pressure {
        used_before,
        maxmemory,
        used_after: used_memory(ccon)?,
        written,
        ms,
        cache_evicted: match cell.layout.cache_apart() {
            true => evicted(ccon)? - cache_evicted0,
            false => limiter_evicted,
        },
        limiter_maxmemory,
    })
}

/// The limiter's own growth past its server's maxmemory (dedicated-growth).
#[derive(Debug, Default)]
struct Growth {
    users: u64,
    refused: u64,
}

/// Users arriving during the pressure, one check each: `pressure` x the limiter server's headroom
/// of new buckets at `bucket_bytes` each (what an emptied bucket took on this server).
fn grow(
    p: &Params,
    rt: &tokio::runtime::Runtime,
    url: &str,
    prefix: &str,
    bucket_bytes: u64,
) -> Result<Growth, PhaseError> {
    let room = p.pressure * p.growth_headroom_bytes as f64;
    let users = (room / bucket_bytes.max(1) as f64).ceil() as u64;
    let keys: Vec<String> = (0..users).map(|u| format!("{prefix}grow:{u}")).collect();
    let tallies = check_all(p, rt, url, prefix, &keys, 1)?;
    let refused = (tallies.iter())
        .map(|t| t.degraded_allowed + t.degraded_denied)
        .sum();
    Ok(Growth { users, refused })
}

/// A user's row from its checks after the pressure and, if it came before, its checks then and
/// whether its bucket survived.
fn user_row(
    p: &Params,
    cell: Cell,
    user: usize,
    before: Option<(&UserTally, bool)>,
    after: &UserTally,
) -> UserRow {
    let first = before.map_or(after.first, |b| b.0.first);
    let admitted_before = before.map_or(0, |b| b.0.admitted());
    let checks_after =
        after.allowed + after.denied + after.degraded_allowed + after.degraded_denied;
    // An exact bucket admits its capacity, then only what refills from the user's first check on.
    let refill = (after.last.duration_since(first).as_secs_f64() * p.refill_per_sec).floor() as u64;
    let ideal_after = (p.capacity + refill)
        .saturating_sub(admitted_before)
        .min(checks_after);
    UserRow {
        layout: cell.layout,
        policy: cell.policy,
        trial: cell.trial,
        user: user as u64,
        class: match before {
            Some(_) => UserClass::Emptied,
            None => UserClass::New,
        },
        capacity: p.capacity,
        admitted_before,
        key_survived: before.map_or(0, |b| u8::from(b.1)),
        checks_after,
        allowed_after: after.allowed,
        denied_after: after.denied,
        degraded_allowed_after: after.degraded_allowed,
        degraded_denied_after: after.degraded_denied,
        admitted_after: after.admitted(),
        ideal_after,
        over_admitted: after.admitted() as i64 - ideal_after as i64,
    }
}
