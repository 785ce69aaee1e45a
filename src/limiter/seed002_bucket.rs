//! Seed 002's token bucket script as the write-up publishes it (`lua/seed002_token_bucket.lua`,
//! extracted byte for byte: tests/seed_code.rs): Redis's TIME, a refill on every call, an HSET on
//! every call, a denial included, and an expiry of exactly capacity / rate. Invoked as the seed's
//! go-redis `Script.Run` does (EVALSHA, EVAL on NOSCRIPT) unless given another invocation; the same
//! text is the library's `seed002_token_bucket` function, for FCALL. Its reply is
//! `{allowed, tokens left}`: it says no retry time.
//!
//! The expiry divides by the rate, so a bucket that never refills cannot run it as written (PEXPIRE
//! of inf is an error): a check at a rate of 0 is refused before anything is sent.

use super::library::SEED002_BUCKET_FUNCTION;
use super::script::LuaScript;
use super::wire::ArgSink;
use super::{Attempt, LimitSpec, LimiterError, Strategy};
use redis::aio::ConnectionLike;

pub(super) fn script() -> LuaScript {
    LuaScript::new(include_str!("lua/seed002_token_bucket.lua"))
        .with_function(SEED002_BUCKET_FUNCTION)
}

/// Why a bucket that never refills cannot run the seed's script.
const NO_RATE: &str = "seed 002's script expires the bucket after capacity / rate: a rate of 0 \
                                  divides by zero (give it a rate above 0)";

pub(super) async fn check(
    con: &mut impl ConnectionLike,
    script: &LuaScript,
    key: &str,
    spec: &LimitSpec,
) -> Attempt {
    if spec.refill_per_sec <= 0.0 {
        return Attempt::refused(LimiterError::Unsupported {
            strategy: Strategy::Seed002Bucket,
            invocation: script.invocation(),
            why: NO_RATE,
        });
    }
    args(script.call(), key, spec)
        .decide(con, Strategy::Seed002Bucket)
        .await
}

/// KEYS and ARGV of one decision: the bucket, its capacity, its rate and a cost of 1.
pub(super) fn args<S: ArgSink>(sink: S, key: &str, spec: &LimitSpec) -> S {
    sink.key(key)
        .arg(spec.capacity)
        .arg(spec.refill_per_sec)
        .arg(1)
}
