//! chaos's pool drill (seed 003: "A connection pool that masks the outage. Pre-established
//! connections may fail slowly and unevenly. Run the drill for at least a minute so the pool fully
//! turns over."). A pool of `pool_connections` store connections, each replaced at its first
//! check-out past `pool_max_age_ms` (one reaches that age every max age / connections, as in a
//! pool that has run for a while), requests taking them in turn; through a proxy of its own
//! whose fault refuses new connections and leaves open ones alone (a firewall rule that drops
//! only new connections). A connection opened before the fault keeps answering from Redis; the
//! one that replaces it cannot connect, and every check on it is answered by the fail-open
//! policy: the outage shows one connection at a time. Runs beside the first sequence.

use super::rows::{Drill, PoolBinRow, PoolRow};
use super::warm::{self, warm_up, LEAD};
use super::Params;
use crate::analysis::stats::share;
use crate::experiments::PhaseError;
use crate::fault::{Fault, Proxy};
use crate::limiter::Limiter;
use crate::load::drill::{self as engine, Ran, Record, Schedule, Span, When};
use crate::load::Arrivals;
use crate::store::{Policy, Store, StoreSettings};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// The pool drill's windows, in order.
const WINDOWS: [Drill; 3] = [Drill::Baseline, Drill::Refused, Drill::AfterRefused];

/// Where the pool drill runs.
pub(super) struct PoolDrill<'a> {
    pub p: &'a Params,
    pub upstream: SocketAddr,
    /// The client's URL with `{}` where the proxy's address goes.
    pub proxied: &'a str,
    pub seed: u64,
    pub prefix: String,
}

/// One check: the pool's place it took, that place's replacements so far, how it was answered.
#[derive(Debug, Clone, Copy)]
struct Seen {
    connection: usize,
    generation: usize,
    by_redis: bool,
}

/// One place of the pool: its store (one connection), when it is next replaced, and every
/// replacement's instant.
struct Place {
    store: Arc<Store>,
    retire_at: Instant,
    replaced: Vec<Instant>,
}

/// The pool: its places, taken in turn.
struct Pool {
    url: String,
    limiter: Limiter,
    settings: StoreSettings,
    max_age: Duration,
    places: Vec<Mutex<Place>>,
    next: AtomicU64,
    /// The first limiter bug, if any (never hidden behind the policy).
    first_error: Mutex<Option<String>>,
}

impl Pool {
    /// The next place's store, replaced first if it is past its age.
    fn take(&self) -> Result<(usize, usize, Arc<Store>), String> {
        let i = (self.next.fetch_add(1, Ordering::Relaxed) % self.places.len() as u64) as usize;
        let mut place = self.places[i].lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if now >= place.retire_at {
            while now >= place.retire_at {
                place.retire_at += self.max_age;
            }
            let fresh = warm::store(&self.url, self.limiter.clone(), self.settings)
                .map_err(|e| e.to_string())?;
            place.store = Arc::new(fresh);
            place.replaced.push(now);
        }
        Ok((i, place.replaced.len(), Arc::clone(&place.store)))
    }
}

