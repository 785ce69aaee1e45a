//! replication's measurement: on the primary and replica the frame built, the calls with the
//! replica watched, the catch-up, then every bucket read on both sides.

use super::compare::compare_buckets;
use super::stream::{command_calls, stream_rows, Sides};
use super::{Params, BUCKETS, MUST_OWN, STREAM, TTLS};
use crate::experiments::{ExperimentError, Phase, PhaseError, Session};
use crate::limiter::{LimitSpec, Strategy};
use crate::load::{run_closed_loop, CheckTally, KeyChoice, Stop, WorkerSpec};
use crate::record::MonitorCapture;
use crate::server::wait_caught_up;
use std::time::Duration;

pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let mut bucket_rows = BUCKETS.create(&s.run.staging)?;
    let mut stream_sink = STREAM.create(&s.run.staging)?;
    let mut ttl_sink = TTLS.create(&s.run.staging)?;
    let primary = (s.target.owned(MUST_OWN)).phase(|| "checking the server".into())?;
    let replica = (s.replicas.first())
        .ok_or_else(|| PhaseError::Invalid("the frame built no replica".into()))
        .phase(|| "checking the replica".into())?;
    let sides = || "sampling INFO commandstats on both sides".to_string();
    let primary_before = command_calls(primary).phase(sides)?;
    let replica_before = command_calls(replica).phase(sides)?;
    let monitor = MonitorCapture::start(&replica.endpoint().url())
        .phase(|| "starting MONITOR on the replica".into())?;

    let limit = LimitSpec {
        capacity: p.capacity,
        refill_per_sec: p.refill_per_sec,
        ..LimitSpec::default()
    };
    let prefixes: Vec<(Strategy, String)> = (p.strategies.iter())
        .map(|&strategy| (strategy, s.key(format!("{strategy}:bucket:"))))
        .collect();
    let mut tally = CheckTally::default();
    for (strategy, prefix) in &prefixes {
        tally.merge(call_buckets(s, p, *strategy, limit, prefix)?);
    }

    let timeout = Duration::from_millis(p.catch_up_timeout_ms);
    let catch_up = wait_caught_up(primary, replica, timeout)
        .phase(|| "waiting for the replica to catch up".into())?;
    let primary_after = command_calls(primary).phase(sides)?;
    let replica_after = command_calls(replica).phase(sides)?;
    let seen = monitor
        .finish()
        .phase(|| "stopping MONITOR on the replica".into())?;

    let mut rows = Vec::new();
    for (strategy, prefix) in &prefixes {
        let read = (*strategy, prefix.as_str());
        let compared = compare_buckets(primary, replica, read, p.buckets, catch_up)
            .phase(|| format!("reading every {strategy} bucket on both sides"))?;
        replica
            .check_alive()
            .phase(|| "checking the replica".into())?;
        // After the comparison, so the extra calls change nothing it read.
        let keys: Vec<String> = compared.iter().map(|r| r.key.clone()).collect();
        let ttls = super::ttl::read(&primary.url(), *strategy, &limit, &keys, s.ctx.timeouts)
            .phase(|| format!("calling every {strategy} bucket once more and reading its PTTL"))?;
        for row in &ttls {
            ttl_sink.write(row)?;
        }
        rows.extend(compared);
    }
    let matched = rows.iter().filter(|r| r.matched == 1).count();
    for row in &rows {
        bucket_rows.write(row)?;
    }
    let calls_by_side = Sides {
        primary: (&primary_before, &primary_after),
        replica: (&replica_before, &replica_after),
    };
    // On the replica, MONITOR names the primary's link by the primary's address.
    let link = primary.endpoint().host_port();
    for row in stream_rows(&calls_by_side, &seen, &link) {
        stream_sink.write(&row)?;
    }
    s.note(format!(
        "{} calls: {} admitted, {} refused; the replica caught up {:.3} ms after the last reply; \
         {matched} of {} buckets match.",
        tally.total(),
        tally.admitted,
        tally.denied,
        catch_up.as_secs_f64() * 1e3,
        rows.len()
    ));
    Ok(())
}

/// `p.calls` calls of `strategy` over its `p.buckets` buckets in turn.
fn call_buckets(
    s: &Session,
    p: &Params,
    strategy: Strategy,
    limit: LimitSpec,
    prefix: &str,
) -> Result<CheckTally, ExperimentError> {
    let calls = || format!("{} {strategy} calls over {} buckets", p.calls, p.buckets);
    let keys = KeyChoice::RoundRobin {
        prefix: prefix.to_string(),
        count: p.buckets,
    };
    let spec = WorkerSpec {
        in_flight: p.load.in_flight,
        ..WorkerSpec::new(strategy, limit, keys, Stop::AfterChecks(p.calls))
    };
    let tally = match run_closed_loop(&s.closed_loop(p.load.processes, spec)) {
        Ok(tally) => tally,
        Err(e) => {
            // A worker that could not connect is most often a server that died.
            s.target.check_alive().phase(calls)?;
            return Err(e).phase(calls);
        }
    };
    s.fail_on_errors(&tally).phase(calls)?;
    Ok(tally)
}
