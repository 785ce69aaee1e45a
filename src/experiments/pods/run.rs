//! One pods run: N pod processes on one schedule, the sink counting what arrived, Redis sampled
//! around it; and the rows it leaves.

use super::rows::{PodsRunRow, PodsSecondRow, SecondPhase};
use super::{Config, Params};
use crate::experiments::{ExperimentError, Phase, PhaseError, Session};
use crate::limiter::{unix_ms, LimitSpec, Strategy};
use crate::load::sink::{Sink, SinkCount};
use crate::load::{Arrivals, Fleet, KeyChoice, OpenSpec, PodFleet, PodSecond, PodTally, Start};
use crate::server::{admin, slowlog};
use crate::server::{ServerCost, ServerSample};
use std::time::Duration;

/// Time from planning a run to its start, so every pod has connected and heard `go` first;
/// starting from an instant the parent picks lets windows, pods' seconds and the sink's share it.
const LEAD_MS: u64 = 200;
/// More lead per pod process to spawn and connect.
const LEAD_PER_POD_MS: u64 = 25;
/// The seed's alert rule: reached above decided by more than this share.
pub(crate) const ALERT_SHARE: f64 = 0.02;

/// One run of one configuration.
pub(super) struct One<'a> {
    pub config: Config,
    pub trial: u32,
    /// The tenant's key of this run.
    pub key: String,
    /// Redis for the pods: the server itself, or the proxy in front of it.
    pub url: String,
    /// Seed of the arrival schedule.
    pub seed: u64,
    pub sink: &'a Sink,
}

/// What one run leaves.
pub(super) struct Measured {
    pub seconds: Vec<PodsSecondRow>,
    pub run: PodsRunRow,
}

