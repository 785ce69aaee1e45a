//! chaos's measurement: per sequence (one store timeout, one or more clients side by side) a
//! fault proxy, the model service per client, the drills on a fixed timeline, then the
//! after-drill check; rows written per sequence.

use super::directions::Directions;
use super::pool::PoolDrill;
use super::rows::{AfterRow, BinRow, Drill, DrillRow, PoolBinRow, PoolRow, SwitchRow};
use super::rows::{AFTERS, BINS, DIRECTIONS, DRILLS, POOL, POOL_BINS, SWITCHES};
use super::service::{Served, Service, ServiceSpec, Trace};
use super::tally::{self, Window};
use super::timers::{Lateness, Watch};
use super::warm::{self, warm_up, LEAD};
use super::Params;
use crate::experiments::{ExperimentError, Phase as _, PhaseError, Session};
use crate::fault::{Fault, Proxy};
use crate::limiter::process::Reach;
use crate::limiter::{Decider, Invocation, Strategy};
use crate::load::drill::{self as engine, Ran, Schedule, When};
use crate::load::Arrivals;
use crate::record::CsvSink;
use crate::store::{Flaw, Outcome, Policy, Store};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// How long a reset may take to reach every connection before the proxy heals.
const RESET_WAIT: Duration = Duration::from_millis(200);

/// One store client of a sequence, each its own service: its policy and its flaw, if any, whether
/// its service is idle (a trickle of requests instead of the load), and the custom limiter
/// (`--limiter`) that decides instead of the built-in bucket, if any.
#[derive(Debug, Clone, Copy)]
struct Client {
    policy: Policy,
    flaw: Option<Flaw>,
    idle: bool,
    custom: Option<Strategy>,
}

impl Client {
    const CORRECT: Client = Client {
        policy: Policy::FailOpen,
        flaw: None,
        idle: false,
        custom: None,
    };

    /// Its name in the CSVs: `correct` (fail-open), `idle` (the correct one, idle),
    /// `fail-closed`, its flaw (fail-open), or its custom limiter's name (fail-open).
    fn name(self) -> String {
        if let Some(custom) = self.custom {
            return custom.to_string();
        }
        match (self.flaw, self.policy, self.idle) {
            (Some(flaw), _, _) => crate::record::csv_text(&flaw),
            (None, _, true) => "idle".to_string(),
            (None, Policy::FailOpen, false) => "correct".to_string(),
            (None, Policy::FailClosed, false) => "fail-closed".to_string(),
        }
    }

    /// Requests per second arriving at its service.
    fn rate_per_s(self, p: &Params) -> f64 {
        match self.idle {
            true => p.idle_rate_per_s,
            false => p.rate_per_s,
        }
    }
}

/// Each store timeout's sequence of the correct client, then the side sequence: the misconfigured
/// clients, the fail-closed one and each custom limiter beside the built-in bucket (correct,
/// fail-open: a library's own client through the proxy), side by side, with shorter drills.
fn sequences(p: &Params, customs: &[Strategy]) -> Vec<(u64, Vec<Client>)> {
    let mut out: Vec<(u64, Vec<Client>)> = (p.timeouts_ms.iter())
        .map(|&t| (t, vec![Client::CORRECT]))
        .collect();
    // The idle service beside the loaded one, through the same drills (seed 003: "An idle
    // system degrades beautifully").
    if let Some((_, clients)) = out.first_mut().filter(|_| p.idle_rate_per_s > 0.0) {
        clients.push(Client {
            idle: true,
            ..Client::CORRECT
        });
    }
    let flawed = p.flaws.iter().map(|&flaw| Client {
        flaw: Some(flaw),
        ..Client::CORRECT
    });
    let mut side: Vec<Client> = flawed.collect();
    if p.fail_closed {
        side.push(Client {
            policy: Policy::FailClosed,
            ..Client::CORRECT
        });
    }
    // The custom limiters beside the built-in bucket, both as the correct client, in one sequence:
    // compared side by side, not with another sequence's run.
    if !customs.is_empty() {
        let beside = std::iter::once(&Strategy::LuaBucket).chain(customs);
        side.extend(beside.map(|&custom| Client {
            custom: Some(custom),
            ..Client::CORRECT
        }));
    }
    if !side.is_empty() {
        out.push((p.flaw_timeout_ms, side));
    }
    out
}

pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let url = s.target.url();
    let (upstream, proxied) = proxied_url(&url).phase(|| "reading the server's address".into())?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(crate::server::ServerError::from)
        .phase(|| "building the async runtime".into())?;
    let customs: Vec<Strategy> = (s.ctx.limiters.iter().copied())
        .filter(|l| l.is_custom())
        .collect();
    let sequences = sequences(p, &customs);
    let mut sinks = Sinks {
        seconds: BINS.create(&s.run.staging)?,
        drills: DRILLS.create(&s.run.staging)?,
        afters: AFTERS.create(&s.run.staging)?,
        switches: SWITCHES.create(&s.run.staging)?,
        pool: POOL.create(&s.run.staging)?,
        pool_bins: POOL_BINS.create(&s.run.staging)?,
    };
    let bar = s.progress(sequences.len() as u64 + u64::from(!p.directions.is_empty()));
    for (i, (timeout_ms, clients)) in sequences.iter().enumerate() {
        let names: Vec<String> = clients.iter().map(|c| c.name()).collect();
        let what = || format!("the {timeout_ms} ms sequence ({})", names.join(", "));
        let seq = Sequence {
            p,
            upstream,
            proxied: &proxied,
            timeout: Duration::from_millis(*timeout_ms),
            clients,
            side: i >= p.timeouts_ms.len(),
            seed: s.ctx.seed.wrapping_add(i as u64),
            prefix: format!("{}{timeout_ms}:", s.prefix),
        };
        // The pool drill runs beside the first sequence, through a proxy of its own.
        let pool_drill = (i == 0 && p.pool_connections > 0).then(|| PoolDrill {
            p,
            upstream,
            proxied: &proxied,
            seed: s.ctx.seed.wrapping_add(0x9001),
            prefix: format!("{}pool:", s.prefix),
        });
        let (out, pooled) = rt.block_on(seq.run_beside(pool_drill.as_ref()));
        let out = out.phase(what)?;
        if let Some((places, bins)) = pooled.phase(|| "the pool drill".to_string())? {
            places.iter().try_for_each(|row| sinks.pool.write(row))?;
            bins.iter().try_for_each(|row| sinks.pool_bins.write(row))?;
        }
        sinks.sequence(p, *timeout_ms, &names, &out).phase(what)?;
        s.run.note(format!(
            "{} ms: proxy accepted {} connection(s); {}",
            timeout_ms, out.accepted, out.counters
        ));
        bar.inc(1);
    }
    let mut directions = DIRECTIONS.create(&s.run.staging)?;
    if !p.directions.is_empty() {
        let drills = Directions {
            p,
            upstream,
            direct: &url,
            proxied: &proxied,
            seed: s.ctx.seed.wrapping_add(sequences.len() as u64),
            prefix: format!("{}directions:", s.prefix),
        };
        let what = || "the blackhole directions' drills".to_string();
        for row in rt.block_on(drills.run()).phase(what)? {
            directions.write(&row)?;
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(())
}

/// The CSVs the sequences write.
struct Sinks {
    seconds: CsvSink<BinRow>,
    drills: CsvSink<DrillRow>,
    afters: CsvSink<AfterRow>,
    switches: CsvSink<SwitchRow>,
    pool: CsvSink<PoolRow>,
    pool_bins: CsvSink<PoolBinRow>,
}

impl Sinks {
    /// One sequence's rows: per client its bins, drill windows and after-drill check, then the
    /// proxy's switches.
    fn sequence(
        &mut self,
        p: &Params,
        timeout_ms: u64,
        names: &[String],
        out: &SequenceOut,
    ) -> Result<(), PhaseError> {
        for (name, trace, after) in &out.clients {
            let spec = tally::Spec {
                client: name,
                timeout_ms,
                workers: p.workers as u64,
                injected_ms: p.injected_ms,
                bin_ms: p.bin_ms,
            };
            if let Some(e) = &trace.first_error {
                return Err(PhaseError::Invalid(format!("{name}: limiter error: {e}")));
            }
            for row in tally::bins(&spec, trace, &out.windows) {
                self.seconds.write(&row)?;
            }
            for mut row in tally::drills(&spec, trace, &out.windows) {
                let window = out.windows.iter().find(|w| w.drill == row.drill);
                let (tokio, precise) = window.map_or((None, None), |w| {
                    out.lateness.medians_in(w.start_ns, w.end_ns)
                });
                (row.tokio_timer_late_p50_ms, row.precise_timer_late_p50_ms) = (tokio, precise);
                self.drills.write(&row)?;
            }
            self.afters.write(after)?;
        }
        for (at_ms, fault) in &out.switches {
            self.switches.write(&SwitchRow {
                clients: names.join("+"),
                timeout_ms,
                at_ms: *at_ms,
                fault: fault.clone(),
            })?;
        }
        Ok(())
    }
}

/// The server's address, and a URL template with `{}` where the proxy's address goes (credentials
/// and database kept).
fn proxied_url(url: &str) -> Result<(SocketAddr, String), PhaseError> {
    let shown = crate::server::endpoint::masked(url);
    if crate::server::endpoint::is_tls(url) {
        // The server's certificate names the server, not a proxy on another port.
        return Err(PhaseError::Invalid(format!(
            "chaos puts a plain TCP proxy in front of the server, which TLS refuses: run it \
             against a redis:// URL ({shown})"
        )));
    }
    crate::fault::proxy::proxied_url(url)
        .ok_or_else(|| PhaseError::Invalid(format!("cannot put a proxy in front of {shown}")))
}

/// One sequence of drills.
struct Sequence<'a> {
    p: &'a Params,
    upstream: SocketAddr,
    proxied: &'a str,
    timeout: Duration,
    clients: &'a [Client],
    /// The side sequence (misconfigured and fail-closed clients): shorter drills.
    side: bool,
    seed: u64,
    prefix: String,
}

