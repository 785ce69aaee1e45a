//! pods' measurement: the sink (and, for the round-trip sweep, the fault proxy) for the whole
//! experiment, then every configuration of every trial, rows written as each run ends.

use super::run::One;
use super::Params;
use super::{RUNS, SECONDS};
use crate::experiments::{ExperimentError, Phase as _, PhaseError, Session};
use crate::fault::proxy::proxied_url;
use crate::fault::{Fault, ProxyThread};
use crate::load::rng::SplitMix64;
use crate::load::sink::Sink;
use crate::load::LoadError;
use crate::server::ServerError;
use std::time::Duration;

pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let mut seconds = SECONDS.create(&s.run.staging)?;
    let mut runs = RUNS.create(&s.run.staging)?;
    let sink = Sink::start()
        .map_err(LoadError::Io)
        .phase(|| "starting the sink".into())?;
    let configs = p.configs(&s.ctx.limiters);
    let direct = s.target.url();
    // The proxy only when some run adds a round trip; it forwards on a thread of its own.
    let proxy = match configs.iter().any(|c| c.rtt_ms > 0.0) {
        false => None,
        true => {
            let what = || "starting the fault proxy".to_string();
            let (upstream, template) = proxied_url(&direct)
                .ok_or_else(|| PhaseError::Invalid(format!("cannot proxy {direct}")))
                .phase(what)?;
            let proxy = ProxyThread::start(upstream, s.ctx.seed)
                .map_err(ServerError::from)
                .phase(what)?;
            let url = template.replace("{}", &proxy.proxy().addr().to_string());
            Some((proxy, url))
        }
    };
    let (mut sent, mut reached) = (0u64, 0u64);
    let runs_planned: u32 = configs.iter().map(|c| c.trials).sum();
    let bar = s.progress(u64::from(runs_planned));
    // Trial by trial, so one configuration's trials are spread over the experiment's time.
    let most = configs.iter().map(|c| c.trials).max().unwrap_or(0);
    for trial in 0..most {
        let due = configs.iter().enumerate().filter(|(_, c)| trial < c.trials);
        for (i, c) in due {
            let url = match (&proxy, c.rtt_ms > 0.0) {
                (Some((proxy, url)), true) => {
                    proxy.proxy().set(Fault::Delay {
                        fixed: Duration::from_secs_f64(c.rtt_ms / 1000.0),
                        jitter: Duration::ZERO,
                    });
                    url.clone()
                }
                _ => direct.clone(),
            };
            let one = One {
                config: *c,
                trial,
                key: s.key(format!(
                    "{}:{}:{}:{}:{}:{}:{trial}",
                    c.strategy, c.pods, c.offered_rps, c.rtt_ms, c.work_ms, c.skew_ms
                )),
                url,
                seed: SplitMix64::new(s.ctx.seed, (u64::from(trial) << 16) | i as u64).next_u64(),
                sink: &sink,
            };
            let measured = one.measure(s, p)?;
            for row in &measured.seconds {
                seconds.write(row)?;
            }
            (sent, reached) = (sent + measured.run.sent, reached + measured.run.reached);
            runs.write(&measured.run)?;
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    s.note(format!(
        "Over all runs the pods sent {sent} requests to the sink and it received {reached} (per run: \
        runs.csv, lost = sent - received)."
    ));
    Ok(())
}
