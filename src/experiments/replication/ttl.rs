//! Seed 002's "its TTL is exactly that long": each bucket called once more on the primary, its
//! PTTL read right behind the call on the same connection, beside the bucket's time to refill
//! completely (capacity / rate) and the expiry the script was asked for or computes.

use super::rows::TtlRow;
use crate::experiments::PhaseError;
use crate::limiter::{LimitSpec, Limiter, Strategy};
use crate::load::ClientTimeouts;

/// One call per bucket and the PTTL right after it. The PTTL is queued behind the call on one
/// multiplexed connection, so Redis runs it next: it reads the expiry the script just set.
pub(super) fn read(
    url: &str,
    strategy: Strategy,
    spec: &LimitSpec,
    keys: &[String],
    timeouts: ClientTimeouts,
) -> Result<Vec<TtlRow>, PhaseError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(crate::server::ServerError::from)?;
    rt.block_on(read_async(url, strategy, spec, keys, timeouts))
}

async fn read_async(
    url: &str,
    strategy: Strategy,
    spec: &LimitSpec,
    keys: &[String],
    timeouts: ClientTimeouts,
) -> Result<Vec<TtlRow>, PhaseError> {
    let client = crate::server::endpoint::client(url)?;
    let mut con = client
        .get_multiplexed_async_connection_with_config(&timeouts.config())
        .await?;
    let limiter = Limiter::new(strategy, *spec);
    let full_refill_ms = spec.capacity as f64 / spec.refill_per_sec * 1000.0;
    // Seed 002's script computes its own expiry, math.ceil(capacity / rate * 1000); lua-bucket's is
    // its argument.
    let ttl_asked_ms = match strategy {
        Strategy::Seed002Bucket => full_refill_ms.ceil() as u64,
        _ => spec.bucket_ttl_ms(),
    };
    let mut rows = Vec::with_capacity(keys.len());
    for (bucket, key) in keys.iter().enumerate() {
        let mut pttl_con = con.clone();
        let mut pttl_cmd = redis::cmd("PTTL");
        pttl_cmd.arg(key);
        let pttl = pttl_cmd.query_async::<i64>(&mut pttl_con);
        let (attempt, pttl) = tokio::join!(limiter.attempt(&mut con, key), pttl);
        // NOSCRIPT means the call was sent again after the PTTL: that PTTL read the old expiry.
        if attempt.noscript {
            return Err(PhaseError::Invalid(format!(
                "{key}: the primary had lost the script, so the PTTL did not follow the call"
            )));
        }
        attempt.outcome?;
        rows.push(TtlRow {
            strategy,
            bucket: bucket as u64,
            key: key.clone(),
            capacity: spec.capacity,
            refill_per_sec: spec.refill_per_sec,
            full_refill_ms,
            ttl_asked_ms,
            pttl_ms: pttl?,
        });
    }
    Ok(rows)
}