/// The pool drill's rows, if it ran.
type PoolResult = Result<Option<(Vec<PoolRow>, Vec<PoolBinRow>)>, PhaseError>;

/// What a sequence measured.
struct SequenceOut {
    clients: Vec<(String, Trace, AfterRow)>,
    /// The store timeout's length slept on tokio's timer and on a precise one beside the drills.
    lateness: Lateness,
    windows: Vec<Window>,
    /// (ms after the schedule's start, fault)
    switches: Vec<(f64, String)>,
    accepted: u64,
    counters: String,
}

impl Sequence<'_> {
    async fn run(&self) -> Result<SequenceOut, PhaseError> {
        let p = self.p;
        let proxy = Proxy::start(self.upstream, self.seed)
            .await
            .map_err(crate::server::ServerError::from)?;
        let url = self.proxied.replace("{}", &proxy.addr().to_string());
        let mut stores = Vec::new();
        for &client in self.clients {
            let settings = warm::settings(self.timeout, client.policy, client.flaw);
            let store = warm::store(&url, self.decider(client, &url).await?, settings)?;
            // A key per client: a custom limiter's keys may hold another type than the bucket's.
            let name = client.name();
            (warm_up(&store, &format!("{}warmup:{name}", self.prefix)).await)
                .map_err(|e| PhaseError::Invalid(format!("{name}: {e}")))?;
            stores.push((name, Arc::new(store)));
        }
        let t0 = Instant::now() + LEAD;
        let timers = Watch::start(self.timeout, t0.into_std())
            .map_err(|e| PhaseError::Invalid(format!("the timers beside the drills: {e}")))?;
        let plan = Plan::of(p, self.side);
        let (services, schedules) = self.services(&stores, &plan, t0);
        let samplers: Vec<_> = (services.iter())
            .map(|s| tokio::spawn(Arc::clone(s).sample_until_finished()))
            .collect();
        let serving = services.clone();
        let ran = (plan.drill(&proxy, t0.into_std(), Schedule::streams(schedules), p))
            .run(move |call| serving[call.tag as usize].request(call))
            .await?;
        let lateness = timers.finish();
        let mut traces = Vec::new();
        for (i, (service, sampler)) in services.iter().zip(samplers).enumerate() {
            let mine: Vec<_> = ran.records.iter().filter(|r| r.tag == i as u64).collect();
            let trace = service.finish(&mine);
            // The sampler only ever sleeps and samples: it cannot fail but by a panic.
            sampler
                .await
                .map_err(|e| PhaseError::Invalid(format!("the pool's sampler failed: {e}")))?;
            traces.push(trace);
        }
        proxy.heal();
        let mut clients = Vec::new();
        let mut counters = Vec::new();
        for ((name, store), trace) in stores.iter().zip(traces) {
            let key = format!("{}after:{name}", self.prefix);
            let after = after_check(store, &key, name, self.timeout, p).await?;
            // A limiter process that fell silent in the last checks stops the run here.
            (store.settle()).map_err(|e| PhaseError::Invalid(format!("{name}: {e}")))?;
            let c = serde_json::to_string(&store.counters()).unwrap_or_default();
            counters.push(format!("{name} store counters {c}"));
            clients.push((name.clone(), trace, after));
        }
        let switches = (proxy.switches().iter())
            .map(|s| (ran.ns(s.at) as f64 / 1e6, s.fault.to_string()))
            .collect();
        let accepted = proxy.accepted();
        drop(proxy);
        Ok(SequenceOut {
            clients,
            lateness,
            windows: plan.windows(&ran),
            switches,
            accepted,
            counters: counters.join("; "),
        })
    }

    /// Who decides for `client`: the built-in bucket, or its custom limiter (a limiter process's
    /// adapter started against `url`, the proxy, with the store's timeout as its client's). The
    /// adapter connects while its handshake is awaited: off this runtime, which runs the proxy.
    async fn decider(&self, client: Client, url: &str) -> Result<Decider, PhaseError> {
        let Some(custom) = client.custom else {
            return Ok(self.p.limiter().into());
        };
        let reach = Reach::to(url, self.timeout.as_millis() as u64);
        let spec = self.p.spec();
        let start = move || Decider::reaching(custom, spec, Invocation::default(), &reach);
        (tokio::task::spawn_blocking(start).await)
            .map_err(|e| PhaseError::Invalid(format!("starting {custom}: {e}")))?
            .map_err(PhaseError::from)
    }

    /// The sequence, and the pool drill beside it when there is one.
    async fn run_beside(
        &self,
        pool: Option<&PoolDrill<'_>>,
    ) -> (Result<SequenceOut, PhaseError>, PoolResult) {
        let pooled = async {
            match pool {
                Some(drill) => drill.run().await.map(Some),
                None => Ok(None),
            }
        };
        tokio::join!(self.run(), pooled)
    }

    /// A service per client, and its Poisson schedule over the whole plan.
    fn services(
        &self,
        stores: &[(String, Arc<Store>)],
        plan: &Plan,
        t0: Instant,
    ) -> (Vec<Arc<Service>>, Vec<Vec<u64>>) {
        let p = self.p;
        let mut services = Vec::new();
        let mut schedules = Vec::new();
        for (i, ((name, store), client)) in stores.iter().zip(self.clients).enumerate() {
            let spec = ServiceSpec {
                workers: p.workers,
                queue_max: p.queue_max,
                queue_wait: Duration::from_millis(p.queue_wait_ms),
                work: Duration::from_millis(p.work_ms),
                keys: p.keys,
                key_prefix: format!("{}{name}:", self.prefix),
                sample_every: Duration::from_millis(p.sample_ms),
            };
            let seed = self.seed.wrapping_mul(31).wrapping_add(i as u64);
            let arrivals = Arrivals::Poisson {
                rate_per_s: client.rate_per_s(p),
                duration_ms: plan.total_ms(),
            };
            schedules.push(arrivals.schedule(seed));
            services.push(Service::new(Arc::clone(store), spec, seed, t0));
        }
        (services, schedules)
    }
}

