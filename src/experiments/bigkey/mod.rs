//! # bigkey
//! Hypothesis (seed 002): Redis runs one command at a time, so one command on one big key stops
//! every other client. A sliding log whose client used its whole limit and went quiet for longer
//! than the window is trimmed by the script's ZREMRANGEBYSCORE in one call: 27 ms for 100,000
//! entries, 404 ms for 1,000,000. The key's own expiry frees the whole set inline with
//! lazyfree-lazy-expire no (Redis 7.0's default): 226 ms for 1,000,000; with yes a background
//! thread frees it and no expiry blocks Redis for 1 ms or more.
//!
//! Method: one managed server with latency-monitor-threshold 1 ms and every command logged to
//! SLOWLOG. Per (repeat, entries, lazyfree, operation) a fresh log of `entries` entries is built
//! with pipelined ZADD batches (members in the limiter's own format, scores spread over the window
//! before last). A probe thread then PINGs every `probe_period_us` on its own connection,
//! recording each round trip with its send time on the monotonic clock; after `baseline_ms` the
//! operation runs: `trim` is one ZREMRANGEBYSCORE removing every entry (timed by the harness and by
//! SLOWLOG), `expire` is a PEXPIRE `expire_after_ms` ahead and a wait, polling DBSIZE (which never
//! touches the key), until the key has gone and `lazyfree_pending_objects` is 0. The probe's worst
//! round trip overlapping the operation is the stall every client saw; LATENCY LATEST is the
//! server's own view
//! (its events at or above 1 ms).
//!
//! Writes `bigkey/bigkey.csv` (one row per operation), `bigkey/meta.json`.

mod charts;
mod ops;
mod report;
mod rows;

pub use ops::{Operation, YesNo};
pub use rows::BigkeyRow;

use super::{
    Body, Definition, ExperimentError, Phase, PhaseError, Render, Session, Summarize, Validate,
};
use crate::load::probe::{Probe, ProbeLog};
use crate::load::rng::SplitMix64;
use crate::record::Table;
use crate::server::{admin, Target};
use ops::{Log, Outcome};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The bigkey experiment.
pub struct Bigkey;

impl Definition for Bigkey {
    const ID: &'static str = "bigkey";
    const TOML: &'static str = include_str!("../../../experiments/bigkey.toml");
    const MUST_OWN_SERVER: Option<&'static str> = Some(
        "it sets lazyfree-lazy-expire, latency-monitor-threshold and SLOWLOG, and stalls the server on purpose",
    );
    type Params = Params;

    const BODY: Body<Params> = body;
    const CHARTS: Render = charts::render;
    const SUMMARY: Summarize = report::summary;

    fn tables() -> Vec<Table> {
        vec![Table::of::<BigkeyRow>("bigkey.csv")]
    }
}

/// Parameters; defaults in `experiments/bigkey.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub repeats: u32,
    pub entries: Vec<u64>,
    pub operations: Vec<Operation>,
    pub lazyfree: Vec<YesNo>,
    pub probe_period_us: u64,
    pub baseline_ms: u64,
    pub expire_after_ms: u64,
    pub window_ms: u64,
    pub zadd_batch: u64,
    pub pipeline: usize,
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        let p = self;
        let ok = p.repeats > 0
            && !p.entries.is_empty()
            && p.entries.iter().all(|&n| n > 0)
            && !p.operations.is_empty()
            && !p.lazyfree.is_empty()
            && p.probe_period_us > 0
            && p.window_ms > 0
            && p.zadd_batch > 0
            && p.pipeline > 0;
        if ok {
            return Ok(());
        }
        Err("repeats, entries (each), probe_period_us, window_ms, zadd_batch, pipeline must be >= 1; \
             operations and lazyfree non-empty"
            .into())
    }
}

/// Turns on the server's own latency records; returns what is now in effect.
fn configure(target: &Target) -> Result<String, crate::server::ServerError> {
    let mut con = target.connection()?;
    let settings = [
        ("latency-monitor-threshold", "1"),
        ("slowlog-log-slower-than", "0"),
        ("slowlog-max-len", "1024"),
    ];
    let mut out = Vec::new();
    for (name, value) in settings {
        out.push(format!(
            "{name} {}",
            admin::config_set(&mut con, name, value)?
        ));
    }
    Ok(out.join(", "))
}

