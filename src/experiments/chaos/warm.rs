//! What every chaos drill does before its traffic: make each client's store, connect it through
//! its proxy and load the script, unrecorded.

use crate::experiments::PhaseError;
use crate::limiter::Decider;
use crate::store::{Flaw, Policy, Store, StoreSettings};
use std::time::Duration;

/// Unrecorded checks per client before traffic: connect, load the script.
const WARMUP_CHECKS: u32 = 5;
/// The most it tries: on a loaded machine one check in a drill's short timeout can miss, which
/// says nothing about the proxy, so the warm-up goes on until a check answers normally.
const MAX_WARMUP_CHECKS: u32 = 50;
/// Time between the warm-up and the schedule's start.
pub(super) const LEAD: Duration = Duration::from_millis(50);

pub(super) async fn warm_up(store: &Store, key: &str) -> Result<(), PhaseError> {
    let mut last = None;
    for i in 0..MAX_WARMUP_CHECKS {
        let answer = (store.check(key).await).map_err(|e| PhaseError::Invalid(e.to_string()))?;
        if i + 1 >= WARMUP_CHECKS && answer.outcome.is_normal() {
            return Ok(());
        }
        last = Some(answer);
    }
    Err(PhaseError::Invalid(format!(
        "warm-up: Redis did not answer through the proxy in {MAX_WARMUP_CHECKS} checks (the last: {last:?})"
    )))
}

/// A chaos client's settings: its timeout, policy and flaw; no breaker, reconnecting in the check.
pub(super) fn settings(budget: Duration, policy: Policy, flaw: Option<Flaw>) -> StoreSettings {
    StoreSettings {
        budget,
        policy,
        breaker: None,
        flaw,
        reconnect: Default::default(),
    }
}

/// A store for `url` deciding with `limiter` (it connects on its first check).
pub(super) fn store(
    url: &str,
    limiter: impl Into<Decider>,
    settings: StoreSettings,
) -> Result<Store, PhaseError> {
    Store::new(url, limiter, settings)
        .map_err(|e| PhaseError::Invalid(format!("store: {}", crate::errors::one_line(&e))))
}
