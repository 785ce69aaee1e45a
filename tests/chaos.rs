//! The chaos drill's parts against a real redis-server behind the fault proxy: the model service
//! through a blackhole with a long and a short store timeout, and the after-drill check for a
//! correct client and for one that never reconnects.
//!
//! No fixed times: the long timeout outlasts the whole blackhole, so no request it covers can
//! finish before the heal whatever the machine's speed; the short one is compared with it as a
//! ratio, and the pool's bound comes from the run's own parameters.

use crate::common;

use ratelab::experiments::chaos::service::{Service, ServiceSpec, Trace};
use ratelab::experiments::chaos::tally::{drills, Spec, Window};
use ratelab::experiments::chaos::{Drill as ChaosDrill, DrillRow};
use ratelab::fault::{Direction, Fault, Proxy};
use ratelab::limiter::{LimitSpec, Limiter, Strategy};
use ratelab::load::drill::{Drill, Schedule, When};
use ratelab::load::{Arrivals, LoadError};
use ratelab::server::RedisServer;
use ratelab::store::{Flaw, Outcome, Policy, Store, StoreSettings};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

const WORKERS: usize = 20;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn store(url: &str, budget: Duration, flaw: Option<Flaw>, limit: LimitSpec) -> Store {
    let settings = StoreSettings {
        budget,
        policy: Policy::FailOpen,
        breaker: None,
        flaw,
        reconnect: Default::default(),
    };
    Store::new(url, Limiter::new(Strategy::LuaBucket, limit), settings).expect("store")
}

fn upstream(server: &RedisServer) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], server.port()))
}

/// Clients connected to the server right now, our own admin connection included.
fn clients(server: &RedisServer) -> usize {
    let mut con = server.connection().unwrap();
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut con).unwrap();
    list.lines().count()
}

/// 400 req/s for 1.6 s through the proxy, blackholed (to the server) from 0.3 s to 1.3 s, on the
/// drill engine as chaos runs it; the blackhole window's row. The proxy and the store are dropped
/// before it returns.
fn blackhole_drill(server: &RedisServer, timeout: Duration) -> DrillRow {
    let rt = runtime();
    let (trace, window): (Trace, Window) = rt.block_on(async {
        let proxy = Proxy::start(upstream(server), 1).await.unwrap();
        let limit = LimitSpec {
            capacity: 1_000_000,
            refill_per_sec: 1_000_000.0,
            ..LimitSpec::default()
        };
        let s = Arc::new(store(&proxy.url(), timeout, None, limit));
        assert!(s
            .check("chaos:test:warm")
            .await
            .unwrap()
            .outcome
            .is_normal());
        let spec = ServiceSpec {
            workers: WORKERS,
            queue_max: 100,
            queue_wait: Duration::from_millis(100),
            work: Duration::from_millis(5),
            keys: 10,
            key_prefix: "chaos:test:".into(),
            sample_every: Duration::from_millis(5),
        };
        let schedule = Arrivals::Poisson {
            rate_per_s: 400.0,
            duration_ms: 1600,
        }
        .schedule(3);
        let t0 = Instant::now();
        let service = Service::new(Arc::clone(&s), spec, 3, t0);
        let sampler = tokio::spawn(Arc::clone(&service).sample_until_finished());
        let serving = Arc::clone(&service);
        let ran = Drill::<LoadError>::new(t0.into_std(), Schedule::open(schedule))
            .fault(
                When::At(Duration::from_millis(300)),
                "blackhole",
                || async {
                    proxy.set(Fault::Blackhole(Direction::ToServer));
                    Ok(())
                },
            )
            .fault(When::At(Duration::from_millis(1300)), "heal", || async {
                proxy.heal();
                Ok(())
            })
            .run(move |call| serving.request(call))
            .await
            .unwrap();
        let trace = service.finish(&ran.records.iter().collect::<Vec<_>>());
        sampler.await.unwrap();
        let spans = ran.spans(ran.end_ns);
        let window = Window {
            drill: ChaosDrill::Blackhole,
            start_ns: spans[1].start_ns,
            end_ns: spans[1].end_ns,
        };
        (trace, window)
    });
    assert!(trace.first_error.is_none(), "{:?}", trace.first_error);
    let spec = Spec {
        client: "correct",
        timeout_ms: timeout.as_millis() as u64,
        workers: WORKERS as u64,
        injected_ms: 0,
        bin_ms: 100,
    };
    let baseline = Window {
        drill: ChaosDrill::Baseline,
        start_ns: 0,
        end_ns: window.start_ns,
    };
    let rows = drills(&spec, &trace, &[baseline, window]);
    rows.into_iter().nth(1).expect("the blackhole row")
}

#[test]
fn a_long_timeout_exhausts_the_pool_and_a_short_one_keeps_it_serving() {
    let server = common::start_server();
    let before = clients(&server);
    let long = blackhole_drill(&server, Duration::from_secs(5));
    let short = blackhole_drill(&server, Duration::from_millis(30));
    // 5 s outlasts the 1 s blackhole: every worker that took a request in it holds it to the heal.
    assert!(
        long.all_busy_after_ms.is_some(),
        "the pool never ran dry: {long:?}"
    );
    assert!(long.busy_max == WORKERS as u64);
    assert!(
        long.served_fraction <= long.pool_bound,
        "finished more than {WORKERS} workers can: {long:?}"
    );
    assert!(long.dropped_fraction > 0.5, "{long:?}");
    // The short timeout: answered by policy, counted, served.
    assert!(short.degraded_fraction > 0.9, "{short:?}");
    assert!(short.fail_open_counter > 0);
    assert!(
        short.served_fraction > 10.0 * long.served_fraction.max(0.01),
        "30 ms served {} of the offered load, 5 s {}",
        short.served_fraction,
        long.served_fraction
    );
    assert!(short.dropped_fraction < long.dropped_fraction / 10.0);
    // Every proxy connection to Redis closed with the proxy: nothing of it outlived the drill.
    assert!(
        common::wait_for(Duration::from_secs(10), || clients(&server) == before),
        "{} clients left on Redis, {before} before",
        clients(&server)
    );
}