impl PoolDrill<'_> {
    /// The drill's rows: per window and connection, and per time bin.
    pub(super) async fn run(&self) -> Result<(Vec<PoolRow>, Vec<PoolBinRow>), PhaseError> {
        let p = self.p;
        let proxy = Proxy::start(self.upstream, self.seed)
            .await
            .map_err(crate::server::ServerError::from)?;
        let pool = self.pool(&proxy).await?;
        let t0 = Instant::now() + LEAD;
        let max_age = pool.max_age;
        // One place reaches its age every max age / connections.
        for (i, place) in pool.places.iter().enumerate() {
            let mut place = place.lock().unwrap_or_else(|p| p.into_inner());
            place.retire_at = t0 + max_age * (i as u32 + 1) / pool.places.len() as u32;
        }
        let lengths = [p.baseline_ms, p.pool_drill_ms, p.settle_ms];
        let total_ms: u64 = lengths.iter().sum();
        let arrivals = Arrivals::Poisson {
            rate_per_s: p.pool_rate_per_s,
            duration_ms: total_ms,
        };
        let schedule = Schedule::open(arrivals.schedule(self.seed));
        let mut drill = engine::Drill::<PhaseError>::new(t0.into_std(), schedule);
        let proxy = &proxy;
        drill = drill.fault(
            When::At(Duration::from_millis(p.baseline_ms)),
            "refused",
            || async {
                proxy.set(Fault::Refuse);
                Ok(())
            },
        );
        let heal_at = Duration::from_millis(p.baseline_ms + p.pool_drill_ms);
        drill = drill.fault(When::At(heal_at), "after-refused", || async {
            proxy.heal();
            Ok(())
        });
        let (pool, keys, prefix) = (Arc::new(pool), p.keys, self.prefix.clone());
        let checked = Arc::clone(&pool);
        let ran = (drill.hold_until(Duration::from_millis(total_ms)))
            .run(move |call| {
                let (pool, key) = (Arc::clone(&checked), format!("{prefix}{}", call.seq % keys));
                async move { check(&pool, &key).await }
            })
            .await?;
        proxy.heal();
        if let Some(e) = pool
            .first_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            return Err(PhaseError::Invalid(e));
        }
        let replaced: Vec<Vec<u64>> = (pool.places.iter())
            .map(|place| {
                let place = place.lock().unwrap_or_else(|p| p.into_inner());
                let at = place
                    .replaced
                    .iter()
                    .map(|t| ran.ns(t.into_std()).max(0) as u64);
                at.collect()
            })
            .collect();
        let spans = ran.spans(total_ms * 1_000_000);
        let tally = Tally {
            p,
            ran: &ran,
            spans,
            replaced,
        };
        Ok(tally.rows())
    }

    /// The pool's places, each connected and its script loaded through the proxy.
    async fn pool(&self, proxy: &Proxy) -> Result<Pool, PhaseError> {
        let p = self.p;
        let url = self.proxied.replace("{}", &proxy.addr().to_string());
        let timeout = Duration::from_millis(p.flaw_timeout_ms);
        let settings = warm::settings(timeout, Policy::FailOpen, None);
        let limiter = p.limiter();
        let mut places = Vec::new();
        for _ in 0..p.pool_connections {
            let store = warm::store(&url, limiter.clone(), settings)?;
            warm_up(&store, &format!("{}warmup", self.prefix)).await?;
            places.push(Mutex::new(Place {
                store: Arc::new(store),
                retire_at: Instant::now(),
                replaced: Vec::new(),
            }));
        }
        Ok(Pool {
            url,
            limiter,
            settings,
            max_age: Duration::from_millis(p.pool_max_age_ms),
            places,
            next: AtomicU64::new(0),
            first_error: Mutex::new(None),
        })
    }
}

/// One request's check through the pool; a limiter bug is kept for the drill's end.
async fn check(pool: &Pool, key: &str) -> Seen {
    let answered = match pool.take() {
        Ok((connection, generation, store)) => match store.check(key).await {
            Ok(answer) => Ok((connection, generation, answer.outcome.is_normal())),
            Err(e) => Err(format!("limiter error: {e}")),
        },
        Err(e) => Err(e),
    };
    let (connection, generation, by_redis) = answered.unwrap_or_else(|e| {
        let mut first = pool.first_error.lock().unwrap_or_else(|p| p.into_inner());
        first.get_or_insert(e);
        (0, 0, false)
    });
    Seen {
        connection,
        generation,
        by_redis,
    }
}

/// The drill's records cut into windows and bins.
struct Tally<'a> {
    p: &'a Params,
    ran: &'a Ran<Seen>,
    spans: Vec<Span<'a>>,
    /// Per place, its replacements' instants, ns after the schedule's start.
    replaced: Vec<Vec<u64>>,
}

