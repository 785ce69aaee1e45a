//! cost's measurement.

use super::logs::Logs;
use super::rows::CostRow;
use super::COST;
use super::{variants, Keys, Params, Variant};
use crate::experiments::measure::{measure, Measured};
use crate::experiments::{ExperimentError, Phase, Session};
use crate::load::rng::SplitMix64;
use crate::load::{pipelined, KeyChoice, Stop, WorkerSpec};
use crate::server::slowlog::{self, SlowLog};

pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let mut rows = COST.create(&s.run.staging)?;
    let variants = variants(p, &s.ctx.limiters);
    let bar = s.progress(p.runs as u64 * variants.len() as u64);
    let member_prefix = SplitMix64::new(s.ctx.seed, 0).next_u64() >> 16;
    for r in 0..p.runs {
        for v in &variants {
            let name = if v.label.is_empty() {
                v.strategy.to_string()
            } else {
                format!("{} ({})", v.strategy, v.label)
            };
            let key_prefix = s.key(format!("{}:{}:", v.strategy, v.label));
            let keys = match v.keys {
                Keys::Hot => KeyChoice::One(format!("{key_prefix}hot")),
                Keys::Uniform(count) | Keys::FullLogs(count) => KeyChoice::Uniform {
                    prefix: key_prefix.clone(),
                    count,
                },
            };
            let logs = match v.keys {
                Keys::FullLogs(keys) => Some(Logs {
                    prefix: &key_prefix,
                    keys,
                    limit: v.limit.capacity,
                    window_ms: v.limit.window_ms,
                    member_prefix,
                }),
                Keys::Uniform(_) | Keys::Hot => None,
            };
            let mut con = s
                .target
                .connection()
                .phase(|| format!("connecting for {name}"))?;
            if let Some(logs) = &logs {
                let what = || format!("filling the logs of {name} for run {r}");
                logs.fill(&mut con).phase(what)?;
            }
            let spec = WorkerSpec {
                connections: p.clients,
                in_flight: v.depth,
                // The lean client wherever it serves the strategy (every one-command decision and
                // MULTI INCR PEXPIRE EXEC): at one request per connection redis-rs's own CPU per
                // request left Redis idle (issue 39); the rows say which client ran.
                pipelined: true,
                ..WorkerSpec::new(
                    v.strategy,
                    v.limit,
                    keys,
                    Stop::AfterMs((p.warmup_seconds * 1000.0) as u64),
                )
            };
            let mut plan = s.closed_loop(1, spec);
            plan.template.seed ^= u64::from(r);
            if p.warmup_seconds > 0.0 {
                measure(&s.target, &plan, &|| format!("warm-up {r} of {name}"))?;
            }
            let seconds = match v.depth {
                1 => p.run_seconds,
                _ => p.depth_run_seconds,
            };
            plan.template.stop = Stop::AfterMs((seconds * 1000.0) as u64);
            let what = || format!("reading the slow log around run {r} of {name}");
            let slow_before = slowlog::newest_id(&mut con).phase(what)?;
            let m = measure(&s.target, &plan, &|| format!("run {r} of {name}"))?;
            let slow = slowlog::since(&mut con, slow_before).phase(what)?;
            let held = match &logs {
                Some(logs) => {
                    let what = || format!("counting the logs of {name} after run {r}");
                    let held = logs.held(&mut con).phase(what)?;
                    // Free them now: the next variants' runs should not share Redis's memory with them.
                    logs.delete(&mut con).phase(what)?;
                    Some(held)
                }
                None => None,
            };
            let client = match pipelined::serves(&plan.template) {
                true => "lean",
                false => "redis-rs",
            };
            rows.write(&row(v, r, p, &m, held, client, slow))?;
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok(())
}

/// Who set a run's rate: Redis when it was idle (waiting for requests) at most `max_idle_pct` of
/// the wall time, so a faster client could have added at most that; the client otherwise.
pub(super) fn rate_set_by(idle_pct: Option<f64>, max_idle_pct: f64) -> &'static str {
    match idle_pct {
        Some(idle) if idle <= max_idle_pct => "redis",
        Some(_) => "client",
        None => "unknown",
    }
}

/// The row of one run; `held` is (mean, smallest) entries of the variant's logs after it.
fn row(
    v: &Variant,
    run: u32,
    p: &Params,
    m: &Measured,
    held: Option<(f64, u64)>,
    client: &str,
    slow: SlowLog,
) -> CostRow {
    let decisions = m.tally.admitted + m.tally.denied;
    let (busiest_command, usec_per_call) = m.server.busiest_command().unwrap_or_default();
    let command_usec: u64 = m
        .server
        .commands
        .iter()
        .filter(|(name, _)| name.as_str() != "info")
        .map(|(_, (_, usec))| usec)
        .sum();
    CostRow {
        strategy: v.strategy,
        variant: v.label.clone(),
        run,
        depth: v.depth,
        client: client.into(),
        clients: p.clients,
        keys: v.keys.count(),
        limit: v.limit.capacity,
        window_ms: v.limit.window_ms,
        log_entries_per_key: held.map(|h| h.0),
        log_entries_min: held.map(|h| h.1),
        duration_s: m.tally.elapsed_ns as f64 / 1e9,
        decisions,
        decisions_per_s: m.decisions_per_s(),
        allowed: m.tally.admitted,
        denied: m.tally.denied,
        errors: m.tally.errors,
        redis_cpu_us: m.server.main_thread_cpu_us,
        cpu_us_per_decision: m.cpu_us_per_decision(),
        redis_busy_pct: m.server.busy_pct(),
        redis_waiting_for_cpu_pct: m.server.waiting_for_cpu_pct(),
        redis_idle_pct: m.server.idle_pct(),
        rate_set_by: rate_set_by(m.server.idle_pct(), p.redis_bound_idle_pct).into(),
        slowlog_threshold_us: Some(slow.threshold_us),
        slowlog_entries: Some(slow.entries),
        slowlog_script_entries: Some(slow.script_entries),
        slowlog_script_slowest_us: Some(slow.script_slowest_us),
        redis_off_cpu_us: m.server.off_cpu_us(),
        busiest_command,
        usec_per_call,
        command_usec_per_decision: if decisions > 0 {
            command_usec as f64 / decisions as f64
        } else {
            0.0
        },
        client_cpu_s: m.client_cpu_s,
    }
}

#[cfg(test)]
mod tests {
    use super::rate_set_by;

    #[test]
    fn redis_sets_the_rate_only_when_it_was_rarely_idle() {
        assert_eq!(rate_set_by(Some(0.4), 5.0), "redis");
        assert_eq!(rate_set_by(Some(5.0), 5.0), "redis");
        assert_eq!(rate_set_by(Some(12.0), 5.0), "client");
        assert_eq!(rate_set_by(None, 5.0), "unknown");
    }
}
