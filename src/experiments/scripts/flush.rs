//! scripts's flush part: steady closed-loop load from the harness's own event loop, SCRIPT FLUSH
//! (FUNCTION FLUSH for FCALL) at a known instant, and every check's end, latency and outcome
//! binned around the instant the flush was sent.

use super::bucket::{bucket, bucket_script, load_scripts};
use super::rows::{FlushRow, FLUSH};
use super::Params;
use crate::experiments::{ExperimentError, Phase, PhaseError, Session};
use crate::limiter::{library, Invocation, Limiter};
use crate::load::drill::{Bins, Closed, Drill, Schedule, Stop, When};
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
    let mut rows = FLUSH.create(&s.run.staging)?;
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
            let timeline = rt.block_on(drive(&plan)).phase(what)?;
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

/// One check as it ended, ns after the start of the run.
#[derive(Debug, Clone)]
struct Check {
    end_ns: u64,
    latency_ns: u64,
    decided: bool,
    noscript: bool,
    round_trips: u32,
    /// The error the user saw, when there was no decision.
    error: Option<String>,
}

/// What a run recorded, ns after its start: every check and the instants that matter.
struct Timeline {
    /// The flush command sent.
    flush: String,
    end_ns: i64,
    flushed_ns: i64,
    reloaded_ns: Option<i64>,
    checks: Vec<Check>,
}

async fn connect(plan: &Plan) -> Result<MultiplexedConnection, redis::RedisError> {
    let client = crate::server::endpoint::client(plan.url.as_str())?;
    (client.get_multiplexed_async_connection_with_config(&plan.timeouts.config())).await
}

/// One closed-loop client: its own connection and key stream.
struct Client {
    con: MultiplexedConnection,
    rng: SplitMix64,
}

/// Runs the clients (closed loop, back to back) and the flush (and reload) as a drill.
async fn drive(plan: &Plan) -> Result<Timeline, PhaseError> {
    let mut clients = Vec::with_capacity(plan.clients);
    for i in 0..plan.clients {
        let con = connect(plan).await?;
        let rng = SplitMix64::new(plan.seed, i as u64);
        clients.push(RefCell::new(Client { con, rng }));
    }
    let admin = connect(plan).await?;
    let mode = plan.limiter.invocation();
    let schedule = Schedule::Closed(Closed {
        clients: plan.clients,
        pace: None,
        stop: Stop::At(plan.before + plan.after),
    });
    let mut drill =
        Drill::new(Instant::now(), schedule).fault(When::At(plan.before), "flush", || {
            flush(admin.clone(), mode)
        });
    if let Some(after) = plan.reload_after {
        drill = drill.fault(When::AfterPrevious(after), "reload", || {
            reload(admin.clone(), &plan.limiter)
        });
    }
    let (limiter, prefix, keys) = (
        Rc::new(plan.limiter.clone()),
        plan.key_prefix.clone(),
        plan.keys,
    );
    let ran = drill
        .run(move |call| {
            let mut client = clients[call.client].borrow_mut();
            let key = KeyChoice::indexed(&prefix, client.rng.below(keys));
            check(Rc::clone(&limiter), client.con.clone(), key)
        })
        .await?;
    let at = |name| ran.fault(name).map(|f| f.started_ns as i64);
    Ok(Timeline {
        flush: format!("{} FLUSH", container(mode)),
        end_ns: (plan.before + plan.after).as_nanos() as i64,
        flushed_ns: at("flush").unwrap_or_default(),
        reloaded_ns: at("reload"),
        checks: (ran.records.into_iter())
            .map(|r| Check {
                end_ns: r.end_ns,
                latency_ns: r.end_ns - r.start_ns,
                ..r.out
            })
            .collect(),
    })
}

/// One check of a client: its decision, or the error the user saw.
async fn check(limiter: Rc<Limiter>, mut con: MultiplexedConnection, key: String) -> Check {
    let attempt = limiter.attempt(&mut con, &key).await;
    Check {
        end_ns: 0,
        latency_ns: 0,
        decided: attempt.outcome.is_ok(),
        noscript: attempt.noscript,
        round_trips: attempt.round_trips,
        error: attempt.outcome.err().map(|e| e.to_string()),
    }
}