fn body(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let configured = configure(&s.target).phase(|| "configuring the latency monitor".into())?;
    s.note(format!("Server configured for this run: {configured}."));
    let mut rows = s.csv::<BigkeyRow>("bigkey.csv")?;
    let total = p.repeats as usize * p.entries.len() * p.lazyfree.len() * p.operations.len();
    let bar = s.progress(total as u64);
    let member_prefix = SplitMix64::new(s.ctx.seed, 0).next_u64() >> 16;
    for repeat in 0..p.repeats {
        for &entries in &p.entries {
            for &lazy in &p.lazyfree {
                for &op in &p.operations {
                    let what = || {
                        format!(
                            "{op:?} of {entries} entries, lazyfree-lazy-expire {}, repeat {repeat}",
                            lazy.as_str()
                        )
                    };
                    let key = s.key(format!("{entries}:{}:{repeat}:{op:?}", lazy.as_str()));
                    let log = Log {
                        key: &key,
                        entries,
                        window_ms: p.window_ms,
                        member_prefix,
                    };
                    rows.write(&one(s, p, &log, op, lazy, repeat).phase(what)?)?;
                    bar.inc(1);
                }
            }
        }
    }
    bar.finish_and_clear();
    Ok(())
}

/// Builds one log, runs one operation on it under the probe, and reads what everyone saw.
fn one(
    s: &Session,
    p: &Params,
    log: &Log,
    op: Operation,
    lazy: YesNo,
    repeat: u32,
) -> Result<BigkeyRow, PhaseError> {
    let (ctx, target) = (s.ctx, &s.target);
    let mut con = target.connection()?;
    admin::config_set(&mut con, "lazyfree-lazy-expire", lazy.as_str())?;
    let build_s = ops::build(&mut con, log, p.zadd_batch, p.pipeline)?;
    let key_bytes: u64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(log.key)
        .query(&mut con)?;
    redis::cmd("LATENCY").arg("RESET").query::<()>(&mut con)?;
    let probe = Probe::start(
        &target.url(),
        Duration::from_micros(p.probe_period_us),
        ctx.timeouts,
    )?;
    let probe_started = std::time::Instant::now();
    std::thread::sleep(Duration::from_millis(p.baseline_ms));
    let outcome = match op {
        Operation::Trim => ops::trim(&mut con, log),
        Operation::Expire => ops::expire(&mut con, log, p.expire_after_ms),
    };
    // Stop the probe whatever happened, so its thread never outlives the operation.
    let seen = probe.stop()?;
    let outcome = outcome?;
    if outcome.removed != log.entries {
        return Err(PhaseError::Invalid(format!(
            "removed {} of {} entries",
            outcome.removed, log.entries
        )));
    }
    probe_ok(&seen)?;
    let events = ops::latency_latest(&mut con)?;
    let server_blocked_ms = (events.iter())
        .filter(|(name, _)| ops::is_own_event(op, name))
        .map(|e| e.1)
        .fold(0.0, f64::max);
    let latency_events: Vec<String> = events.iter().map(|(n, ms)| format!("{n}={ms}")).collect();
    let baseline = seen.histogram(probe_started, outcome.from)?;
    Ok(BigkeyRow {
        operation: op,
        entries: log.entries,
        lazyfree: lazy,
        repeat,
        removed: outcome.removed,
        key_bytes,
        command_ms: outcome.command_ms,
        slowlog_ms: outcome.slowlog_ms,
        probe_max_stall_ms: seen.max_overlapping_ns(outcome.from, outcome.to) as f64 / 1e6,
        probe_p50_ms: baseline.value_at_quantile(0.5) as f64 / 1e6,
        probe_baseline_max_ms: baseline.max() as f64 / 1e6,
        probe_pings: seen.overlapping(outcome.from, outcome.to).count() as u64,
        server_blocked_ms,
        latency_events: latency_events.join(" "),
        background_free_ms: outcome.background_free_ms,
        span_ms: span_ms(&outcome),
        build_s,
    })
}

fn span_ms(o: &Outcome) -> f64 {
    o.to.saturating_duration_since(o.from).as_secs_f64() * 1e3
}

/// A PING that failed is a lost measurement, not a latency: the run is invalid.
fn probe_ok(seen: &ProbeLog) -> Result<(), PhaseError> {
    match seen.errors {
        0 => Ok(()),
        n => Err(PhaseError::Invalid(format!(
            "{n} probe PINGs failed; first: {}",
            seen.first_error.clone().unwrap_or_default()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_profiles_are_valid_and_sweep_lazyfree_both_ways() {
        for profile in [
            crate::context::Profile::Quick,
            crate::context::Profile::Full,
        ] {
            let p = crate::experiments::frame::resolve::<Bigkey>(profile, &[]).unwrap();
            p.validate().unwrap();
            assert_eq!(p.lazyfree, [YesNo::No, YesNo::Yes]);
            assert_eq!(p.operations, [Operation::Trim, Operation::Expire]);
        }
        let sets = [(
            "operations".to_string(),
            r#"["trim", "delete"]"#.to_string(),
        )];
        let err =
            crate::experiments::frame::resolve::<Bigkey>(crate::context::Profile::Quick, &sets)
                .unwrap_err();
        assert!(
            matches!(err, crate::experiments::params::ParamError::BadValue { .. }),
            "{err}"
        );
    }
}