/// The after-drill check: `n` checks on a fresh key after a reset and a heal, with reconnection
/// time given first (a few checks on another key), as the drill's settle window gives it.
fn after_reset(flaw: Option<Flaw>, n: u64, capacity: u64) -> [u64; 4] {
    let server = common::start_server();
    let rt = runtime();
    rt.block_on(async {
        let proxy = Proxy::start(upstream(&server), 1).await.unwrap();
        let limit = LimitSpec {
            capacity,
            refill_per_sec: 0.0,
            ..LimitSpec::default()
        };
        let s = store(&proxy.url(), Duration::from_millis(30), flaw, limit);
        assert!(s.check("chaos:warm").await.unwrap().outcome.is_normal());
        proxy.set(Fault::Reset);
        for _ in 0..1000 {
            if proxy.live_pumps() == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(proxy.live_pumps(), 0, "the reset reached every connection");
        proxy.heal();
        for _ in 0..3 {
            s.check("chaos:settle").await.unwrap();
        }
        let mut counts = [0u64; 4];
        for _ in 0..n {
            counts[s.check("chaos:after").await.unwrap().outcome as usize] += 1;
        }
        counts
    })
}

#[test]
fn after_the_drill_the_correct_client_enforces_and_the_stuck_one_admits_everything() {
    let (n, capacity) = (300, 20);
    let correct = after_reset(None, n, capacity);
    assert_eq!(correct[Outcome::Allowed as usize], capacity, "{correct:?}");
    assert_eq!(
        correct[Outcome::Denied as usize],
        n - capacity,
        "{correct:?}"
    );
    let stuck = after_reset(Some(Flaw::NeverReconnects), n, capacity);
    assert_eq!(stuck[Outcome::DegradedAllowed as usize], n, "{stuck:?}");
}

/// The pool drill, run by the experiment with one short sequence beside it: a connection opened
/// before new ones were refused answers from Redis until the pool replaces it; its replacement
/// cannot connect, so nothing after it reaches Redis (the kernel refuses the connect, whatever the
/// machine's speed); the failures grow with the replacements; once healed, every place serves.
#[test]
fn a_pool_fails_one_replaced_connection_at_a_time_and_an_idle_service_rides_along() {
    use ratelab::experiments::chaos::{PoolBinRow, PoolRow, POOL, POOL_BINS};
    let tmp = tempfile::tempdir().unwrap();
    let dir = common::run_experiment(
        "chaos",
        tmp.path(),
        &[
            ("timeouts_ms", "[30]"),
            ("flaws", "[]"),
            ("fail_closed", "false"),
            ("directions", "[]"),
            ("blackhole_drill_ms", "200"),
            ("latency_drill_ms", "200"),
            ("settle_ms", "500"),
        ],
    );
    let places: Vec<PoolRow> = POOL.read(&dir).unwrap();
    let bins: Vec<PoolBinRow> = POOL_BINS.read(&dir).unwrap();
    let refused: Vec<&PoolRow> = places
        .iter()
        .filter(|r| r.drill == ChaosDrill::Refused)
        .collect();
    assert_eq!(refused.len(), 8, "one row per place: {places:?}");
    for r in &refused {
        assert!(
            r.replaced >= 1,
            "every place turns over in the drill: {r:?}"
        );
        assert_eq!(
            r.redis_after_replaced, 0,
            "a replacement never reaches Redis: {r:?}"
        );
        assert!(
            r.policy_before_replaced_fraction < 0.5,
            "the old connection serves: {r:?}"
        );
        assert!(
            r.by_policy > 0 && r.by_redis > 0,
            "both before and after: {r:?}"
        );
    }
    let in_refused: Vec<&PoolBinRow> = bins
        .iter()
        .filter(|b| b.drill == ChaosDrill::Refused)
        .collect();
    let (first, last) = (in_refused[0], in_refused[in_refused.len() - 1]);
    assert!(
        first.by_policy_fraction < last.by_policy_fraction,
        "{first:?} {last:?}"
    );
    assert_eq!(last.connections_failing, 8, "{last:?}");
    let healed = bins
        .iter()
        .rfind(|b| b.drill == ChaosDrill::AfterRefused)
        .unwrap();
    assert_eq!(healed.by_policy, 0, "{healed:?}");
    // The idle service rode the same sequence: every window has its row, and its trickle never
    // kept the pool's workers all busy.
    let drills: Vec<DrillRow> = ratelab::experiments::chaos::DRILLS.read(&dir).unwrap();
    let idle: Vec<&DrillRow> = drills.iter().filter(|d| d.client == "idle").collect();
    assert_eq!(idle.len(), 6, "{drills:?}");
    assert!(idle.iter().all(|d| d.busy_max < d.workers), "{idle:?}");
}