/// The drills' timeline, ms after the schedule's start.
struct Plan {
    /// (drill, length ms) in order.
    windows: Vec<(Drill, u64)>,
}

impl Plan {
    /// The timeline of a sequence; `side`: the misconfigured and fail-closed clients', with
    /// shorter drills.
    fn of(p: &Params, side: bool) -> Plan {
        let (blackhole, latency) = match side {
            true => (p.flaw_drill_ms, p.flaw_drill_ms),
            false => (p.blackhole_drill_ms, p.latency_drill_ms),
        };
        let windows = vec![
            (Drill::Baseline, p.baseline_ms),
            (Drill::Blackhole, blackhole),
            (Drill::AfterBlackhole, p.settle_ms),
            (Drill::Latency, latency),
            (Drill::AfterLatency, p.settle_ms),
            (Drill::Reset, p.settle_ms),
        ];
        Plan { windows }
    }

    fn total_ms(&self) -> u64 {
        self.windows.iter().map(|w| w.1).sum()
    }

    /// The drill: every window after the baseline opens with its proxy switch, and the drill
    /// lasts until the last window's planned end.
    fn drill<'a>(
        &self,
        proxy: &'a Proxy,
        t0: std::time::Instant,
        schedule: Schedule,
        p: &'a Params,
    ) -> engine::Drill<'a, PhaseError> {
        let mut drill = engine::Drill::new(t0, schedule);
        let mut planned = 0;
        for &(window, len) in &self.windows {
            if window != Drill::Baseline {
                let at = When::At(Duration::from_millis(planned));
                drill = drill.fault(at, window.to_string(), move || switch(proxy, window, p));
            }
            planned += len;
        }
        drill.hold_until(Duration::from_millis(planned))
    }

    /// Each window as it really was: from its switch to the next one, the last to its planned
    /// end; ns after the schedule's start.
    fn windows(&self, ran: &Ran<Served>) -> Vec<Window> {
        let spans = ran.spans(self.total_ms() * 1_000_000);
        (self.windows.iter().zip(spans))
            .map(|(&(drill, _), span)| Window {
                drill,
                start_ns: span.start_ns,
                end_ns: span.end_ns,
            })
            .collect()
    }
}