/// The plan's fault: SCRIPT FLUSH, or FUNCTION FLUSH for FCALL.
async fn flush(mut admin: MultiplexedConnection, mode: Invocation) -> Result<(), PhaseError> {
    (redis::cmd(container(mode)).arg("FLUSH"))
        .query_async::<()>(&mut admin)
        .await?;
    Ok(())
}

/// What an operator does once the errors start: cache the script, or load the library, again.
async fn reload(mut con: MultiplexedConnection, limiter: &Limiter) -> Result<(), PhaseError> {
    let load = match (limiter.invocation().uses_function(), limiter.script()) {
        (true, _) => redis::cmd("FUNCTION")
            .arg("LOAD")
            .arg("REPLACE")
            .arg(library())
            .take(),
        (false, Some((source, _))) => redis::cmd("SCRIPT").arg("LOAD").arg(source).take(),
        (false, None) => return Ok(()),
    };
    load.query_async::<String>(&mut con).await?;
    Ok(())
}

impl Timeline {
    /// One row per whole bin of `bin_ms` inside the run, counted from the instant the flush
    /// was sent (partial bins at either end are left out).
    fn bins(&self, mode: Invocation, run: u32, bin_ms: u64) -> Result<Vec<FlushRow>, PhaseError> {
        let bins = Bins::whole_around(self.flushed_ns, 0, self.end_ns, bin_ms * 1_000_000);
        let reload_at_ms = (self.reloaded_ns).map(|at| (at - self.flushed_ns) as f64 / 1e6);
        let mut rows = Vec::with_capacity(bins.count);
        for (i, inside) in bins
            .sort(&self.checks, |c| c.end_ns as i64)
            .iter()
            .enumerate()
        {
            let mut latency = new_histogram()?;
            for c in inside {
                latency.saturating_record(c.latency_ns.max(1));
            }
            let decided = inside.iter().filter(|c| c.decided).count() as u64;
            let first_error = (inside.iter().filter(|c| !c.decided))
                .min_by_key(|c| c.end_ns)
                .and_then(|c| c.error.clone())
                .unwrap_or_default();
            rows.push(FlushRow {
                mode,
                fallback: mode.fallback().to_string(),
                flush: self.flush.clone(),
                run,
                t_ms: (bins.start_of(i) - self.flushed_ns) / 1_000_000,
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
}

fn quantile_us(h: &Histogram<u64>, q: f64) -> Option<f64> {
    (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn check(end_ms: u64, decided: bool) -> Check {
        Check {
            end_ns: end_ms * MS,
            latency_ns: 200_000,
            decided,
            noscript: false,
            round_trips: 1,
            error: (!decided).then(|| format!("NOSCRIPT at {end_ms}")),
        }
    }

    #[test]
    fn bins_count_from_the_flush_and_drop_partial_ones() {
        // Flush sent 1,005 ms in, run ended at 1,500 ms: whole bins from -1000 to +400.
        let timeline = Timeline {
            flush: "SCRIPT FLUSH".into(),
            end_ns: 1500 * MS as i64,
            flushed_ns: 1005 * MS as i64,
            reloaded_ns: Some(1255 * MS as i64),
            checks: vec![
                check(2, true),
                check(10, true),
                check(1004, true),
                check(1008, false),
                check(1006, false),
            ],
        };
        let rows = timeline.bins(Invocation::Evalsha, 0, 100).unwrap();
        let t: Vec<i64> = rows.iter().map(|r| r.t_ms).collect();
        assert_eq!(t, (-10..=3).map(|b| b * 100).collect::<Vec<_>>());
        // 2 ms in is before the first whole bin; 10 ms in is in the bin starting at -1,000 ms.
        assert_eq!((rows[0].decisions, rows[9].decisions), (1, 1));
        assert_eq!(
            (rows[10].errors, rows[10].first_error.as_str()),
            (2, "NOSCRIPT at 1006"),
            "the first error to end in the bin"
        );
        assert_eq!(rows[5].p99_us, None, "an empty bin has no latency");
        assert!((rows[0].reload_at_ms.unwrap() - 250.0).abs() < 1e-6);
    }
}
