//! race's measurement: the interleaved matrix, seed 001's burst, and the MONITOR trace.

use super::{KeyRow, Params, RaceRow, TraceRow};
use super::{KEYS, RACE, TRACE};
use crate::experiments::limiters::cost_needs_limiters;
use crate::experiments::{Concurrency, ExperimentError, Phase, Session};
use crate::limiter::custom::Algorithm;
use crate::limiter::{unix_ms, LimitSpec, LogVariant, Strategy};
use crate::load::{run_closed_loop, WorkerSpec};
use crate::record::MonitorCapture;
use crate::server::ServerError;
use redis::Commands as _;

/// Runs every trial, then the trace.
pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    // Validation refused a cost to the built-in strategies: a custom limiter must take it.
    cost_needs_limiters(s, p.cost)?;
    let mut rows = RACE.create(&s.run.staging)?;
    let mut keys = match s.ctx.limiters.is_empty() {
        true => None,
        false => Some(KEYS.create(&s.run.staging)?),
    };
    // Custom limiters run the matrix beside the built-in ones, and the fixed windows seed 001's
    // burst too (the trace is about the naive bucket).
    let strategies = s.with_limiters(&p.strategies);
    let burst = burst_strategies(s, p);
    let matrix_trials = p.trials as u64 * (p.configs.len() * strategies.len()) as u64;
    let burst_trials = p.trials as u64 * burst.len() as u64;
    let bar = s.progress(matrix_trials + burst_trials + 1);

    for trial in 0..p.trials {
        for &config in &p.configs {
            for &strategy in &strategies {
                let key = s.key(format!("m:{strategy}:{config}:{trial}"));
                let trial_spec =
                    Trial::starting_now(strategy, config, p.checks, p.capacity, p.cost, key);
                rows.write(&trial_spec.run(s, p.window_ms, "matrix", trial)?)?;
                if let (Some(sink), true) = (&mut keys, strategy.is_custom()) {
                    let what =
                        || format!("reading {strategy}'s keys after trial {trial} at {config}");
                    for row in trial_spec.keys_left(s, p.window_ms, trial).phase(what)? {
                        sink.write(&row)?;
                    }
                }
                bar.inc(1);
            }
        }
        for &strategy in &burst {
            let config = Concurrency {
                processes: 1,
                in_flight: p.seed001_hits as usize,
            };
            let key = s.key(format!("s:{strategy}:{trial}"));
            let (hits, limit) = (p.seed001_hits, p.seed001_limit);
            let trial_spec = Trial::starting_now(strategy, config, hits, limit, p.cost, key);
            rows.write(&trial_spec.run(s, p.window_ms, "seed001", trial)?)?;
            bar.inc(1);
        }
    }

    let trace_row = trace(s, p)?;
    rows.write(&trace_row)?;
    bar.finish_and_clear();
    Ok(())
}

/// Seed 001's burst: its window limiters, and every custom fixed window (a library's, or the seed's
/// own middleware through its adapter) asked the same question beside them.
fn burst_strategies(s: &Session, p: &Params) -> Vec<Strategy> {
    let windows = s.with_limiters(&[]).into_iter().filter(|l| match l {
        Strategy::Custom(name) => name.algorithm() == Some(Algorithm::FixedWindow),
        _ => false,
    });
    let mut all = p.seed001_strategies.clone();
    all.extend(windows);
    all
}

/// One trial's setup (libraries runs the seeds' own middlewares through it too).
pub(crate) struct Trial {
    pub(crate) strategy: Strategy,
    pub(crate) config: Concurrency,
    pub(crate) checks: u64,
    pub(crate) limit: u64,
    /// Tokens each check asks for.
    pub(crate) cost: u32,
    pub(crate) key: String,
    /// Start of the trial's window, Unix ms (its start: one trial is one window).
    pub(crate) origin_ms: u64,
    /// Tokens a bucket regains per second (0: it never refills, so exactly `limit` may pass).
    pub(crate) refill_per_sec: f64,
    /// Each process's checks in flight go in waves (start together, the next wave after the last
    /// answer) instead of each being replaced as soon as it is answered.
    pub(crate) waves: bool,
}

impl Trial {
    /// A trial of `checks` on `key`, its window starting now.
    pub(crate) fn starting_now(
        strategy: Strategy,
        config: Concurrency,
        checks: u64,
        limit: u64,
        cost: u32,
        key: String,
    ) -> Trial {
        let origin_ms = unix_ms();
        Trial {
            strategy,
            config,
            checks,
            limit,
            cost,
            key,
            origin_ms,
            refill_per_sec: 0.0,
            waves: false,
        }
    }

    fn limit_spec(&self, window_ms: u64) -> LimitSpec {
        LimitSpec {
            capacity: self.limit,
            refill_per_sec: self.refill_per_sec,
            window_ms,
            window_origin_ms: self.origin_ms,
            idle_ttl_ms: 600_000,
            log: LogVariant::default(),
            watch_retries: 10,
        }
    }

