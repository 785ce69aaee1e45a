//! The two bursts of one window-edge trial, and what they show: how many passed on each side of
//! the boundary and the most inside any 1-second span.

use super::{Params, RequestRow, WindowEdgeRow};
use crate::context::Ctx;
use crate::limiter::{LimitSpec, Strategy};
use crate::load::{Arrivals, Burst, KeyChoice, OpenSpec, OpenTally, Start};

/// The open-loop spec of one trial: L requests over the last `edge_ms` of a window and L over
/// the first `edge_ms` of the next, on a clock running `offset_ns` ahead of ours.
pub(super) fn spec(
    ctx: &Ctx,
    p: &Params,
    strategy: Strategy,
    offset_ns: i64,
    key: &str,
) -> OpenSpec {
    let edge = p.edge_ms as f64;
    let burst = |offset_ms, count| Burst {
        offset_ms,
        span_ms: edge,
        count,
    };
    // The first request opens a first-hit window: its edge is one window later, where the
    // bursts go (the opener counts in the first).
    let arrivals = match super::opens_at_first_hit(strategy) {
        true => {
            let at = boundary_ms(p, strategy);
            vec![
                burst(0.0, 1),
                burst(at - edge, p.limit - 1),
                burst(at, p.limit),
            ]
        }
        false => vec![burst(0.0, p.limit), burst(edge, p.limit)],
    };
    OpenSpec {
        url: String::new(),
        strategy,
        limit: LimitSpec {
            capacity: p.limit,
            refill_per_sec: p.limit as f64 * 1000.0 / p.window_ms as f64,
            window_ms: p.window_ms,
            // Windows aligned to the epoch, as in production.
            window_origin_ms: 0,
            ..LimitSpec::default()
        },
        keys: KeyChoice::One(key.to_string()),
        arrivals: Arrivals::Bursts(arrivals),
        start: Start::Aligned {
            period_ms: p.window_ms,
            phase_ms: p.window_ms - p.edge_ms,
            offset_ns,
            lead_ms: p.lead_ms,
        },
        connections: p.connections,
        record_requests: true,
        seed: ctx.seed,
        worker_index: 0,
        workers: 1,
        timeouts: ctx.timeouts,
    }
}

/// The edge the bursts straddle, in ms after the schedule's start: `edge_ms` for windows on a
/// clock (the start is aligned to one), a window after the opening request for first-hit ones.
pub(super) fn boundary_ms(p: &Params, strategy: Strategy) -> f64 {
    match super::opens_at_first_hit(strategy) {
        true => p.window_ms as f64,
        false => p.edge_ms as f64,
    }
}

/// The trial's row and its requests (times from the boundary the bursts straddle).
pub(super) fn summarize(
    p: &Params,
    strategy: Strategy,
    trial: u32,
    tally: &OpenTally,
) -> (WindowEdgeRow, Vec<RequestRow>) {
    let edge_ns = (boundary_ms(p, strategy) * 1e6) as u64;
    let ms = |ns: u64| (ns as f64 - edge_ns as f64) / 1e6;
    // The bursts, without a first-hit window's opening request a window earlier.
    let bursts_from_ns = edge_ns.saturating_sub(p.edge_ms * 1_000_000);
    let requests = (tally.requests.iter().enumerate())
        .map(|(seq, r)| RequestRow {
            strategy,
            trial,
            seq,
            intended_ms: ms(r.intended_ns),
            sent_ms: ms(r.sent_ns),
            done_ms: ms(r.done_ns),
            allowed: r.allowed,
        })
        .collect();
    let admitted: Vec<_> = (tally.requests.iter())
        .filter(|r| r.allowed && r.intended_ns >= bursts_from_ns)
        .collect();
    let mut sent: Vec<u64> = admitted.iter().map(|r| r.sent_ns).collect();
    sent.sort_unstable();
    // From the first admitted send to the last admitted reply: every decision lies inside it.
    let first_sent = sent.first().copied().unwrap_or(0);
    let last_done = admitted.iter().map(|r| r.done_ns).max().unwrap_or(0);
    let span_ms = last_done.saturating_sub(first_sent) as f64 / 1e6;
    let max = max_in_span(&sent, p.window_ms * 1_000_000);
    let before = admitted.iter().filter(|r| r.intended_ns < edge_ns).count() as u64;
    let row = WindowEdgeRow {
        strategy,
        trial,
        limit: p.limit,
        offered: tally.offered,
        admitted: tally.checks.admitted,
        admitted_before_edge: before,
        admitted_after_edge: admitted.len() as u64 - before,
        max_admitted_in_1s: max,
        max_per_limit: max as f64 / p.limit as f64,
        admit_span_ms: span_ms,
        smooth_bound: p.limit as f64 * (1.0 + (span_ms + CLOCK_MS) / p.window_ms as f64),
        boundary_unix_ms: (tally.origin_unix_ns + edge_ns) / 1_000_000,
        max_late_us: tally.max_lateness_ns as f64 / 1e3,
    };
    (row, requests)
}

/// The resolution of the clock the scripts refill by (Redis TIME floored to ms): elapsed time
/// between two calls reads up to one millisecond long, so a bucket may refill that much more.
const CLOCK_MS: f64 = 1.0;

/// The most of `sorted` (ascending ns) inside any half-open span `[t, t + span_ns)`.
pub(super) fn max_in_span(sorted: &[u64], span_ns: u64) -> u64 {
    let mut best = 0;
    let mut lo = 0;
    for (hi, &t) in sorted.iter().enumerate() {
        while t - sorted[lo] >= span_ns {
            lo += 1;
        }
        best = best.max(hi - lo + 1);
    }
    best as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::RequestRecord;

    #[test]
    fn max_in_span_slides() {
        assert_eq!(max_in_span(&[], 10), 0);
        assert_eq!(max_in_span(&[5], 10), 1);
        let t: Vec<u64> = (0..=10).collect();
        assert_eq!(max_in_span(&t, 10), 10);
        assert_eq!(max_in_span(&[0, 0, 0, 100, 101], 10), 3);
        assert_eq!(max_in_span(&[0, 95, 100, 104, 200], 10), 3);
    }

    #[test]
    fn summary_splits_at_the_edge_and_bounds_the_span() {
        let p = Params {
            trials: 1,
            limit: 2,
            window_ms: 1000,
            edge_ms: 50,
            strategies: vec![Strategy::IncrWindow],
            connections: 1,
            lead_ms: 0,
        };
        let ms = 1_000_000;
        let req = |at: u64, allowed| RequestRecord {
            intended_ns: at * ms,
            sent_ns: at * ms,
            done_ns: at * ms + ms,
            allowed,
        };
        let mut tally = OpenTally {
            offered: 4,
            origin_unix_ns: 10_000 * ms,
            requests: vec![req(0, true), req(25, true), req(50, true), req(75, false)],
            ..OpenTally::default()
        };
        tally.checks.admitted = 3;
        let (row, requests) = summarize(&p, Strategy::IncrWindow, 0, &tally);
        assert_eq!((row.admitted_before_edge, row.admitted_after_edge), (2, 1));
        assert_eq!((row.max_admitted_in_1s, row.max_per_limit), (3, 1.5));
        assert_eq!(row.admit_span_ms, 51.0);
        assert!((row.smooth_bound - 2.104).abs() < 1e-9);
        assert_eq!(row.boundary_unix_ms, 10_050);
        assert_eq!(requests[0].intended_ms, -50.0);
        assert!(!requests[3].allowed && requests[3].sent_ms == 25.0);
    }
}
