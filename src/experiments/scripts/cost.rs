//! scripts's cost part: each way of invoking the bucket flat out from worker processes, with
//! Redis's CPU, its per-command time and the bytes it read and wrote around each measured run.

use super::bucket::{bucket_script, load_scripts};
use super::rows::{CostRow, COSTS};
use super::Params;
use crate::experiments::measure::{measure, Measured};
use crate::experiments::{ExperimentError, Phase, Session};
use crate::limiter::Invocation;
use crate::load::{KeyChoice, Stop, WorkerSpec};
use crate::server::{admin, ServerError};

/// What the sampler itself sends (its INFO calls and redis-rs's connection handshake), left out
/// of `other_commands`.
const SAMPLER_COMMANDS: [&str; 2] = ["info", "client|setinfo"];

pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let mut rows = COSTS.create(&s.run.staging)?;
    let bar = s.progress(u64::from(p.runs) * p.modes.len() as u64);
    let (source, _) = bucket_script(p);
    // The same buckets for every mode, so no mode runs on more data than another.
    let keys = KeyChoice::Uniform {
        prefix: s.key("cost:"),
        count: p.keys,
    };
    for run in 0..p.runs {
        for mode in rotated(&p.modes, run) {
            let what = || format!("cost run {run} of {mode}");
            let mut con = s.target.connection().phase(what)?;
            load_scripts(&mut con, source).phase(what)?;
            let warmup = Stop::AfterMs((p.warmup_seconds * 1000.0) as u64);
            let spec = WorkerSpec {
                connections: p.clients,
                invocation: mode,
                ..WorkerSpec::new(p.strategy, p.limit(), keys.clone(), warmup)
            };
            let mut plan = s.closed_loop(1, spec);
            plan.template.seed ^= u64::from(run);
            if p.warmup_seconds > 0.0 {
                measure(&s.target, &plan, &|| format!("warm-up {run} of {mode}"))?;
            }
            plan.template.stop = Stop::AfterMs((p.run_seconds * 1000.0) as u64);
            let before = NetBytes::read(&mut con).phase(what)?;
            let m = measure(&s.target, &plan, &what)?;
            let after = NetBytes::read(&mut con).phase(what)?;
            rows.write(&row(mode, run, p, &m, before.until(&after)))?;
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok(())
}

/// The modes in the order run `run` measures them: each run starts one further along, so no mode
/// always follows the same one. With one fixed order, EVALSHA measured right after EVAL cost 5-11%
/// more Redis CPU per decision than evalsha-eval, identical on the wire, measured after it.
fn rotated(modes: &[Invocation], run: u32) -> Vec<Invocation> {
    let mut order = modes.to_vec();
    if !order.is_empty() {
        let by = run as usize % order.len();
        order.rotate_left(by);
    }
    order
}

/// Bytes Redis has read from and written to clients so far (INFO stats).
#[derive(Debug, Clone, Copy, PartialEq)]
struct NetBytes {
    read: u64,
    written: u64,
}

impl NetBytes {
    fn read(con: &mut redis::Connection) -> Result<Self, ServerError> {
        Ok(NetBytes {
            read: admin::info_u64(con, "stats", "total_net_input_bytes")?,
            written: admin::info_u64(con, "stats", "total_net_output_bytes")?,
        })
    }

    fn until(&self, later: &NetBytes) -> NetBytes {
        NetBytes {
            read: later.read.saturating_sub(self.read),
            written: later.written.saturating_sub(self.written),
        }
    }
}

fn row(mode: Invocation, run: u32, p: &Params, m: &Measured, net: NetBytes) -> CostRow {
    let decisions = m.tally.admitted + m.tally.denied;
    let per_decision = |v: f64| {
        if decisions > 0 {
            v / decisions as f64
        } else {
            0.0
        }
    };
    let command = mode.command();
    let (command_calls, command_usec) = m.server.commands.get(command).copied().unwrap_or((0, 0));
    let other_commands: Vec<String> = (m.server.commands.iter())
        .filter(|(name, _)| name.as_str() != command && !SAMPLER_COMMANDS.contains(&name.as_str()))
        .map(|(name, (calls, usec))| format!("{name}:{calls}:{:.2}", *usec as f64 / *calls as f64))
        .collect();
    CostRow {
        mode,
        run,
        clients: p.clients,
        keys: p.keys,
        duration_s: m.tally.elapsed_ns as f64 / 1e9,
        decisions,
        decisions_per_s: m.decisions_per_s(),
        errors: m.tally.errors,
        noscript: m.tally.noscript,
        round_trips_per_decision: per_decision(m.tally.redis_calls as f64),
        redis_cpu_us: m.server.main_thread_cpu_us,
        cpu_us_per_decision: m.cpu_us_per_decision(),
        redis_busy_pct: m.server.busy_pct(),
        command: command.to_string(),
        command_calls,
        usec_per_call: match command_calls {
            0 => 0.0,
            calls => command_usec as f64 / calls as f64,
        },
        other_commands: other_commands.join(" "),
        bytes_in_per_decision: per_decision(net.read as f64),
        bytes_out_per_decision: per_decision(net.written as f64),
        client_cpu_s: m.client_cpu_s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_run_starts_one_mode_further() {
        let modes = [Invocation::Eval, Invocation::Evalsha, Invocation::Fcall];
        assert_eq!(rotated(&modes, 0), modes);
        assert_eq!(
            rotated(&modes, 1),
            [Invocation::Evalsha, Invocation::Fcall, Invocation::Eval]
        );
        assert_eq!(rotated(&modes, 3), modes);
        assert!(rotated(&[], 2).is_empty());
    }
}
