//! scripts's flush part: steady closed-loop load from the harness's own event loop, SCRIPT FLUSH
//! (FUNCTION FLUSH for FCALL) at a known instant, and every check's end, latency and outcome
//! binned around the instant the flush was sent.

use super::body::{bucket, bucket_script, load_scripts};
use super::rows::FlushRow;
use super::Params;
use crate::experiments::{ExperimentError, Phase, PhaseError, Session};
use crate::limiter::{library, Invocation, Limiter};
use crate::load::latency::new_histogram;
use crate::load::rng::SplitMix64;
use crate::load::{ClientTimeouts, KeyChoice};
use hdrhistogram::Histogram;
use redis::aio::MultiplexedConnection;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

pub(super) fn run(
    s: &mut Session,
    p: &Params,
    rt: &tokio::runtime::Runtime,
) -> Result<(), ExperimentError> {
    let mut rows = s.csv::<FlushRow>("flush.csv")?;
    let bar = s.progress(u64::from(p.flush_runs) * p.flush_modes.len() as u64);
    let (source, _) = bucket_script(p);
    for run in 0..p.flush_runs {
        for &mode in &p.flush_modes {
            let what = || format!("flush run {run} of {mode}");
            let mut con = s.target.connection().phase(what)?;
            load_scripts(&mut con, source).phase(what)?;
            let plan = Plan {
                url: s.target.url(),
                timeouts: s.ctx.timeouts,
                limiter: bucket(p, mode).phase(what)?,
                clients: p.flush_clients,
                key_prefix: s.key("flush:"),
                keys: p.keys,
                seed: s.ctx.seed ^ u64::from(run),
                before: Duration::from_millis(p.flush_before_ms),
                after: Duration::from_millis(p.flush_after_ms),
                reload_after: (!mode.has_fallback())
                    .then(|| Duration::from_millis(p.reload_after_ms)),
            };
            let local = tokio::task::LocalSet::new();
            let timeline = rt.block_on(local.run_until(drive(&plan))).phase(what)?;
            for row in timeline.bins(mode, run, p.bin_ms).phase(what)? {
                rows.write(&row)?;
            }
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok(())
}

/// Where what a mode calls lives, for its FLUSH: the function libraries, or the script cache.
fn container(mode: Invocation) -> &'static str {
    match mode.uses_function() {
        true => "FUNCTION",
        false => "SCRIPT",
    }
}

/// One flush run.
struct Plan {
    url: String,
    timeouts: ClientTimeouts,
    limiter: Limiter,
    clients: usize,
    key_prefix: String,
    keys: u64,
    seed: u64,
    /// Load before the flush, and after it.
    before: Duration,
    after: Duration,
    /// When the harness loads the script or library again after the flush (no fallback only).
    reload_after: Option<Duration>,
}

/// One check as it ended.
#[derive(Debug, Clone, Copy)]
struct Check {
    /// ns from the start of the run to the check's end.
    end_ns: u64,
    latency_ns: u64,
    decided: bool,
    noscript: bool,
    round_trips: u32,
}

/// What a run recorded: every check, error texts where they changed, and the instants that matter.
struct Timeline {
    /// The flush command sent.
    flush: String,
    started: Instant,
    ended: Instant,
    flushed: Instant,
    reloaded: Option<Instant>,
    checks: Vec<Check>,
    /// (end_ns, text) of each error whose text differs from the error before it.
    error_texts: Vec<(u64, String)>,
}

async fn connect(plan: &Plan) -> Result<MultiplexedConnection, redis::RedisError> {
    let client = crate::server::endpoint::client(plan.url.as_str())?;
    (client.get_multiplexed_async_connection_with_config(&plan.timeouts.config())).await
}

/// Runs the clients and the flush (and reload) beside them; needs a `LocalSet`.
async fn drive(plan: &Plan) -> Result<Timeline, PhaseError> {
    let mut cons = Vec::with_capacity(plan.clients);
    for _ in 0..plan.clients {
        cons.push(connect(plan).await?);
    }
    let mut admin = connect(plan).await?;
    let started = Instant::now();
    let end = started + plan.before + plan.after;
    let shared = Rc::new(RefCell::new(Recorded::default()));
    let mut tasks = Vec::new();
    for (i, con) in cons.into_iter().enumerate() {
        let client = Client {
            limiter: plan.limiter.clone(),
            key_prefix: plan.key_prefix.clone(),
            keys: plan.keys,
            rng: SplitMix64::new(plan.seed, i as u64),
            started,
            end,
            recorded: shared.clone(),
        };
        tasks.push(tokio::task::spawn_local(client.run(con)));
    }
    let mode = plan.limiter.invocation();
    tokio::time::sleep_until((started + plan.before).into()).await;
    let flushed = Instant::now();
    (redis::cmd(container(mode)).arg("FLUSH"))
        .query_async::<()>(&mut admin)
        .await?;
    let mut reloaded = None;
    if let Some(after) = plan.reload_after {
        tokio::time::sleep_until((flushed + after).into()).await;
        reloaded = Some(Instant::now());
        reload(&mut admin, &plan.limiter).await?;
    }
    for task in tasks {
        task.await
            .map_err(|e| PhaseError::Invalid(format!("a client task failed: {e}")))?;
    }
    let Recorded {
        checks,
        error_texts,
    } = shared.take();
    Ok(Timeline {
        flush: format!("{} FLUSH", container(mode)),
        started,
        ended: end,
        flushed,
        reloaded,
        checks,
        error_texts,
    })
}

/// What an operator does once the errors start: cache the script, or load the library, again.
async fn reload(
    con: &mut MultiplexedConnection,
    limiter: &Limiter,
) -> Result<(), redis::RedisError> {
    let load = match (limiter.invocation().uses_function(), limiter.script()) {
        (true, _) => redis::cmd("FUNCTION")
            .arg("LOAD")
            .arg("REPLACE")
            .arg(library())
            .take(),
        (false, Some((source, _))) => redis::cmd("SCRIPT").arg("LOAD").arg(source).take(),
        (false, None) => return Ok(()),
    };
    load.query_async::<String>(con).await.map(drop)
}

/// One closed-loop client: one check at a time on its own connection until the end.
struct Client {
    limiter: Limiter,
    key_prefix: String,
    keys: u64,
    rng: SplitMix64,
    started: Instant,
    end: Instant,
    recorded: Rc<RefCell<Recorded>>,
}

/// What the clients of a run record, shared: single-threaded, so a plain cell.
#[derive(Default)]
struct Recorded {
    checks: Vec<Check>,
    /// (end_ns, text) of each error whose text differs from the error recorded before it.
    error_texts: Vec<(u64, String)>,
}

impl Client {
    async fn run(mut self, mut con: MultiplexedConnection) {
        while Instant::now() < self.end {
            let key = KeyChoice::indexed(&self.key_prefix, self.rng.below(self.keys));
            let start = Instant::now();
            let attempt = self.limiter.attempt(&mut con, &key).await;
            let done = Instant::now();
            let check = Check {
                end_ns: done.duration_since(self.started).as_nanos() as u64,
                latency_ns: done.duration_since(start).as_nanos() as u64,
                decided: attempt.outcome.is_ok(),
                noscript: attempt.noscript,
                round_trips: attempt.round_trips,
            };
            let mut recorded = self.recorded.borrow_mut();
            recorded.checks.push(check);
            if let Err(e) = attempt.outcome {
                let text = e.to_string();
                let texts = &mut recorded.error_texts;
                if texts.last().is_none_or(|(_, last)| *last != text) {
                    texts.push((check.end_ns, text));
                }
            }
        }
    }
}

impl Timeline {
    /// One row per whole bin of `bin_ms` inside the run, counted from the instant the flush
    /// was sent (partial bins at either end are left out).
    fn bins(&self, mode: Invocation, run: u32, bin_ms: u64) -> Result<Vec<FlushRow>, PhaseError> {
        let bin_ns = (bin_ms * 1_000_000) as i64;
        let ns = |at: Instant| at.saturating_duration_since(self.started).as_nanos() as i64;
        let flushed_ns = ns(self.flushed);
        let first = (-flushed_ns).div_euclid(bin_ns) + 1;
        let last = (ns(self.ended) - flushed_ns).div_euclid(bin_ns) - 1;
        let mut bins: Vec<Vec<&Check>> = vec![Vec::new(); (last - first + 1).max(0) as usize];
        for c in &self.checks {
            let bin = (c.end_ns as i64 - flushed_ns).div_euclid(bin_ns);
            if (first..=last).contains(&bin) {
                bins[(bin - first) as usize].push(c);
            }
        }
        let reload_at_ms =
            (self.reloaded).map(|at| at.duration_since(self.flushed).as_secs_f64() * 1e3);
        let mut rows = Vec::with_capacity(bins.len());
        for (i, inside) in bins.iter().enumerate() {
            let mut latency = new_histogram()?;
            for c in inside {
                latency.saturating_record(c.latency_ns.max(1));
            }
            let decided = inside.iter().filter(|c| c.decided).count() as u64;
            let first_error = (inside.iter().find(|c| !c.decided))
                .and_then(|c| self.error_text_at(c.end_ns))
                .unwrap_or_default();
            rows.push(FlushRow {
                mode,
                fallback: mode.fallback().to_string(),
                flush: self.flush.clone(),
                run,
                t_ms: (first + i as i64) * bin_ms as i64,
                bin_ms,
                decisions: decided,
                errors: inside.len() as u64 - decided,
                noscript: inside.iter().filter(|c| c.decided && c.noscript).count() as u64,
                round_trips: inside.iter().map(|c| u64::from(c.round_trips)).sum(),
                p50_us: quantile_us(&latency, 0.5),
                p99_us: quantile_us(&latency, 0.99),
                max_us: quantile_us(&latency, 1.0),
                reload_at_ms,
                first_error,
            });
        }
        Ok(rows)
    }

    /// The text of the error that ended at `end_ns`: the last one recorded at or before it.
    fn error_text_at(&self, end_ns: u64) -> Option<String> {
        (self.error_texts.iter().rev())
            .find(|(at, _)| *at <= end_ns)
            .map(|(_, text)| text.clone())
    }
}

fn quantile_us(h: &Histogram<u64>, q: f64) -> Option<f64> {
    (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(end_ms: u64, decided: bool) -> Check {
        Check {
            end_ns: end_ms * 1_000_000,
            latency_ns: 200_000,
            decided,
            noscript: false,
            round_trips: 1,
        }
    }

    #[test]
    fn bins_count_from_the_flush_and_drop_partial_ones() {
        let started = Instant::now();
        let ms = |n: u64| started + Duration::from_millis(n);
        // Flush sent 1,005 ms in, run ended at 1,500 ms: whole bins from -1000 to +400.
        let timeline = Timeline {
            flush: "SCRIPT FLUSH".into(),
            started,
            ended: ms(1500),
            flushed: ms(1005),
            reloaded: Some(ms(1255)),
            checks: vec![
                check(2, true),
                check(10, true),
                check(1004, true),
                check(1006, false),
            ],
            error_texts: vec![(1006 * 1_000_000, "NOSCRIPT".into())],
        };
        let rows = timeline.bins(Invocation::Evalsha, 0, 100).unwrap();
        let t: Vec<i64> = rows.iter().map(|r| r.t_ms).collect();
        assert_eq!(t, (-10..=3).map(|b| b * 100).collect::<Vec<_>>());
        // 2 ms in is before the first whole bin; 10 ms in is in the bin starting at -1,000 ms.
        assert_eq!((rows[0].decisions, rows[9].decisions), (1, 1));
        assert_eq!(
            (rows[10].errors, rows[10].first_error.as_str()),
            (1, "NOSCRIPT")
        );
        assert_eq!(rows[5].p99_us, None, "an empty bin has no latency");
        assert!((rows[0].reload_at_ms.unwrap() - 250.0).abs() < 1e-6);
    }
}
