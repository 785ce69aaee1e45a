//! Checks through the resilient store, many users at once, tallied per user.

use crate::limiter::{Limiter, LimiterError};
use crate::load::ClientTimeouts;
use crate::store::{Outcome, Store, StoreError};
use std::rc::Rc;
use std::time::Instant;

/// One user's answers to its checks, and when its first and last check were sent and answered.
#[derive(Debug, Clone, Copy)]
pub(super) struct UserTally {
    pub allowed: u64,
    pub denied: u64,
    pub degraded_allowed: u64,
    pub degraded_denied: u64,
    pub first: Instant,
    pub last: Instant,
}

impl UserTally {
    /// What got through: Redis's admissions and the policy's.
    pub fn admitted(&self) -> u64 {
        self.allowed + self.degraded_allowed
    }
}

/// `checks` checks per key, one after another per key, `lanes` keys at a time on the store's one
/// multiplexed connection; the tallies in the keys' order. Must run inside a `LocalSet`.
pub(super) async fn each_user(
    store: Store,
    keys: &[String],
    checks: u64,
    lanes: usize,
) -> Result<Vec<UserTally>, StoreError> {
    let store = Rc::new(store);
    let keys: Rc<[String]> = keys.into();
    let mut tasks = Vec::new();
    for lane in 0..lanes.min(keys.len()) {
        let (store, keys) = (store.clone(), keys.clone());
        tasks.push(tokio::task::spawn_local(async move {
            let mut out = Vec::new();
            for user in (lane..keys.len()).step_by(lanes) {
                out.push((user, one_user(&store, &keys[user], checks).await?));
            }
            Ok::<_, StoreError>(out)
        }));
    }
    let mut tallies = Vec::with_capacity(keys.len());
    for task in tasks {
        // A panicking lane is a bug in this module: surface it as one.
        let lane = task.await.map_err(|e| {
            StoreError::Limiter(LimiterError::UnexpectedReply {
                strategy: crate::limiter::Strategy::LuaBucket,
                detail: format!("a checking task failed: {e}"),
            })
        })??;
        tallies.extend(lane);
    }
    tallies.sort_by_key(|(user, _)| *user);
    Ok(tallies.into_iter().map(|(_, t)| t).collect())
}

async fn one_user(store: &Store, key: &str, checks: u64) -> Result<UserTally, StoreError> {
    let first = Instant::now();
    let mut t = UserTally {
        allowed: 0,
        denied: 0,
        degraded_allowed: 0,
        degraded_denied: 0,
        first,
        last: first,
    };
    for _ in 0..checks {
        match store.check(key).await?.outcome {
            Outcome::Allowed => t.allowed += 1,
            Outcome::Denied => t.denied += 1,
            Outcome::DegradedAllowed => t.degraded_allowed += 1,
            Outcome::DegradedDenied => t.degraded_denied += 1,
        }
    }
    t.last = Instant::now();
    Ok(t)
}

/// One check on a fresh connection, straight through the limiter, for Redis's own answer (the
/// store turns a refusal into its policy's answer and keeps no text): empty when it decided.
pub(super) async fn redis_answer(
    url: &str,
    limiter: &Limiter,
    key: &str,
    timeouts: ClientTimeouts,
) -> String {
    let client = match crate::server::endpoint::client(url) {
        Ok(c) => c,
        Err(e) => return e.to_string(),
    };
    let mut con = match client
        .get_multiplexed_async_connection_with_config(&timeouts.config())
        .await
    {
        Ok(c) => c,
        Err(e) => return e.to_string(),
    };
    match limiter.attempt(&mut con, key).await.outcome {
        Ok(_) => String::new(),
        Err(e) => e.to_string(),
    }
}
