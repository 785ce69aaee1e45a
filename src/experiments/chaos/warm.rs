//! What every chaos drill does before its traffic: connect each client through its proxy and load
//! the script, unrecorded.

use crate::experiments::PhaseError;
use crate::store::Store;
use std::time::Duration;

/// Unrecorded checks per client before traffic: connect, load the script.
const WARMUP_CHECKS: u32 = 5;
/// Time between the warm-up and the schedule's start.
pub(super) const LEAD: Duration = Duration::from_millis(50);

pub(super) async fn warm_up(store: &Store, key: &str) -> Result<(), PhaseError> {
    for i in 0..WARMUP_CHECKS {
        let answer = (store.check(key).await).map_err(|e| PhaseError::Invalid(e.to_string()))?;
        if i + 1 == WARMUP_CHECKS && !answer.outcome.is_normal() {
            return Err(PhaseError::Invalid(format!(
                "warm-up: Redis did not answer through the proxy ({answer:?})"
            )));
        }
    }
    Ok(())
}
