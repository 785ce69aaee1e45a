//! eviction's summary for REPORT.md: per layout and policy, who survived and what the limiter
//! then let through.

use super::{CellRow, UserRow};
use super::{CELLS, USERS};
use crate::analysis::table::summary_table;
use crate::analysis::table::{Key, Stat};
use crate::analysis::AnalysisError;
use crate::record::csv_text;
use std::path::Path;

pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let cell_keys: [Key<CellRow>; 2] = [
        ("layout", |r| csv_text(&r.layout)),
        ("policy", |r| csv_text(&r.policy)),
    ];
    let cell_stats: [Stat<CellRow>; 7] = [
        ("limiter keys kept %", |r| {
            Some(100.0 * r.limiter_survived_fraction)
        }),
        ("cache with expiry kept %", |r| {
            Some(100.0 * r.cache_ttl_survived_fraction)
        }),
        ("cache without kept %", |r| {
            Some(100.0 * r.cache_plain_survived_fraction)
        }),
        ("evicted (limiter's server)", |r| {
            Some(r.evicted_on_limiter_server as f64)
        }),
        ("cache writes refused", |r| {
            Some(r.cache_write_errors as f64)
        }),
        ("limiter check OOM", |r| Some(f64::from(r.limiter_oom))),
        ("pressure ms", |r| Some(r.pressure_ms)),
    ];
    let user_keys: [Key<UserRow>; 4] = [
        ("layout", |r| csv_text(&r.layout)),
        ("policy", |r| csv_text(&r.policy)),
        ("user", |r| csv_text(&r.class)),
        ("bucket kept", |r| r.key_survived.to_string()),
    ];
    let user_stats: [Stat<UserRow>; 5] = [
        ("checks", |r| Some(r.checks_after as f64)),
        ("admitted after", |r| Some(r.admitted_after as f64)),
        ("by the store's policy", |r| {
            Some(r.degraded_allowed_after as f64)
        }),
        ("exact bucket", |r| Some(r.ideal_after as f64)),
        ("over-admitted", |r| Some(r.over_admitted as f64)),
    ];
    let mut out = summary_table(&CELLS.read(dir)?, &cell_keys, &cell_stats);
    out.push_str("\nPer user, after the pressure ");
    out.push_str("(emptied: it had emptied its bucket before; new: first seen after):\n\n");
    out.push_str(&summary_table(&USERS.read(dir)?, &user_keys, &user_stats));
    Ok(out)
}
