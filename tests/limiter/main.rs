//! Every strategy against a real redis-server, driven as the load generator drives it: tasks on a
//! current-thread runtime, several in flight, on one shared connection (or one each, for WATCH).

use crate::common;
mod exact;
mod timing;
mod watch;
mod wire;

use ratelab::limiter::{unix_ms, Decision, LimitSpec, Limiter, LogVariant};
use redis::aio::MultiplexedConnection;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// A limit of `capacity` that neither refills nor rolls over during a test.
pub fn spec(capacity: u64) -> LimitSpec {
    LimitSpec {
        capacity,
        refill_per_sec: 0.0,
        window_ms: 600_000,
        window_origin_ms: unix_ms(),
        idle_ttl_ms: 600_000,
        log: LogVariant::default(),
        watch_retries: 10,
    }
}

/// Makes `checks` checks of `key`, `in_flight` at a time, on one shared connection unless the
/// strategy needs one per in-flight request (as the load generator must honour).
pub fn drive(
    url: &str,
    limiter: &Limiter,
    key: &str,
    checks: u64,
    in_flight: usize,
) -> Vec<Decision> {
    let own = limiter.strategy().needs_own_connection();
    drive_on(url, limiter, key, checks, in_flight, own)
}

/// `drive`, with the connection layout chosen by the caller: one each, or one shared by all.
pub fn drive_on(
    url: &str,
    limiter: &Limiter,
    key: &str,
    checks: u64,
    in_flight: usize,
    own_connections: bool,
) -> Vec<Decision> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        let client = redis::Client::open(url).unwrap();
        let shared = client.get_multiplexed_async_connection().await.unwrap();
        let limiter = Rc::new(limiter.clone());
        let left = Rc::new(Cell::new(checks));
        let out = Rc::new(RefCell::new(Vec::new()));
        let mut tasks = Vec::new();
        for _ in 0..in_flight {
            let mut con: MultiplexedConnection = if own_connections {
                client.get_multiplexed_async_connection().await.unwrap()
            } else {
                shared.clone()
            };
            let (limiter, left, out, key) =
                (limiter.clone(), left.clone(), out.clone(), key.to_string());
            tasks.push(tokio::task::spawn_local(async move {
                while left.get() > 0 {
                    left.set(left.get() - 1);
                    let d = limiter.check(&mut con, &key).await.expect("check succeeds");
                    out.borrow_mut().push(d);
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        out.take()
    })
}

pub fn admitted(decisions: &[Decision]) -> usize {
    decisions.iter().filter(|d| d.allowed).count()
}

pub fn sync_con(server: &ratelab::server::RedisServer) -> redis::Connection {
    server.connection().unwrap()
}

pub fn sleep_ms(ms: u64) {
    std::thread::sleep(std::time::Duration::from_millis(ms));
}
