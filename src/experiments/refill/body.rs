//! refill's measurement: every configuration's client hammering its own fresh bucket, all of a
//! trial's at once, each on its own connection and thread.

use super::{Params, RefillRow, TRIALS};
use crate::experiments::{ExperimentError, Phase, PhaseError, Session};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// ratelab's bucket: a denial refreshes the expiry.
const REFRESH: &str = include_str!("../../limiter/lua/token_bucket.lua");
/// The same without the denial's PEXPIRE.
const NO_REFRESH: &str = include_str!("lua/bucket_no_denial_refresh.lua");
/// Seed 000's bucket, on Redis's TIME or the caller's clock.
const SEED: &str = include_str!("lua/seed_bucket_caller_clock.lua");

/// Which script decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Script {
    Refresh,
    NoRefresh,
    Seed,
}

impl Script {
    fn name(self) -> &'static str {
        match self {
            Script::Refresh => "refresh",
            Script::NoRefresh => "no-refresh",
            Script::Seed => "seed",
        }
    }

    fn source(self) -> &'static str {
        match self {
            Script::Refresh => REFRESH,
            Script::NoRefresh => NO_REFRESH,
            Script::Seed => SEED,
        }
    }
}

/// One configuration: the script, whose clock, the callers' skew, the expiry and the bucket.
#[derive(Debug, Clone, Copy)]
struct Config {
    drill: &'static str,
    script: Script,
    caller_clock: bool,
    skew_ms: u64,
    short_ttl: bool,
    ttl_ms: u64,
    capacity: u64,
    refill_per_sec: f64,
}

/// The expiry drill's four (each script, short and covering expiry) and the clock drill's three.
fn configs(p: &Params) -> Vec<Config> {
    let expiry = |script, short_ttl| Config {
        drill: "expiry",
        script,
        caller_clock: false,
        skew_ms: 0,
        short_ttl,
        ttl_ms: if short_ttl {
            p.short_ttl_ms
        } else {
            p.full_ttl_ms()
        },
        capacity: p.expiry_capacity,
        refill_per_sec: p.expiry_refill_per_sec,
    };
    let clock_ttl_ms =
        (p.clock_capacity as f64 / p.clock_refill_per_sec * 1000.0).ceil() as u64 + 1000;
    let clock = |caller_clock, skew_ms| Config {
        drill: "clock",
        script: Script::Seed,
        caller_clock,
        skew_ms,
        short_ttl: false,
        ttl_ms: clock_ttl_ms,
        capacity: p.clock_capacity,
        refill_per_sec: p.clock_refill_per_sec,
    };
    vec![
        expiry(Script::Refresh, true),
        expiry(Script::NoRefresh, true),
        expiry(Script::Refresh, false),
        expiry(Script::NoRefresh, false),
        clock(true, p.skew_ms),
        clock(true, 0),
        clock(false, p.skew_ms),
    ]
}

pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let mut sink = TRIALS.create(&s.run.staging)?;
    let configs = configs(p);
    // Per configuration, over its trials: (admitted, what the rate allows).
    let mut totals = vec![(0u64, 0u64); configs.len()];
    for trial in 0..p.trials {
        let what = || format!("trial {trial} of every configuration");
        let mut cons = Vec::with_capacity(configs.len());
        for _ in &configs {
            cons.push(s.target.connection().phase(what)?);
        }
        let keys: Vec<String> = (0..configs.len())
            .map(|i| s.key(format!("refill:{trial}:{i}")))
            .collect();
        let results: Vec<Result<RefillRow, PhaseError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (configs.iter().zip(cons).zip(&keys))
                .map(|((c, mut con), key)| scope.spawn(move || hammer(&mut con, c, key, p, trial)))
                .collect();
            (handles.into_iter())
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(PhaseError::Invalid("a client panicked".into())))
                })
                .collect()
        });
        for (row, total) in results.into_iter().zip(&mut totals) {
            let row = row.phase(what)?;
            sink.write(&row)?;
            total.0 += row.admitted;
            total.1 += row.limit_admits;
        }
    }
    s.target
        .check_alive()
        .phase(|| "checking the server".into())?;
    for (c, (admitted, allowed)) in configs.iter().zip(totals) {
        s.note(format!(
            "{} {} ({} clock, skew {} ms, expiry {} ms): {admitted} admitted where the rate allows {allowed}.",
            c.drill,
            c.script.name(),
            if c.caller_clock { "caller's" } else { "Redis's" },
            c.skew_ms,
            c.ttl_ms
        ));
    }
    Ok(())
}

