//! # window-edge
//! Hypothesis (seed 001): a fixed window of L per second admits L at the end of one window and L
//! again at the start of the next, so up to 2L pass inside one second. A token bucket (capacity
//! L, refilling L/s) admits its burst L plus only what refills meanwhile; GCRA and the
//! sliding-window counter should behave like it.
//!
//! Method: per trial and strategy, a fresh key; L requests evenly spaced over the last `edge_ms`
//! of a window and L over the first `edge_ms` of the next, scheduled by the open-loop generator
//! and aligned to the window boundary on the clock the strategy reads: the caller's for
//! incr-window, Redis's for the scripts (its offset from ours is measured with TIME). Every
//! request's send time is kept; the result is the most admitted in any sliding 1-second span,
//! beside `smooth_bound`, the most a limit of L/s refilling continuously could admit over the
//! time the admitted requests took, plus the millisecond the scripts' clock may round (L + L x
//! (span + 1 ms)).
//!
//! A custom limiter whose windows open at a key's first request (`anchor = "first-hit"`) has its
//! own edge: one request opens its window, then the two bursts straddle that request's time plus
//! one window (L - 1 before, L after), and times are from that edge.
//!
//! Writes `window-edge/window-edge.csv` (one row per trial), `window-edge/requests.csv` (one row
//! per request, times in ms from the window boundary), `window-edge/meta.json`.

mod body;
mod bursts;
mod charts;
mod report;
mod rows;

pub use rows::{RequestRow, WindowEdgeRow, REQUESTS, WINDOW_EDGE};

use super::limiters::Verdicts;
use super::{Body, Definition, PhaseError, Render, Summarize, Validate};
use crate::limiter::Strategy;
use crate::record::Table;
use crate::server::Target;
use serde::{Deserialize, Serialize};

/// The window-edge experiment.
pub struct WindowEdge;

impl Definition for WindowEdge {
    const ID: &'static str = "window-edge";
    const TOML: &'static str = include_str!("../../../experiments/window-edge.toml");
    type Params = Params;
    const TAKES_LIMITERS: bool = true;
    const TAKES_PROCESSES: bool = true;
    const VERDICTS: Verdicts = report::verdicts;
    const LIMITER_CLAIMS: super::limiters::Claims = report::limiter_claims;

    const BODY: Body<Params> = body::run;
    const CHARTS: Render = charts::render;
    const SUMMARY: Summarize = report::summary;

    fn tables() -> Vec<Table> {
        vec![WINDOW_EDGE.table(), REQUESTS.table()]
    }
}

/// Parameters; defaults in `experiments/window-edge.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Repetitions of the two bursts around a window edge, per strategy.
    pub trials: u32,
    pub limit: u64,
    /// The fixed window, and the sliding span admissions are counted over (the seed's 1 s).
    pub window_ms: u64,
    pub edge_ms: u64,
    /// The limiters whose admissions around the edge are counted.
    pub strategies: Vec<Strategy>,
    pub connections: usize,
    /// The least time from the start signal to the first request (the open loop's set-up).
    pub lead_ms: u64,
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        if self.trials == 0
            || self.limit == 0
            || self.connections == 0
            || self.edge_ms == 0
            || 2 * self.edge_ms >= self.window_ms
        {
            return Err(
                "trials, limit, connections, edge_ms must be >= 1 and edge_ms under half of window_ms".into(),
            );
        }
        Ok(())
    }
}

/// Redis's clock minus ours in ns, from the quickest of a few TIME calls, and that round trip.
fn redis_clock_offset(target: &Target) -> Result<(i64, u64), PhaseError> {
    let mut con = target.connection()?;
    let mut best: Option<(i64, u64)> = None;
    for _ in 0..5 {
        let before = unix_ms_f();
        let (secs, micros): (u64, u64) = redis::cmd("TIME").query(&mut con)?;
        let after = unix_ms_f();
        let redis_ms = secs as f64 * 1e3 + micros as f64 / 1e3;
        let offset = ((redis_ms - (before + after) / 2.0) * 1e6) as i64;
        let rtt = ((after - before) * 1e6) as u64;
        if best.is_none_or(|(_, r)| rtt < r) {
            best = Some((offset, rtt));
        }
    }
    best.ok_or_else(|| PhaseError::Invalid("no TIME reply".into()))
}

fn unix_ms_f() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1e3)
        .unwrap_or(0.0)
}

/// Whether a strategy's windows open at each key's first request (a custom limiter's manifest
/// says `anchor = "first-hit"`): its edge is one window after that request, not on the clock.
fn opens_at_first_hit(s: Strategy) -> bool {
    match s {
        Strategy::Custom(name) => name.definition().is_some_and(|d| {
            d.algorithm.has_windows() && d.anchor == crate::limiter::custom::Anchor::FirstHit
        }),
        _ => false,
    }
}

/// Whether a strategy names its windows by the caller's clock (the rest read Redis TIME).
fn on_caller_clock(s: Strategy) -> bool {
    match s {
        // A custom limiter is on the caller's clock when its manifest hands it the time.
        Strategy::Custom(name) => name.definition().is_some_and(|d| d.uses_caller_clock()),
        s => matches!(
            s,
            Strategy::NaiveWindow
                | Strategy::IncrWindow
                | Strategy::LuaWindow
                | Strategy::MultiWindow
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_profiles_parse_and_bursts_straddle_the_boundary() {
        for profile in [
            crate::context::Profile::Quick,
            crate::context::Profile::Full,
        ] {
            let p = crate::experiments::frame::resolve::<WindowEdge>(profile, &[]).unwrap();
            assert_eq!((p.limit, p.edge_ms), (100, 50));
            assert!(p.strategies.contains(&Strategy::IncrWindow));
        }
        assert!(on_caller_clock(Strategy::IncrWindow) && !on_caller_clock(Strategy::LuaSwc));
    }
}
