//! bigkey's measurement.

use super::ops::{Log, Outcome};
use super::ops::{Operation, YesNo};
use super::rows::{BigkeyRow, Bio, BIGKEY};
use super::{configure, ops, threads, Params};
use crate::experiments::{ExperimentError, Phase, PhaseError, Session};
use crate::load::probe::{Probe, ProbeLog};
use crate::load::rng::SplitMix64;
use crate::record::CsvSink;
use crate::server::admin;
use std::time::Duration;

pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let configured = configure(&s.target).phase(|| "configuring the latency monitor".into())?;
    s.note(format!("Server configured for this run: {configured}."));
    let mut rows = BIGKEY.create(&s.run.staging)?;
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
                    rows.write(&one(s, p, &log, (op, lazy, Bio::Shared), repeat).phase(what)?)?;
                    bar.inc(1);
                }
            }
        }
    }
    bar.finish_and_clear();
    bio_idle(s, p, member_prefix, &mut rows)?;
    bio_apart(s, p, member_prefix, &mut rows)
}

/// The variation that tests whether the stall is the freeing thread taking the main thread's
/// core: the lazyfree-yes expiries again on the same server, its `bio_lazy_free` thread lowered
/// to SCHED_IDLE (it runs only when nothing else on the core wants to).
fn bio_idle(
    s: &mut Session,
    p: &Params,
    member_prefix: u64,
    rows: &mut CsvSink<BigkeyRow>,
) -> Result<(), ExperimentError> {
    if p.bio_idle_repeats == 0 {
        return Ok(());
    }
    let why = "it lowers the priority of the server's lazy-free thread";
    let pid = s
        .target
        .owned(why)
        .map_err(PhaseError::from)
        .phase(|| "the server's pid".into())?
        .pid();
    let Some(tid) = threads::thread_named(pid, threads::LAZY_FREE_THREAD) else {
        s.note(format!(
            "Background free at SCHED_IDLE: not run (redis-server {pid} has no {} thread).",
            threads::LAZY_FREE_THREAD
        ));
        return Ok(());
    };
    threads::make_idle(tid)
        .map_err(|e| PhaseError::Invalid(format!("SCHED_IDLE for thread {tid}: {e}")))
        .phase(|| "lowering the lazy-free thread".into())?;
    s.note(format!(
        "Background free at SCHED_IDLE (bio = idle): the same server, its {} thread (tid {tid}) lowered to \
         SCHED_IDLE; expiries with lazyfree-lazy-expire yes only, {} repeat(s).",
        threads::LAZY_FREE_THREAD,
        p.bio_idle_repeats
    ));
    lazy_expiries(s, p, member_prefix, rows, (Bio::Idle, p.bio_idle_repeats))
}

/// The variation that tests why LATENCY saw lazy-free expiries block: the expiries with
/// lazyfree yes again, on a fresh server whose background threads run on the harness's core
/// (`bio_cpulist`) and whose main thread has Redis's core to itself (`server_cpulist`).
fn bio_apart(
    s: &mut Session,
    p: &Params,
    member_prefix: u64,
    rows: &mut CsvSink<BigkeyRow>,
) -> Result<(), ExperimentError> {
    if p.bio_apart_repeats == 0 {
        return Ok(());
    }
    let (redis, harness) = (s.ctx.pin.redis.clone(), s.ctx.pin.harness.clone());
    if !s.target.is_managed() || redis.is_empty() || harness.is_empty() {
        s.note("Background threads apart: not run (needs a managed server pinned apart from the harness).");
        return Ok(());
    }
    let list = |cpus: &[usize]| {
        cpus.iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(",")
    };
    let (server_cpus, bio_cpus) = (list(&redis), list(&harness));
    s.fresh_server_with(|o| {
        o.cpus = redis.iter().chain(&harness).copied().collect();
        o.extra_args
            .push(("server_cpulist".into(), server_cpus.clone()));
        o.extra_args.push(("bio_cpulist".into(), bio_cpus.clone()));
    })
    .phase(|| "starting a server with its background threads apart".into())?;
    let configured = configure(&s.target).phase(|| "configuring the latency monitor".into())?;
    s.note(format!(
        "Background threads apart (bio = apart): a fresh server allowed CPUs {server_cpus},{bio_cpus}, \
         server_cpulist {server_cpus}, bio_cpulist {bio_cpus} (the harness's), {configured}; expiries \
         with lazyfree-lazy-expire yes only, {} repeat(s).",
        p.bio_apart_repeats
    ));
    lazy_expiries(s, p, member_prefix, rows, (Bio::Apart, p.bio_apart_repeats))
}

/// A variation's rows: every size's expiry with lazyfree-lazy-expire yes, `repeats` times.
fn lazy_expiries(
    s: &mut Session,
    p: &Params,
    member_prefix: u64,
    rows: &mut CsvSink<BigkeyRow>,
    (bio, repeats): (Bio, u32),
) -> Result<(), ExperimentError> {
    for repeat in 0..repeats {
        for &entries in &p.entries {
            let what = || {
                format!("expire of {entries} entries, background threads {bio:?}, repeat {repeat}")
            };
            let key = s.key(format!("{entries}:bio-{bio:?}:{repeat}"));
            let log = Log {
                key: &key,
                entries,
                window_ms: p.window_ms,
                member_prefix,
            };
            let setting = (Operation::Expire, YesNo::Yes, bio);
            rows.write(&one(s, p, &log, setting, repeat).phase(what)?)?;
        }
    }
    Ok(())
}

/// Builds one log, runs one operation on it under the probe, and reads what everyone saw.
fn one(
    s: &Session,
    p: &Params,
    log: &Log,
    (op, lazy, bio): (Operation, YesNo, Bio),
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
    let watched = target
        .owned("")
        .ok()
        .map(|server| threads::Watched::of(server.pid()));
    let before = watched.map(|w| w.read());
    let outcome = match op {
        Operation::Trim => ops::trim(&mut con, log),
        Operation::Expire => ops::expire(&mut con, log, p.expire_after_ms),
    };
    let spent =
        (watched.zip(before)).map_or_else(Default::default, |(w, b)| b.spent_until(&w.read()));
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
        bio,
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
        main_cpu_ms: spent.main_cpu_ms,
        main_run_queue_ms: spent.main_run_queue_ms,
        lazy_free_cpu_ms: spent.lazy_free_cpu_ms,
        lazy_free_run_queue_ms: spent.lazy_free_run_queue_ms,
        probe_run_queue_ms: (seen.slowest_overlapping(outcome.from, outcome.to))
            .and_then(|p| p.waited_ns)
            .map(|ns| ns as f64 / 1e6),
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