    /// Runs the trial's checks on a fresh key: its row of race.csv.
    pub(crate) fn run(
        &self,
        s: &Session,
        window_ms: u64,
        scenario: &str,
        trial: u32,
    ) -> Result<RaceRow, ExperimentError> {
        let what = || {
            format!(
                "{scenario} trial {trial} of {} at {}",
                self.strategy, self.config
            )
        };
        let limit = self.limit_spec(window_ms);
        let spec = WorkerSpec {
            cost: self.cost,
            waves: self.waves,
            ..WorkerSpec::one_key(
                self.strategy,
                limit,
                &self.key,
                self.checks,
                self.config.in_flight,
            )
        };
        let tally = match run_closed_loop(&s.closed_loop(self.config.processes, spec)) {
            Ok(tally) => tally,
            Err(e) => {
                // A worker that could not connect is most often a server that died.
                s.target.check_alive().phase(what)?;
                return Err(e).phase(what);
            }
        };
        s.fail_on_errors(&tally).phase(what)?;
        let final_state = read_state(s, self.strategy, &self.key, &limit).phase(what)?;
        Ok(RaceRow {
            scenario: scenario.to_string(),
            strategy: self.strategy,
            processes: self.config.processes,
            in_flight: self.config.in_flight,
            trial,
            checks: tally.total(),
            admitted: tally.admitted,
            denied: tally.denied,
            errors: tally.errors,
            limit: self.limit,
            cost: self.cost,
            final_state,
            elapsed_ms: tally.elapsed_ns as f64 / 1e6,
        })
    }
}

impl Trial {
    /// Every key that starts with the trial's client key (SCAN: a library may add its own
    /// suffixes), with its type and time to live. Trials run in order, so a later trial's keys
    /// (`...:10` after `...:1`) do not exist yet when an earlier one is read.
    fn keys_left(
        &self,
        s: &Session,
        window_ms: u64,
        trial: u32,
    ) -> Result<Vec<KeyRow>, ServerError> {
        let mut con = s.target.connection()?;
        let pattern = format!("{}*", self.key);
        let found: Vec<String> = con
            .scan_match::<_, String>(&pattern)?
            .collect::<Result<_, _>>()?;
        let mut rows = Vec::with_capacity(found.len());
        for key in found {
            let (kind, pttl_ms): (String, i64) = redis::pipe()
                .cmd("TYPE")
                .arg(&key)
                .cmd("PTTL")
                .arg(&key)
                .query(&mut con)?;
            // After the reply: the key expires no later than read_ms + pttl_ms.
            let read_ms = unix_ms();
            rows.push(KeyRow {
                strategy: self.strategy,
                processes: self.config.processes,
                in_flight: self.config.in_flight,
                trial,
                suffix: key.strip_prefix(&self.key).unwrap_or(&key).to_string(),
                kind,
                pttl_ms,
                window_ms,
                origin_ms: self.origin_ms,
                read_ms,
            });
        }
        rows.sort_by(|a, b| a.suffix.cmp(&b.suffix));
        Ok(rows)
    }
}

/// What the key holds after the trial: the bucket's tokens or the window's counter.
fn read_state(
    s: &Session,
    strategy: Strategy,
    key: &str,
    limit: &LimitSpec,
) -> Result<String, crate::server::ServerError> {
    let mut con = s.target.connection()?;
    let value: Option<String> = strategy.state_command(key, limit).query(&mut con)?;
    Ok(value.unwrap_or_default())
}

/// Seed 000's MONITOR: naive-bucket, one process, 2 in flight, a bucket of 3 tokens.
fn trace(s: &mut Session, p: &Params) -> Result<RaceRow, ExperimentError> {
    let key = s.key("trace");
    let capture = MonitorCapture::start(&s.target.url()).phase(|| "starting MONITOR".into())?;
    let config = Concurrency {
        processes: 1,
        in_flight: p.trace_in_flight,
    };
    let trial = Trial::starting_now(
        Strategy::NaiveBucket,
        config,
        p.trace_checks,
        p.trace_capacity,
        1,
        key.clone(),
    );
    let row = trial.run(s, p.window_ms, "trace", 0)?;
    let lines = capture.finish().phase(|| "reading MONITOR".into())?;
    let mut sink = TRACE.create(&s.run.staging)?;
    for (seq, line) in lines.into_iter().enumerate() {
        let on_trace_key = line.args.first().is_some_and(|a| a == &key);
        sink.write(&TraceRow {
            seq,
            time_s: line.time,
            client: line.client,
            command: line.command,
            args: line.args.join(" "),
            on_trace_key,
        })?;
    }
    s.note(format!(
        "trace: naive-bucket at 1x{} on a bucket of {} admitted {} of {} checks",
        p.trace_in_flight, p.trace_capacity, row.admitted, row.checks
    ));
    Ok(row)
}
