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

mod ops;

use super::common::{delete_keys_with_prefix, progress_bar, ExperimentError, Phase, RunRecord};
use super::params;
use crate::context::Ctx;
use crate::limiter::unix_ms;
use crate::load::probe::{Probe, ProbeLog};
use crate::load::rng::SplitMix64;
use crate::server::{admin, Target};
use ops::{Log, Outcome};
pub use ops::{Operation, YesNo};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

const ID: &str = "bigkey";

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

/// One operation on one big log.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BigkeyRow {
    pub operation: Operation,
    pub entries: u64,
    /// lazyfree-lazy-expire in effect.
    pub lazyfree: YesNo,
    pub repeat: u32,
    pub removed: u64,
    /// MEMORY USAGE of the log before the operation (Redis's default sampling).
    pub key_bytes: u64,
    /// trim: the command's round trip as the harness saw it (empty for expire: no command).
    pub command_ms: Option<f64>,
    /// trim: the command's own duration by SLOWLOG.
    pub slowlog_ms: Option<f64>,
    /// The worst PING round trip overlapping the operation: how long other clients waited.
    pub probe_max_stall_ms: f64,
    /// The probe's median round trip before the operation, for scale.
    pub probe_p50_ms: f64,
    /// The probe's worst round trip before the operation: what this machine's noise alone does.
    pub probe_baseline_max_ms: f64,
    /// PINGs overlapping the operation.
    pub probe_pings: u64,
    /// The operation's own event in LATENCY LATEST (`command` for trim, `expire-*` for expire),
    /// in ms: how long the main thread was blocked by its own account; 0 when under 1 ms.
    pub server_blocked_ms: f64,
    /// Every event LATENCY LATEST held, `name=max_ms`, worst first.
    pub latency_events: String,
    /// expire: from the key's disappearance until no object waited to be freed in the background.
    pub background_free_ms: Option<f64>,
    /// The span the probe was read over: the command's round trip, or expiry deadline to freed.
    pub span_ms: f64,
    pub build_s: f64,
}

fn validate(p: &Params) -> Result<(), params::ParamError> {
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
    Err(params::ParamError::Invalid {
        experiment: ID.into(),
        reason:
            "repeats, entries (each), probe_period_us, window_ms, zadd_batch, pipeline must be \
                 >= 1; operations and lazyfree non-empty"
                .into(),
    })
}

/// Runs the experiment into `ctx.out_dir/bigkey/`.
pub fn run(ctx: &Ctx) -> Result<PathBuf, ExperimentError> {
    let (p, table): (Params, _) = params::resolve(
        ID,
        super::Experiment::Bigkey.params_toml(),
        ctx.profile,
        &ctx.sets,
    )?;
    validate(&p)?;
    let mut target = ctx.target().phase(|| "starting redis-server".into())?;
    target
        .managed("it sets lazyfree-lazy-expire, latency-monitor-threshold and SLOWLOG, and stalls the server on purpose")
        .phase(|| "checking the server".into())?;
    let mut run = RunRecord::begin(ctx, ID, &table, &target)?;
    let configured = configure(&target).phase(|| "configuring the latency monitor".into())?;
    run.note(format!("Server configured for this run: {configured}."));
    run.note(format!("Build: ZADD commands of {} members, {} per round trip (pipelined), members `<12 hex>-<n hex>` as the limiter's, scores spread over the window before last ({} ms), so one ZREMRANGEBYSCORE -inf (now - window) removes every entry. The probe is not running during the build.", p.zadd_batch, p.pipeline, p.window_ms));
    run.note(format!("Probe: one PING at a time on its own connection and thread, one every {} µs, each timed on the monotonic clock from its send. probe_max_stall_ms is the slowest PING whose round trip overlapped the operation (trim: the command's round trip; expire: deadline until the key had gone and lazyfree_pending_objects was 0). The first {} ms of each probe are its baseline (probe_p50_ms), not part of the operation.", p.probe_period_us, p.baseline_ms));
    run.note("The probe's resolution is its period: an operation shorter than that may overlap no PING (probe_pings 0, probe_max_stall_ms 0); command_ms and slowlog_ms still time a trim.");
    run.note("Redis and its background threads are pinned to one core: with lazyfree-lazy-expire yes the thread freeing the log competes with the main thread for that core, which the probe sees and LATENCY (main-thread events only) does not.");
    let prefix = format!("ratelab:bigkey:{:x}:", unix_ms());
    let outcome = body(ctx, &p, &target, &mut run, &prefix);
    let cleaned = delete_keys_with_prefix(&target, &prefix);
    outcome?;
    cleaned.phase(|| "deleting this run's keys".into())?;
    run.finish(ctx)
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

fn body(
    ctx: &Ctx,
    p: &Params,
    target: &Target,
    run: &mut RunRecord,
    prefix: &str,
) -> Result<(), ExperimentError> {
    let mut rows = run
        .staging
        .csv::<BigkeyRow>("bigkey.csv")
        .phase(|| "opening bigkey.csv".into())?;
    let total = p.repeats as usize * p.entries.len() * p.lazyfree.len() * p.operations.len();
    let bar = progress_bar(ctx, ID, total as u64);
    let member_prefix = SplitMix64::new(ctx.seed, 0).next_u64() >> 16;
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
                    let key = format!("{prefix}{entries}:{}:{repeat}:{op:?}", lazy.as_str());
                    let log = Log {
                        key: &key,
                        entries,
                        window_ms: p.window_ms,
                        member_prefix,
                    };
                    let row = one(ctx, p, target, &log, op, lazy, repeat).phase(what)?;
                    rows.write(&row).phase(|| "writing bigkey.csv".into())?;
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
    ctx: &Ctx,
    p: &Params,
    target: &Target,
    log: &Log,
    op: Operation,
    lazy: YesNo,
    repeat: u32,
) -> Result<BigkeyRow, super::PhaseError> {
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
        return Err(super::PhaseError::Invalid(format!(
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
fn probe_ok(seen: &ProbeLog) -> Result<(), super::PhaseError> {
    match seen.errors {
        0 => Ok(()),
        n => Err(super::PhaseError::Invalid(format!(
            "{n} probe PINGs failed; first: {}",
            seen.first_error.clone().unwrap_or_default()
        ))),
    }
}

impl super::Validate for Params {
    fn validate(&self) -> Result<(), String> {
        match validate(self) {
            Err(params::ParamError::Invalid { reason, .. }) => Err(reason),
            Err(other) => Err(other.to_string()),
            Ok(()) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_profiles_are_valid_and_sweep_lazyfree_both_ways() {
        for profile in [params::Profile::Quick, params::Profile::Full] {
            let toml = super::super::Experiment::Bigkey.params_toml();
            let (p, _): (Params, _) = params::resolve(ID, toml, profile, &[]).unwrap();
            validate(&p).unwrap();
            assert_eq!(p.lazyfree, [YesNo::No, YesNo::Yes]);
            assert_eq!(p.operations, [Operation::Trim, Operation::Expire]);
        }
        let sets = [(
            "operations".to_string(),
            r#"["trim", "delete"]"#.to_string(),
        )];
        let toml = super::super::Experiment::Bigkey.params_toml();
        let err = params::resolve::<Params>(ID, toml, params::Profile::Quick, &sets).unwrap_err();
        assert!(matches!(err, params::ParamError::BadValue { .. }), "{err}");
    }
}
