//! GCRA in one Lua script with Redis TIME, as go-redis/redis_rate and redis-cell do it: `capacity`
//! requests per `window_ms` at a steady rate, with bursts of up to `capacity`. One number per client.

use super::script::LuaScript;
use super::wire::ArgSink;
use super::{Attempt, LimitSpec, Strategy};
use redis::aio::MultiplexedConnection;

pub(super) fn script() -> LuaScript {
    LuaScript::new(include_str!("lua/gcra.lua"))
}

/// Time between requests at the steady rate, in µs: the window shared out over the limit. A
/// capacity of 0 is given a finite interval; its burst of 0 then refuses everything.
fn emission_interval_us(spec: &LimitSpec) -> f64 {
    spec.window_ms.max(1) as f64 * 1000.0 / spec.capacity.max(1) as f64
}

pub(super) async fn check(
    con: &mut MultiplexedConnection,
    script: &LuaScript,
    key: &str,
    spec: &LimitSpec,
) -> Attempt {
    args(script.call(), key, spec)
        .decide(con, Strategy::LuaGcra)
        .await
}

/// KEYS and ARGV of one decision, for redis-rs's call and for the wire alike.
pub(super) fn args<S: ArgSink>(sink: S, key: &str, spec: &LimitSpec) -> S {
    sink.key(key)
        .arg(emission_interval_us(spec))
        .arg(spec.capacity)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::LogVariant;

    #[test]
    fn emission_interval_spreads_the_window_over_the_limit() {
        let mut spec = LimitSpec {
            capacity: 100,
            refill_per_sec: 0.0,
            window_ms: 1000,
            window_origin_ms: 0,
            idle_ttl_ms: 0,
            log: LogVariant::default(),
            watch_retries: 10,
        };
        assert_eq!(emission_interval_us(&spec), 10_000.0);
        spec.capacity = 3;
        assert!((emission_interval_us(&spec) - 333_333.333).abs() < 0.001);
        spec.capacity = 0;
        assert!(emission_interval_us(&spec).is_finite());
    }
}