/// One client calling `key` every `interval_us` for `run_ms`; with a caller's clock, the calls
/// alternate between a clock `skew_ms / 2` ahead and one as far behind.
fn hammer(
    con: &mut redis::Connection,
    c: &Config,
    key: &str,
    p: &Params,
    trial: u32,
) -> Result<RefillRow, PhaseError> {
    let script = redis::Script::new(c.script.source());
    let (interval, run) = (
        Duration::from_micros(p.interval_us),
        Duration::from_millis(p.run_ms),
    );
    let start = Instant::now();
    let (mut calls, mut admitted, mut found_full) = (0u64, 0u64, 0u64);
    let mut last_reply = start;
    while last_reply.duration_since(start) < run {
        let due = start + interval.saturating_mul(calls as u32);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let mut call = script.key(key);
        call.arg(c.capacity).arg(c.refill_per_sec);
        if c.script == Script::Refresh {
            call.arg(1); // cost
        }
        call.arg(c.ttl_ms);
        if c.script == Script::Seed {
            call.arg(match c.caller_clock {
                true => caller_clock_ms(c.skew_ms, calls).to_string(),
                false => String::new(),
            });
        }
        let reply: Vec<i64> = call.invoke(con)?;
        last_reply = Instant::now();
        let (allowed, left) = match reply[..] {
            [allowed, left, ..] => (allowed == 1, left),
            _ => {
                return Err(PhaseError::Invalid(format!(
                    "{key}: the script answered {reply:?}"
                )))
            }
        };
        if allowed {
            admitted += 1;
            found_full += u64::from(calls > 0 && left == c.capacity as i64 - 1);
        }
        calls += 1;
    }
    let elapsed_ms = last_reply.duration_since(start).as_secs_f64() * 1e3;
    Ok(RefillRow {
        drill: c.drill.into(),
        script: c.script.name().into(),
        clock: if c.caller_clock { "caller" } else { "redis" }.into(),
        callers: match (c.drill, c.skew_ms) {
            ("expiry", _) => "one",
            (_, 0) => "same-clock",
            _ => "skewed",
        }
        .into(),
        skew_ms: c.skew_ms,
        expiry: if c.short_ttl { "short" } else { "full-refill" }.into(),
        ttl_ms: c.ttl_ms,
        capacity: c.capacity,
        refill_per_sec: c.refill_per_sec,
        trial,
        calls,
        admitted,
        elapsed_ms,
        limit_admits: limit_admits(c.capacity, c.refill_per_sec, elapsed_ms),
        found_full,
    })
}

/// The most a bucket that starts full allows over `elapsed_ms`. Both clocks are read in whole
/// ms, so the span either read may be up to 1 ms longer than the harness's.
fn limit_admits(capacity: u64, refill_per_sec: f64, elapsed_ms: f64) -> u64 {
    capacity + (refill_per_sec * (elapsed_ms + 1.0) / 1000.0).floor() as u64
}

/// The caller's clock for call `n`, Unix ms: even calls `skew_ms / 2` ahead, odd ones behind.
fn caller_clock_ms(skew_ms: u64, n: u64) -> i64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let half = skew_ms as f64 / 2.0;
    let offset = if n.is_multiple_of(2) { half } else { -half };
    (now.as_secs_f64() * 1e3 + offset).floor() as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_allows_capacity_and_what_refilled_in_whole_tokens() {
        assert_eq!(limit_admits(20, 2.0, 0.0), 20);
        assert_eq!(limit_admits(20, 2.0, 2000.0), 24);
        assert_eq!(limit_admits(100, 100.0, 1998.5), 299);
    }

    #[test]
    fn the_callers_clocks_alternate_about_now() {
        let ahead = caller_clock_ms(10, 0);
        let behind = caller_clock_ms(10, 1);
        assert!((9..=11).contains(&(ahead - behind)), "{ahead} {behind}");
        assert!((0..=1).contains(&(caller_clock_ms(0, 0) - caller_clock_ms(0, 1)).abs()));
    }
}
