//! The body of one worker: `in_flight` tasks on a current-thread runtime sharing one multiplexed
//! connection, each taking the next check until the worker's quota is spent.

use super::{CheckTally, LoadError, WorkerSpec};
use crate::limiter::Limiter;
use redis::aio::MultiplexedConnection;
use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

/// Opens the worker's one connection (before the start signal, so connecting is not measured).
pub async fn connect(spec: &WorkerSpec) -> Result<MultiplexedConnection, LoadError> {
    let client = redis::Client::open(spec.url.as_str())?;
    Ok(client
        .get_multiplexed_async_connection_with_config(&spec.timeouts.config())
        .await?)
}

/// Runs the worker's checks on `con`; must be called inside a `LocalSet`.
pub async fn run_checks(spec: &WorkerSpec, con: MultiplexedConnection) -> CheckTally {
    let limiter = Rc::new(Limiter::new(spec.strategy, spec.limit));
    let remaining = Rc::new(Cell::new(spec.checks));
    let tally = Rc::new(std::cell::RefCell::new(CheckTally::default()));
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(spec.in_flight);
    for _ in 0..spec.in_flight.max(1) {
        let (limiter, remaining, tally) = (limiter.clone(), remaining.clone(), tally.clone());
        let (mut con, key) = (con.clone(), spec.key.clone());
        tasks.push(tokio::task::spawn_local(async move {
            while take_one(&remaining) {
                let outcome = limiter.check(&mut con, &key).await;
                let mut t = tally.borrow_mut();
                match outcome {
                    Ok(d) if d.allowed => t.admitted += 1,
                    Ok(_) => t.denied += 1,
                    Err(e) => {
                        t.errors += 1;
                        t.first_error.get_or_insert_with(|| e.to_string());
                    }
                }
            }
        }));
    }
    for task in tasks {
        if let Err(e) = task.await {
            let mut t = tally.borrow_mut();
            t.errors += 1;
            t.first_error
                .get_or_insert_with(|| format!("task failed: {e}"));
        }
    }
    let mut out = tally.take();
    out.elapsed_ns = started.elapsed().as_nanos() as u64;
    out
}

fn take_one(remaining: &Cell<u64>) -> bool {
    let left = remaining.get();
    if left == 0 {
        return false;
    }
    remaining.set(left - 1);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_is_taken_exactly() {
        let left = Cell::new(3);
        let taken = std::iter::from_fn(|| take_one(&left).then_some(())).count();
        assert_eq!(taken, 3);
        assert!(!take_one(&left));
    }
}
