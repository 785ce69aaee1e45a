//! cost's measurement.

use super::rows::CostRow;
use super::{variants, Params, Variant};
use crate::experiments::measure::{measure, Measured};
use crate::experiments::{ExperimentError, Session};
use crate::load::{KeyChoice, Stop, WorkerSpec};

pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let mut rows = s.csv::<CostRow>("cost.csv")?;
    let variants = variants(p);
    let bar = s.progress(p.runs as u64 * variants.len() as u64);
    for r in 0..p.runs {
        for v in &variants {
            let name = if v.label.is_empty() {
                v.strategy.to_string()
            } else {
                format!("{} ({})", v.strategy, v.label)
            };
            let key_prefix = s.key(format!("{}:{}:", v.strategy, v.label));
            let keys = if v.hot_key {
                KeyChoice::One(format!("{key_prefix}hot"))
            } else {
                KeyChoice::Uniform {
                    prefix: key_prefix,
                    count: p.keys,
                }
            };
            let spec = WorkerSpec {
                connections: p.clients,
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
            plan.template.stop = Stop::AfterMs((p.run_seconds * 1000.0) as u64);
            let m = measure(&s.target, &plan, &|| format!("run {r} of {name}"))?;
            rows.write(&row(v, r, p, &m))?;
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok(())
}

fn row(v: &Variant, run: u32, p: &Params, m: &Measured) -> CostRow {
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
        clients: p.clients,
        keys: if v.hot_key { 1 } else { p.keys },
        duration_s: m.tally.elapsed_ns as f64 / 1e9,
        decisions,
        decisions_per_s: m.decisions_per_s(),
        allowed: m.tally.admitted,
        denied: m.tally.denied,
        errors: m.tally.errors,
        redis_cpu_us: m.server.main_thread_cpu_us,
        cpu_us_per_decision: m.cpu_us_per_decision(),
        redis_busy_pct: m.server.busy_pct(),
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
