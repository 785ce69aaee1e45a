//! pods' summary for REPORT.md: per strategy, pods, offered rate and round trip, what reached
//! the partner per second (mean, lowest, highest of the measured seconds), beside what the pods
//! decided, the seed's alert rule, the peak second and what the runs cost Redis.

use super::PodsRunRow;
use crate::analysis::table::{summarize, Key, Stat};
use crate::analysis::AnalysisError;
use crate::record::csv_text;
use std::path::Path;

/// The runs table.
pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let keys: [Key<PodsRunRow>; 4] = [
        ("strategy", |r| csv_text(&r.strategy)),
        ("pods", |r| r.pods.to_string()),
        ("offered /s", |r| r.offered_rps.to_string()),
        ("+rtt ms", |r| r.rtt_ms.to_string()),
    ];
    let stats: [Stat<PodsRunRow>; 11] = [
        ("reached /s", |r| Some(r.reached_per_s)),
        ("lowest s", |r| Some(r.reached_min_per_s as f64)),
        ("highest s", |r| Some(r.reached_max_per_s as f64)),
        ("decided /s", |r| Some(r.decided_per_s)),
        ("offered x rtt", |r| Some(r.offered_within_rtt)),
        ("alert % of s", |r| Some(r.alert_pct)),
        ("peak s", |r| Some(r.peak_reached as f64)),
        ("sent - received", |r| Some(r.lost as f64)),
        ("p99 ms", |r| Some(r.p99_ms)),
        ("Redis busy %", |r| Some(r.redis_busy_pct)),
        ("µs / call", |r| Some(r.usec_per_call)),
    ];
    summarize(&dir.join("runs.csv"), &keys, &stats)
}
