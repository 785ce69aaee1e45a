//! Redis's slow log around a run, read without resetting it (the server may be the user's): the
//! entries whose id is above the newest one before the run were logged during it. Entries beyond
//! slowlog-max-len (128 by default) are dropped by Redis itself, so a count is a floor above it.

use super::ServerError;

/// A SLOWLOG GET entry: [id, time, duration µs, [args], client address, client name].
type Entry = (i64, i64, i64, Vec<String>, String, String);

/// Commands that run the limiter's script.
const SCRIPT_COMMANDS: [&str; 5] = ["eval", "evalsha", "eval_ro", "evalsha_ro", "fcall"];

/// What the slow log held after a run.
#[derive(Debug, Clone, Copy, Default)]
pub struct SlowLog {
    /// slowlog-log-slower-than during the run, µs (Redis's default is 10,000: 10 ms).
    pub threshold_us: i64,
    /// Entries logged during the run.
    pub entries: u64,
    /// Of them, runs of the limiter's script.
    pub script_entries: u64,
    /// The longest of those script runs, µs (0: none logged).
    pub script_slowest_us: u64,
}

fn entries(con: &mut redis::Connection) -> Result<Vec<Entry>, ServerError> {
    let raw: Vec<redis::Value> = redis::cmd("SLOWLOG").arg("GET").arg(-1).query(con)?;
    Ok(raw
        .into_iter()
        .filter_map(|v| redis::from_redis_value::<Entry>(v).ok())
        .collect())
}

/// The newest entry's id now (-1 for an empty log).
pub fn newest_id(con: &mut redis::Connection) -> Result<i64, ServerError> {
    Ok(entries(con)?.iter().map(|e| e.0).max().unwrap_or(-1))
}

/// The entries logged after the one with id `since`, and the threshold they were logged at.
pub fn since(con: &mut redis::Connection, since: i64) -> Result<SlowLog, ServerError> {
    let threshold: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("slowlog-log-slower-than")
        .query(con)?;
    let threshold_us = threshold.get(1).and_then(|t| t.parse().ok()).unwrap_or(-1);
    let new: Vec<Entry> = entries(con)?.into_iter().filter(|e| e.0 > since).collect();
    let is_script = |e: &&Entry| {
        (e.3.first()).is_some_and(|c| SCRIPT_COMMANDS.iter().any(|s| c.eq_ignore_ascii_case(s)))
    };
    Ok(SlowLog {
        threshold_us,
        entries: new.len() as u64,
        script_entries: new.iter().filter(is_script).count() as u64,
        script_slowest_us: new
            .iter()
            .filter(is_script)
            .map(|e| e.2.max(0) as u64)
            .max()
            .unwrap_or(0),
    })
}