impl Tally<'_> {
    fn rows(&self) -> (Vec<PoolRow>, Vec<PoolBinRow>) {
        let mut places = Vec::new();
        let mut bins = Vec::new();
        for (&drill, span) in WINDOWS.iter().zip(&self.spans) {
            let (start, end) = (span.start_ns, span.end_ns);
            for place in 0..self.replaced.len() {
                places.push(self.place(drill, place, start, end));
            }
            let width = self.p.bin_ms * 1_000_000;
            let n = ((end - start) as f64 / width as f64).round().max(1.0) as u64;
            for bin in 0..n {
                let from = start + bin * width;
                let to = if bin + 1 == n { end } else { from + width };
                bins.push(self.bin(drill, bin, bin + 1 == n, start, (from, to)));
            }
        }
        (places, bins)
    }

    /// The checks intended in [from, to).
    fn within(&self, from: u64, to: u64) -> impl Iterator<Item = &Record<Seen>> {
        (self.ran.records.iter()).filter(move |r| (from..to).contains(&r.intended_ns))
    }

    /// How many times `place` was replaced before `at`.
    fn replacements_before(&self, place: usize, at: u64) -> usize {
        self.replaced[place].iter().filter(|&&t| t < at).count()
    }

    fn place(&self, drill: Drill, place: usize, start: u64, end: u64) -> PoolRow {
        let mine: Vec<&Record<Seen>> = (self.within(start, end))
            .filter(|r| r.out.connection == place)
            .collect();
        let at_start = self.replacements_before(place, start);
        let replaced: Vec<u64> = (self.replaced[place].iter())
            .filter(|&&t| (start..end).contains(&t))
            .map(|&t| t - start)
            .collect();
        let count = |f: &dyn Fn(&Record<Seen>) -> bool| mine.iter().filter(|r| f(r)).count() as u64;
        let by_redis = count(&|r| r.out.by_redis);
        let before = count(&|r| r.out.generation == at_start);
        let policy_before = count(&|r| r.out.generation == at_start && !r.out.by_redis);
        let ms = |ns: u64| ns as f64 / 1e6;
        let first_policy = mine.iter().find(|r| !r.out.by_redis);
        PoolRow {
            drill,
            connection: place as u64,
            max_age_ms: self.p.pool_max_age_ms,
            start_ms: ms(start),
            end_ms: ms(end),
            replaced: replaced.len() as u64,
            replaced_at_ms: replaced.first().map(|&t| ms(t)),
            checks: mine.len() as u64,
            by_redis,
            by_policy: mine.len() as u64 - by_redis,
            by_policy_fraction: share(mine.len() as u64 - by_redis, mine.len() as u64),
            policy_before_replaced_fraction: share(policy_before, before),
            // A check intended just before the heal may start after it, and connect.
            redis_after_replaced: count(&|r| {
                r.out.generation > at_start && r.out.by_redis && r.start_ns < end
            }),
            first_policy_ms: first_policy.map(|r| ms(r.intended_ns.saturating_sub(start))),
        }
    }

    fn bin(
        &self,
        drill: Drill,
        bin: u64,
        last: bool,
        start: u64,
        (from, to): (u64, u64),
    ) -> PoolBinRow {
        let checks: Vec<&Record<Seen>> = self.within(from, to).collect();
        let failed: Vec<usize> = (checks.iter())
            .filter(|r| !r.out.by_redis)
            .map(|r| r.out.connection)
            .collect();
        let mut failing = failed.clone();
        failing.sort_unstable();
        failing.dedup();
        let replaced = (0..self.replaced.len())
            .filter(|&place| {
                self.replacements_before(place, to) > self.replacements_before(place, start)
            })
            .count();
        PoolBinRow {
            drill,
            bin,
            last_in_window: last,
            t_s: from as f64 / 1e9,
            bin_ms: (to - from) as f64 / 1e6,
            connections: self.replaced.len() as u64,
            checks: checks.len() as u64,
            by_policy: failed.len() as u64,
            by_policy_fraction: share(failed.len() as u64, checks.len() as u64),
            connections_failing: failing.len() as u64,
            connections_replaced: replaced as u64,
        }
    }
}
