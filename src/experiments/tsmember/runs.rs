//! One tsmember run: open loop at a rate, or closed loop flat out, on a fresh sliding log; and
//! the row it leaves.

use super::{label, Params, TsmemberRow};
use crate::experiments::{ExperimentError, Phase, PhaseError, Session};
use crate::limiter::{LimitSpec, LogVariant, Strategy};
use crate::load::{run_closed_loop, run_open_loop, Arrivals, CheckTally, ClosedLoop, KeyChoice};
use crate::load::{OpenLoop, OpenSpec, Start, Stop, WorkerSpec};
use crate::server::Target;

/// The checks a run's limiter answered with its library's error, and the first one's text.
#[derive(Default)]
pub(super) struct Failed {
    pub count: u64,
    pub first: String,
}

impl Failed {
    fn of(t: &CheckTally) -> Self {
        Failed {
            count: t.errors,
            first: t.first_error.clone().unwrap_or_default(),
        }
    }
}

/// One run: a variant, at an arrival rate (open loop) or flat out (`rate: None`).
pub(super) struct One {
    /// lua-log for the built-in variants, or a custom limiter (then `v` is unused).
    pub strategy: Strategy,
    pub v: LogVariant,
    pub rate: Option<f64>,
    /// Requests per arrival instant (open loop): 1 is plain Poisson.
    pub batch: u32,
    pub trial: u32,
    pub limit: u64,
    pub key: String,
    /// Seed of the arrival schedule.
    pub seed: u64,
}

impl One {
    fn name(&self) -> String {
        let label = match self.strategy {
            Strategy::LuaLog => label(self.v),
            custom => custom.to_string(),
        };
        match self.rate {
            Some(rate) if self.batch > 1 => format!(
                "trial {} of {} at {rate}/s in batches of {}",
                self.trial, label, self.batch
            ),
            Some(rate) => format!("trial {} of {} at {rate}/s", self.trial, label),
            None => format!("flat-out trial {} of {}", self.trial, label),
        }
    }

    fn limit_spec(&self, p: &Params) -> LimitSpec {
        LimitSpec {
            capacity: self.limit,
            window_ms: p.window_ms,
            log: self.v,
            ..LimitSpec::default()
        }
    }

    /// Runs it, and the checks its limiter failed (a limiter process's library only: see
    /// [`One::stop_on_errors`]); open-loop runs also count towards meta.json's verdict on the
    /// generator.
    pub fn measure(
        &self,
        s: &mut Session,
        p: &Params,
    ) -> Result<(TsmemberRow, Failed), ExperimentError> {
        let what = || self.name();
        let Some(rate) = self.rate else {
            let tally = run_closed_loop(&self.flat_out_plan(s, p)).phase(what)?;
            self.stop_on_errors(s, &tally).phase(what)?;
            let row = self.row(&s.target, "flat-out".into(), &tally).phase(what)?;
            return Ok((row, Failed::of(&tally)));
        };
        let tally = run_open_loop(&self.open_plan(s, p, rate)).phase(what)?;
        self.stop_on_errors(s, &tally.checks).phase(what)?;
        s.run.open_loop_run(&what(), &tally);
        let mut row = self
            .row(&s.target, format!("{rate}"), &tally.checks)
            .phase(what)?;
        // The scheduled length: the last replies arriving after it are not extra time offered.
        row.duration_s = p.duration_s;
        row.requests_per_s = tally.offered as f64 / p.duration_s;
        let late = tally.lateness_histogram().phase(what)?;
        row.p99_late_us = late.value_at_quantile(0.99) as f64 / 1e3;
        row.max_late_us = tally.max_lateness_ns as f64 / 1e3;
        row.late_starts = tally.late_starts;
        row.generator_cpu_s = tally.cpu_s;
        Ok((row, Failed::of(&tally.checks)))
    }

    /// Stops on a check that made no decision, except where a limiter process's library answered
    /// it with its own error (its client timed out or lost the connection) on a live server: the
    /// library not keeping the offered rate is what the run measures of it. A process that broke
    /// (exited, wrote garbage, fell silent) stops the run.
    fn stop_on_errors(&self, s: &Session, tally: &CheckTally) -> Result<(), PhaseError> {
        if let Some(why) = &tally.broken {
            return Err(PhaseError::Invalid(why.clone()));
        }
        if !self.strategy.is_process() || tally.errors == 0 {
            return s.fail_on_errors(tally);
        }
        Ok(s.target.check_alive()?)
    }

    fn open_plan<'a>(&self, s: &Session<'a>, p: &Params, rate: f64) -> OpenLoop<'a> {
        let spec = OpenSpec {
            url: String::new(),
            strategy: self.strategy,
            limit: self.limit_spec(p),
            keys: KeyChoice::One(self.key.clone()),
            arrivals: Arrivals::PoissonBatches {
                rate_per_s: rate,
                duration_ms: (p.duration_s * 1000.0) as u64,
                batch: self.batch,
            },
            start: Start::AtGo,
            connections: p.connections,
            record_requests: false,
            seed: self.seed,
            worker_index: 0,
            workers: 1,
            timeouts: s.ctx.timeouts,
        };
        s.open_loop(p.processes, spec)
    }

    fn flat_out_plan<'a>(&self, s: &Session<'a>, p: &Params) -> ClosedLoop<'a> {
        let stop = Stop::AfterMs((p.flat_out_s * 1000.0) as u64);
        let spec = WorkerSpec {
            connections: p.flat_out_clients,
            record_latency: true,
            ..WorkerSpec::new(
                self.strategy,
                self.limit_spec(p),
                KeyChoice::One(self.key.clone()),
                stop,
            )
        };
        let mut plan = s.closed_loop(1, spec);
        plan.template.seed = self.seed;
        plan
    }

    /// The row from a tally and what the log holds afterwards.
    fn row(
        &self,
        target: &Target,
        rate: String,
        t: &CheckTally,
    ) -> Result<TsmemberRow, PhaseError> {
        let mut con = target.connection()?;
        // A custom limiter's layout is its own: only ratelab's log is counted.
        let log_entries: u64 = match self.strategy {
            Strategy::LuaLog => redis::cmd("ZCARD").arg(&self.key).query(&mut con)?,
            _ => 0,
        };
        let h = t.latency_histogram()?;
        let us = |ns: u64| ns as f64 / 1e3;
        let secs = t.elapsed_ns as f64 / 1e9;
        Ok(TsmemberRow {
            member: self.v.member,
            clock: self.v.clock,
            rate,
            batch: if self.rate.is_some() { self.batch } else { 0 },
            trial: self.trial,
            duration_s: secs,
            offered: t.total(),
            admitted: t.admitted,
            denied: t.denied,
            limit: self.limit,
            admitted_per_limit: t.admitted as f64 / self.limit as f64,
            log_entries,
            p50_us: us(h.value_at_quantile(0.5)),
            p99_us: us(h.value_at_quantile(0.99)),
            max_us: us(h.max()),
            p99_late_us: 0.0,
            max_late_us: 0.0,
            late_starts: 0,
            generator_cpu_s: 0.0,
            requests_per_s: if secs > 0.0 {
                t.total() as f64 / secs
            } else {
                0.0
            },
        })
    }
}
