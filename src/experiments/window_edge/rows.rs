//! window-edge's CSV schema.

use crate::limiter::Strategy;
use crate::record::CsvFile;
use serde::{Deserialize, Serialize};

/// `window-edge.csv`: One row per trial of one strategy.
pub const WINDOW_EDGE: CsvFile<WindowEdgeRow> = CsvFile::new("window-edge.csv");

/// `requests.csv`: One row per request.
pub const REQUESTS: CsvFile<RequestRow> = CsvFile::new("requests.csv");

/// One trial of one strategy.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WindowEdgeRow {
    pub strategy: Strategy,
    pub trial: u32,
    pub limit: u64,
    pub offered: u64,
    pub admitted: u64,
    /// Admitted of the burst before the boundary, and of the one after it.
    pub admitted_before_edge: u64,
    /// Admitted of the burst sent just after the boundary.
    pub admitted_after_edge: u64,
    /// The most admitted requests sent within any 1-second span.
    pub max_admitted_in_1s: u64,
    /// max_admitted_in_1s / limit: above 1, more got through in one second than the limit.
    pub max_per_limit: f64,
    /// From the first admitted request's send to the last one's reply, ms.
    pub admit_span_ms: f64,
    /// L + L/s x admit_span: what continuous refill at the limit could have admitted.
    pub smooth_bound: f64,
    /// The window boundary the bursts straddle, Unix ms on this machine's clock.
    pub boundary_unix_ms: u64,
    /// The latest start against the schedule, µs.
    pub max_late_us: f64,
}

/// One request, times in ms from the window boundary (negative: before it).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RequestRow {
    pub strategy: Strategy,
    pub trial: u32,
    pub seq: usize,
    /// When the schedule meant the request to start.
    pub intended_ms: f64,
    /// When it was sent.
    pub sent_ms: f64,
    /// When its decision came back.
    pub done_ms: f64,
    /// Whether the limiter admitted it.
    pub allowed: bool,
}
