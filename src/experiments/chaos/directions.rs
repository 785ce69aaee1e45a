//! chaos's blackhole directions (seed 003: "Dropping only inbound packets lets connections hang
//! differently than a full partition. Drop outbound to the store port for a realistic client-side
//! timeout path."). Per direction a proxy of its own, one correct client (fail-open, the flaw
//! timeout) under open-loop checks: a baseline, the blackhole, then healed, each the same length.
//! The client's side is its checks (answered by Redis or by policy, how long they took); Redis's
//! side is the checks it ran in each window, read from `INFO commandstats` on a connection of
//! its own that bypasses the proxy, at every switch.

use super::rows::{DirectionRow, Drill};
use super::warm::{self, warm_up, LEAD};
use super::Params;
use crate::analysis::stats::{quantile, share};
use crate::experiments::PhaseError;
use crate::fault::{Direction, Fault, Proxy};
use crate::load::drill::{self as engine, Ran, Record, Schedule, When};
use crate::load::Arrivals;
use crate::server::{command_stats, Info};
use crate::store::{Policy, Store};
use redis::aio::MultiplexedConnection;
use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The windows of one direction's drill, in order, each `direction_drill_ms` long.
const WINDOWS: [Drill; 3] = [Drill::Baseline, Drill::Blackhole, Drill::AfterBlackhole];

/// Where the directions' drills run: the server (for the proxies and the counting connection).
pub(super) struct Directions<'a> {
    pub p: &'a Params,
    pub upstream: SocketAddr,
    /// The server's own URL: the connection that counts what Redis ran.
    pub direct: &'a str,
    /// The client's URL with `{}` where a proxy's address goes.
    pub proxied: &'a str,
    pub seed: u64,
    pub prefix: String,
}

/// One check as the client saw it.
#[derive(Debug, Clone, Copy)]
struct Seen {
    by_redis: bool,
    check_ms: f64,
}

/// At a switch: (checks Redis had run, connections the proxy had accepted, store reconnects).
type Count = (u64, u64, u64);

impl Directions<'_> {
    /// Every direction's rows, one drill after another.
    pub(super) async fn run(&self) -> Result<Vec<DirectionRow>, PhaseError> {
        let mut counter = crate::server::endpoint::client(self.direct)?
            .get_multiplexed_async_connection()
            .await?;
        let mut rows = Vec::new();
        for (i, &direction) in self.p.directions.iter().enumerate() {
            let seed = self.seed.wrapping_add(i as u64);
            rows.extend(self.one(direction, seed, &mut counter).await?);
        }
        Ok(rows)
    }

    /// One direction's drill, and its three rows.
    async fn one(
        &self,
        direction: Direction,
        seed: u64,
        counter: &mut MultiplexedConnection,
    ) -> Result<Vec<DirectionRow>, PhaseError> {
        let p = self.p;
        let proxy = Proxy::start(self.upstream, seed)
            .await
            .map_err(crate::server::ServerError::from)?;
        let url = self.proxied.replace("{}", &proxy.addr().to_string());
        let timeout = Duration::from_millis(p.flaw_timeout_ms);
        let settings = warm::settings(timeout, Policy::FailOpen, None);
        let store = warm::store(&url, p.limiter(), settings)?;
        let name = crate::record::csv_text(&direction);
        let prefix = format!("{}{name}:", self.prefix);
        warm_up(&store, &format!("{prefix}warmup")).await?;
        let store = Arc::new(store);
        let window = Duration::from_millis(p.direction_drill_ms);
        let arrivals = Arrivals::Poisson {
            rate_per_s: p.direction_rate_per_s,
            duration_ms: p.direction_drill_ms * WINDOWS.len() as u64,
        };
        let counts = Rc::new(RefCell::new(vec![count(counter, &proxy, &store).await?]));
        let t0 = Instant::now() + LEAD;
        let mut drill = engine::Drill::new(t0.into_std(), Schedule::open(arrivals.schedule(seed)));
        for (k, &switch) in WINDOWS.iter().enumerate().skip(1) {
            let (counts, store, mut counter) =
                (Rc::clone(&counts), Arc::clone(&store), counter.clone());
            let proxy = &proxy;
            drill = drill.fault(
                When::At(window * k as u32),
                switch.to_string(),
                move || async move {
                    let now = count(&mut counter, proxy, &store).await?;
                    counts.borrow_mut().push(now);
                    match switch {
                        Drill::Blackhole => drop(proxy.set(Fault::Blackhole(direction))),
                        _ => drop(proxy.heal()),
                    }
                    Ok::<_, PhaseError>(())
                },
            );
        }
        let keys = p.keys;
        let checked = Arc::clone(&store);
        let ran = (drill.hold_until(window * WINDOWS.len() as u32))
            .run(move |call| {
                let (store, key) = (Arc::clone(&checked), format!("{prefix}{}", call.seq % keys));
                async move {
                    let start = Instant::now();
                    let by_redis =
                        matches!(store.check(&key).await, Ok(a) if a.outcome.is_normal());
                    let check_ms = start.elapsed().as_secs_f64() * 1e3;
                    Seen { by_redis, check_ms }
                }
            })
            .await?;
        proxy.heal();
        let mut counts = counts.take();
        counts.push(count(counter, &proxy, &store).await?);
        Ok(rows(direction, p, &ran, &counts))
    }
}