impl One<'_> {
    fn name(&self) -> String {
        let c = &self.config;
        let mut name = format!(
            "trial {} of {} at {} pods, {}/s offered, +{} ms round trip",
            self.trial, c.strategy, c.pods, c.offered_rps, c.rtt_ms
        );
        if c.partner_ms > 0.0 || c.work_ms > 0.0 {
            name += &format!(", {} ms work, partner {} ms", c.work_ms, c.partner_ms);
        }
        if c.skew_ms > 0.0 {
            name += &format!(", clocks spread {} ms", c.skew_ms);
        }
        name
    }

    fn limit_spec(&self, p: &Params, origin_ms: u64) -> LimitSpec {
        LimitSpec {
            capacity: p.limit,
            refill_per_sec: p.limit as f64,
            window_ms: 1000,
            window_origin_ms: origin_ms,
            ..LimitSpec::default()
        }
    }

    fn plan<'a>(&self, s: &Session<'a>, p: &Params, origin_ms: u64) -> PodFleet<'a> {
        let c = &self.config;
        let spec = OpenSpec {
            url: String::new(),
            // In-memory pods decide without Redis; the strategy then only names a placeholder.
            strategy: c.strategy.on_redis().unwrap_or(Strategy::IncrWindow),
            limit: self.limit_spec(p, origin_ms),
            keys: KeyChoice::One(self.key.clone()),
            arrivals: Arrivals::Poisson {
                rate_per_s: c.offered_rps,
                duration_ms: u64::from(c.duration_s) * 1000,
            },
            start: Start::AtUnixMs(origin_ms),
            connections: 1,
            record_requests: false,
            seed: self.seed,
            worker_index: 0,
            workers: 1,
            timeouts: s.ctx.timeouts,
        };
        let mut open = s.open_loop(c.pods as usize, spec);
        open.template.url = self.url.clone();
        PodFleet {
            open,
            sink: self.sink.addr().to_string(),
            in_memory_limit: c.strategy.in_memory_limit(p.limit, c.pods),
            work: Duration::from_secs_f64(c.work_ms / 1000.0),
            skew_ms: c.skew_ms,
        }
    }

    /// Runs it; the open loop's health goes to meta.json.
    pub fn measure(&self, s: &mut Session, p: &Params) -> Result<Measured, ExperimentError> {
        let what = || self.name();
        let lead = LEAD_MS + LEAD_PER_POD_MS * u64::from(self.config.pods);
        let origin_ms = unix_ms() + lead;
        let plan = self.plan(s, p, origin_ms);
        let mut fleet = Fleet::spawn_pods(&plan).phase(what)?;
        let partner = Duration::from_secs_f64(self.config.partner_ms / 1000.0);
        self.sink.begin(origin_ms, partner);
        let before = ServerSample::take(&s.target).phase(what)?;
        let mut con = s.target.connection().phase(what)?;
        let slow_before = slowlog::newest_id(&mut con).phase(what)?;
        let evicted_before = admin::info_u64(&mut con, "stats", "evicted_keys").phase(what)?;
        fleet.go().phase(what)?;
        let tally = fleet.collect_pods().phase(what)?;
        let after = ServerSample::take(&s.target).phase(what)?;
        let slow = slowlog::since(&mut con, slow_before).phase(what)?;
        let evicted_after = admin::info_u64(&mut con, "stats", "evicted_keys").phase(what)?;
        let memory = admin::info(&mut con, "memory").phase(what)?;
        s.fail_on_errors(&tally.open.checks).phase(what)?;
        if let Some(e) = &tally.first_send_error {
            let detail = format!("{} sends to the sink failed: {e}", tally.send_errors);
            return Err(PhaseError::Invalid(detail)).phase(what);
        }
        s.run.open_loop_run(&what(), &tally.open);
        let count = self.sink.count();
        let seconds = self.seconds(p, &tally.seconds, &count);
        let mut run = self
            .run_row(p, &tally, &count, &seconds, &before.cost_until(&after))
            .phase(what)?;
        run.slowlog_threshold_us = slow.threshold_us;
        run.slowlog_entries = slow.entries;
        run.slowlog_script_entries = slow.script_entries;
        run.slowlog_script_slowest_us = slow.script_slowest_us;
        run.evicted_keys = evicted_after.saturating_sub(evicted_before);
        run.maxmemory_policy = memory
            .get("maxmemory_policy")
            .unwrap_or_default()
            .to_string();
        Ok(Measured { seconds, run })
    }

    fn seconds(&self, p: &Params, pods: &[PodSecond], sink: &SinkCount) -> Vec<PodsSecondRow> {
        let c = &self.config;
        let n = pods
            .len()
            .max(sink.per_second.len())
            .max(c.duration_s as usize);
        (0..n)
            .map(|i| {
                let pod = pods.get(i).copied().unwrap_or_default();
                let reached = sink.per_second.get(i).copied().unwrap_or(0);
                let phase = match i as u32 {
                    s if s < p.warmup_s => SecondPhase::WarmUp,
                    s if s < c.duration_s => SecondPhase::Measured,
                    _ => SecondPhase::Tail,
                };
                PodsSecondRow {
                    strategy: c.strategy,
                    pods: c.pods,
                    offered_rps: c.offered_rps,
                    rtt_ms: c.rtt_ms,
                    work_ms: c.work_ms,
                    partner_ms: c.partner_ms,
                    skew_ms: c.skew_ms,
                    trial: self.trial,
                    second: i as u32,
                    phase,
                    limit: p.limit,
                    offered: pod.offered,
                    decided_allowed: pod.allowed,
                    denied: pod.denied,
                    sent: pod.sent,
                    reached,
                    alert: reached as f64 > pod.allowed as f64 * (1.0 + ALERT_SHARE),
                }
            })
            .collect()
    }

    fn run_row(
        &self,
        p: &Params,
        t: &PodTally,
        sink: &SinkCount,
        seconds: &[PodsSecondRow],
        cost: &ServerCost,
    ) -> Result<PodsRunRow, PhaseError> {
        let c = &self.config;
        let measured: Vec<&PodsSecondRow> = (seconds.iter())
            .filter(|r| r.phase == SecondPhase::Measured)
            .collect();
        let n = measured.len().max(1) as f64;
        let mean =
            |f: fn(&PodsSecondRow) -> u64| measured.iter().map(|r| f(r) as f64).sum::<f64>() / n;
        let reached_per_s = mean(|r| r.reached);
        let peak = (seconds.iter()).max_by_key(|r| (r.reached, std::cmp::Reverse(r.second)));
        let h = t.open.checks.latency_histogram()?;
        let decide = t.decide_histogram()?;
        let ms = |ns: u64| ns as f64 / 1e6;
        let decisions = t.open.checks.admitted + t.open.checks.denied;
        let on_redis = c.strategy.on_redis().is_some();
        let (command, usec_per_call) = match on_redis {
            true => cost.busiest_command().unwrap_or_default(),
            false => (String::new(), 0.0),
        };
        Ok(PodsRunRow {
            strategy: c.strategy,
            pods: c.pods,
            offered_rps: c.offered_rps,
            rtt_ms: c.rtt_ms,
            work_ms: c.work_ms,
            partner_ms: c.partner_ms,
            skew_ms: c.skew_ms,
            trial: self.trial,
            limit: p.limit,
            pod_limit: c.strategy.in_memory_limit(p.limit, c.pods).unwrap_or(0),
            duration_s: c.duration_s,
            measured_s: measured.len() as u32,
            offered: t.open.offered,
            decided_allowed: t.open.checks.admitted,
            denied: t.open.checks.denied,
            sent: t.sent,
            acknowledged: t.acknowledged,
            reached: sink.total,
            lost: t.sent as i64 - sink.total as i64,
            reached_per_s,
            reached_min_per_s: measured.iter().map(|r| r.reached).min().unwrap_or(0),
            reached_max_per_s: measured.iter().map(|r| r.reached).max().unwrap_or(0),
            decided_per_s: mean(|r| r.decided_allowed),
            arrived_per_s: mean(|r| r.offered),
            excess_per_s: reached_per_s - p.limit as f64,
            offered_within_rtt: c.offered_rps * c.rtt_ms / 1000.0,
            reached_per_pod_limit: reached_per_s / (p.limit as f64 * f64::from(c.pods)),
            alert_pct: 100.0 * measured.iter().filter(|r| r.alert).count() as f64 / n,
            peak_second: peak.map_or(0, |r| r.second),
            peak_reached: peak.map_or(0, |r| r.reached),
            p50_ms: ms(h.value_at_quantile(0.5)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            max_ms: ms(h.max()),
            max_in_flight: t.open.max_in_flight,
            late_starts: t.open.late_starts,
            max_late_ms: ms(t.open.max_lateness_ns),
            pods_cpu_s: t.open.cpu_s,
            redis_busy_pct: cost.busy_pct(),
            redis_cpu_us_per_decision: match (on_redis, decisions) {
                (true, d) if d > 0 => cost.main_thread_cpu_us / d as f64,
                _ => 0.0,
            },
            command,
            usec_per_call,
            // Filled in by `measure`, which reads the slow log around the run.
            slowlog_threshold_us: 0,
            slowlog_entries: 0,
            slowlog_script_entries: 0,
            slowlog_script_slowest_us: 0,
            evicted_keys: 0,
            maxmemory_policy: String::new(),
            redis_off_cpu_us: cost.off_cpu_us().unwrap_or(0.0),
            decide_mean_ms: decide.mean() / 1e6,
            offered_within_decide: c.offered_rps * decide.mean() / 1e9,
            decide_p99_ms: ms(decide.value_at_quantile(0.99)),
            max_open: t.max_open,
            mean_open: t.open_s / (f64::from(c.duration_s) * f64::from(c.pods)),
        })
    }
}