/// Switches the proxy to what `window` tests.
async fn switch(proxy: &Proxy, window: Drill, p: &Params) -> Result<(), PhaseError> {
    match window {
        Drill::Baseline => {}
        Drill::Blackhole => drop(proxy.set(Fault::Blackhole(p.blackhole_direction))),
        Drill::Latency => drop(proxy.set(Fault::Delay {
            fixed: Duration::from_millis(p.injected_ms),
            jitter: Duration::from_millis(p.jitter_ms),
        })),
        Drill::Refused => drop(proxy.set(Fault::Refuse)),
        Drill::AfterBlackhole | Drill::AfterLatency | Drill::AfterRefused => drop(proxy.heal()),
        Drill::Reset => {
            proxy.set(Fault::Reset);
            let reset_by = Instant::now() + RESET_WAIT;
            while proxy.live_pumps() > 0 && Instant::now() < reset_by {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            proxy.heal();
        }
    }
    Ok(())
}

/// `after_requests` checks on one fresh key, one after another.
async fn after_check(
    store: &Store,
    key: &str,
    name: &str,
    timeout: Duration,
    p: &Params,
) -> Result<AfterRow, PhaseError> {
    let mut counts = [0u64; 4];
    let mut reconnects = 0;
    let start = Instant::now();
    for _ in 0..p.after_requests {
        let answer = (store.check(key).await).map_err(|e| PhaseError::Invalid(e.to_string()))?;
        counts[answer.outcome as usize] += 1;
        reconnects += u64::from(answer.reconnected);
    }
    let elapsed = start.elapsed();
    let max_allowed = p.capacity + (p.refill_per_sec * elapsed.as_secs_f64()).ceil() as u64;
    let (allowed, denied) = (
        counts[Outcome::Allowed as usize],
        counts[Outcome::Denied as usize],
    );
    Ok(AfterRow {
        client: name.to_string(),
        timeout_ms: timeout.as_millis() as u64,
        requests: p.after_requests,
        capacity: p.capacity,
        refill_per_sec: p.refill_per_sec,
        elapsed_ms: elapsed.as_secs_f64() * 1e3,
        max_allowed,
        allowed,
        denied,
        degraded_allowed: counts[Outcome::DegradedAllowed as usize],
        degraded_denied: counts[Outcome::DegradedDenied as usize],
        reconnects,
        enforced: denied > 0 && allowed <= max_allowed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proxy_takes_the_servers_place_in_its_url() {
        let (addr, template) = proxied_url("redis://127.0.0.1:6390/").unwrap();
        assert_eq!(addr, SocketAddr::from(([127, 0, 0, 1], 6390)));
        assert_eq!(
            template.replace("{}", "127.0.0.1:1"),
            "redis://127.0.0.1:1/"
        );
        let (_, template) = proxied_url("redis://:secret@127.0.0.1:7000/2").unwrap();
        assert_eq!(template, "redis://:secret@{}/2");
        assert!(proxied_url("rediss://127.0.0.1:1/").is_err());
    }
}
