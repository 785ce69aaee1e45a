//! Every bucket read on the primary and then on the replica, and whether the two agree.

use super::BucketRow;
use crate::limiter::Strategy;
use crate::load::KeyChoice;
use crate::server::{RedisServer, ServerError};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// A bucket's hash and its PTTL on one side.
type Side = (BTreeMap<String, String>, i64);

/// Reads `strategy`'s buckets `0..buckets` on both sides (primary first) and compares them.
pub(super) fn compare_buckets(
    primary: &RedisServer,
    replica: &RedisServer,
    (strategy, prefix): (Strategy, &str),
    buckets: u64,
    catch_up: Duration,
) -> Result<Vec<BucketRow>, ServerError> {
    let mut on_primary = primary.connection()?;
    let mut on_replica = replica.connection()?;
    let catch_up_ms = catch_up.as_secs_f64() * 1e3;
    (0..buckets)
        .map(|bucket| {
            let key = KeyChoice::indexed(prefix, bucket);
            let started = Instant::now();
            let primary_side = read(&mut on_primary, &key)?;
            let replica_side = read(&mut on_replica, &key)?;
            let gap_ms = started.elapsed().as_secs_f64() * 1e3;
            Ok(row(
                strategy,
                bucket,
                key,
                &primary_side,
                &replica_side,
                gap_ms,
                catch_up_ms,
            ))
        })
        .collect()
}

/// HGETALL and PTTL in one round trip.
fn read(con: &mut redis::Connection, key: &str) -> Result<Side, redis::RedisError> {
    redis::pipe()
        .cmd("HGETALL")
        .arg(key)
        .cmd("PTTL")
        .arg(key)
        .query(con)
}

fn row(
    strategy: Strategy,
    bucket: u64,
    key: String,
    primary: &Side,
    replica: &Side,
    read_gap_ms: f64,
    catch_up_ms: f64,
) -> BucketRow {
    let field = |side: &Side, name: &str| side.0.get(name).cloned();
    let fields_equal = primary.0 == replica.0;
    let pttl_diff_ms = primary.1 - replica.1;
    BucketRow {
        strategy,
        bucket,
        key,
        primary_tokens: field(primary, "tokens"),
        replica_tokens: field(replica, "tokens"),
        primary_ts: field(primary, "ts"),
        replica_ts: field(replica, "ts"),
        fields_equal: u8::from(fields_equal),
        primary_pttl_ms: primary.1,
        replica_pttl_ms: replica.1,
        pttl_diff_ms,
        read_gap_ms,
        matched: u8::from(is_match(fields_equal, primary.1, pttl_diff_ms, read_gap_ms)),
        catch_up_ms,
    }
}

/// A bucket matches when it exists with an expiry (a missing key would match vacuously), its
/// fields are equal, and the PTTLs differ by no more than the time between the reads (+1 ms, as
/// each side rounds to whole ms).
fn is_match(fields_equal: bool, primary_pttl_ms: i64, pttl_diff_ms: i64, read_gap_ms: f64) -> bool {
    fields_equal && primary_pttl_ms >= 0 && pttl_diff_ms.abs() as f64 <= read_gap_ms + 1.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(tokens: &str, pttl: i64) -> Side {
        let fields = [("tokens", tokens), ("ts", "1700000000123")];
        (
            fields.map(|(k, v)| (k.to_string(), v.to_string())).into(),
            pttl,
        )
    }

    #[test]
    fn equal_fields_and_a_pttl_gap_within_the_read_gap_match() {
        let r = row(
            Strategy::LuaBucket,
            3,
            "k".into(),
            &side("12.5", 5000),
            &side("12.5", 4999),
            0.2,
            1.0,
        );
        assert_eq!((r.fields_equal, r.pttl_diff_ms, r.matched), (1, 1, 1));
        assert_eq!(r.primary_tokens.as_deref(), Some("12.5"));
    }

    #[test]
    fn a_different_field_or_a_drifted_expiry_does_not_match() {
        let other_tokens = row(
            Strategy::LuaBucket,
            0,
            "k".into(),
            &side("12.5", 5000),
            &side("13", 5000),
            0.2,
            1.0,
        );
        assert_eq!((other_tokens.fields_equal, other_tokens.matched), (0, 0));
        let drifted = row(
            Strategy::LuaBucket,
            0,
            "k".into(),
            &side("12.5", 5000),
            &side("12.5", 4990),
            2.0,
            1.0,
        );
        assert_eq!((drifted.fields_equal, drifted.matched), (1, 0));
    }

    #[test]
    fn a_key_missing_on_both_sides_is_not_a_match() {
        let gone = (BTreeMap::new(), -2);
        let r = row(Strategy::LuaBucket, 0, "k".into(), &gone, &gone, 0.2, 1.0);
        assert_eq!((r.fields_equal, r.matched), (1, 0));
        assert!(
            !is_match(true, -1, 0, 0.2),
            "no expiry is not 'expiry included'"
        );
    }
}