/// What Redis, the proxy and the store had counted by now.
async fn count(
    counter: &mut MultiplexedConnection,
    proxy: &Proxy,
    store: &Store,
) -> Result<Count, PhaseError> {
    let text: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(counter)
        .await?;
    let commands = command_stats(&Info::parse(&text));
    let ran = ["evalsha", "eval"]
        .iter()
        .filter_map(|c| commands.get(*c))
        .map(|c| c.0)
        .sum();
    Ok((ran, proxy.accepted(), store.counters().reconnects))
}

/// A row per window: the checks offered in it, and the counts between its switches.
fn rows(direction: Direction, p: &Params, ran: &Ran<Seen>, counts: &[Count]) -> Vec<DirectionRow> {
    let spans = ran.spans(p.direction_drill_ms * WINDOWS.len() as u64 * 1_000_000);
    let timeout_ns = p.flaw_timeout_ms * 1_000_000;
    let mut out = Vec::new();
    for (k, (drill, span)) in WINDOWS.iter().zip(spans).enumerate() {
        let in_window: Vec<_> = (ran.records.iter())
            .filter(|r| (span.start_ns..span.end_ns).contains(&r.intended_ns))
            .collect();
        let times: Vec<f64> = in_window.iter().map(|r| r.out.check_ms).collect();
        let offered = in_window.len() as u64;
        let by_redis = in_window.iter().filter(|r| r.out.by_redis).count() as u64;
        // A check started less than a timeout before the window's end may be answered after it.
        let due = |r: &&&Record<Seen>| r.intended_ns + timeout_ns <= span.end_ns;
        let due_in_window = in_window.iter().filter(due).count() as u64;
        let due_by_policy = (in_window.iter().filter(due))
            .filter(|r| !r.out.by_redis)
            .count() as u64;
        let (before, after) = (counts[k], counts[k + 1]);
        let redis_ran = after.0.saturating_sub(before.0);
        out.push(DirectionRow {
            direction,
            timeout_ms: p.flaw_timeout_ms,
            drill: *drill,
            start_ms: span.start_ns as f64 / 1e6,
            end_ms: span.end_ns as f64 / 1e6,
            offered,
            by_redis,
            by_policy: offered - by_redis,
            due_in_window,
            by_policy_fraction: share(due_by_policy, due_in_window),
            check_p50_ms: quantile(&times, 0.5),
            check_max_ms: quantile(&times, 1.0),
            redis_ran,
            redis_ran_fraction: share(redis_ran, offered),
            connections_accepted: after.1.saturating_sub(before.1),
            reconnects: after.2.saturating_sub(before.2),
        });
    }
    out
}
