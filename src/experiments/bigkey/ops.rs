//! The big log and what is done to it: built fast with pipelined ZADD batches, then trimmed in one
//! ZREMRANGEBYSCORE or left to expire; each operation reports the span in which the server was
//! busy with it, for the probe's log to be read over.

use crate::experiments::PhaseError;
use crate::server::admin;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// What is done to the big log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Operation {
    /// One ZREMRANGEBYSCORE removing every entry, as the script's trim after a quiet window.
    Trim,
    /// The key's own expiry, found by Redis's active expire cycle.
    Expire,
}

/// A yes/no config value, written as Redis writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum YesNo {
    No,
    Yes,
}

impl YesNo {
    /// As Redis writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            YesNo::No => "no",
            YesNo::Yes => "yes",
        }
    }
}

/// How long a big key may take to expire, or be freed in the background, before it is an error.
const GONE_TIMEOUT: Duration = Duration::from_secs(30);
/// How often the harness looks whether the key has gone (DBSIZE and INFO never touch the key, so
/// expiry stays Redis's own active cycle, as for a client that went quiet).
const POLL: Duration = Duration::from_millis(1);

/// A sliding log to build: `entries` entries scored over the window before last.
pub(super) struct Log<'a> {
    pub key: &'a str,
    pub entries: u64,
    pub window_ms: u64,
    /// Members are `<12 hex digits>-<counter in hex>`, the limiter's own format.
    pub member_prefix: u64,
}

type SlowlogEntry = (i64, i64, i64, Vec<String>, String, String);

/// What one operation did, and when the server was busy with it.
#[derive(Debug, Clone)]
pub(super) struct Outcome {
    /// The span the probe is read over.
    pub from: Instant,
    pub to: Instant,
    /// Entries that went: ZREMRANGEBYSCORE's reply, or the log's size when it expired.
    pub removed: u64,
    /// trim: the command's round trip as the harness saw it.
    pub command_ms: Option<f64>,
    /// trim: the command's duration by SLOWLOG.
    pub slowlog_ms: Option<f64>,
    /// expire: from the key's disappearance until `lazyfree_pending_objects` was 0 again.
    pub background_free_ms: Option<f64>,
}

/// Builds the log with ZADD commands of `batch` members, `pipeline` per round trip; returns the
/// seconds it took.
pub(super) fn build(
    con: &mut redis::Connection,
    log: &Log,
    batch: u64,
    pipeline: usize,
) -> Result<f64, PhaseError> {
    let started = Instant::now();
    let first = crate::limiter::unix_ms() - 2 * log.window_ms;
    let step = log.window_ms as f64 / log.entries.max(1) as f64;
    let mut pipe = redis::pipe();
    let mut queued = 0;
    let mut i = 0;
    while i < log.entries {
        let end = (i + batch.max(1)).min(log.entries);
        let mut zadd = redis::cmd("ZADD");
        zadd.arg(log.key);
        for n in i..end {
            let score = first + (n as f64 * step) as u64;
            zadd.arg(score)
                .arg(format!("{:012x}-{n:x}", log.member_prefix));
        }
        pipe.add_command(zadd).ignore();
        queued += 1;
        i = end;
        if queued == pipeline.max(1) || i == log.entries {
            pipe.query::<()>(con)?;
            pipe.clear();
            queued = 0;
        }
    }
    let card: u64 = redis::cmd("ZCARD").arg(log.key).query(con)?;
    if card != log.entries {
        return Err(PhaseError::Invalid(format!(
            "built {card} entries, wanted {}",
            log.entries
        )));
    }
    Ok(started.elapsed().as_secs_f64())
}

/// The sliding-log script's trim after a quiet window: one ZREMRANGEBYSCORE removing every entry
/// older than the window, which here is all of them.
pub(super) fn trim(con: &mut redis::Connection, log: &Log) -> Result<Outcome, PhaseError> {
    redis::cmd("SLOWLOG").arg("RESET").query::<()>(con)?;
    let cutoff = crate::limiter::unix_ms() - log.window_ms;
    let from = Instant::now();
    let removed: u64 = redis::cmd("ZREMRANGEBYSCORE")
        .arg(log.key)
        .arg("-inf")
        .arg(cutoff)
        .query(con)?;
    let to = Instant::now();
    // Read at once: the probe's PINGs are logged too (threshold 0) and would push it out.
    // Entries are [id, time, duration µs, [args], client address, client name].
    let entries: Vec<SlowlogEntry> = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(-1)
        .query::<Vec<redis::Value>>(con)?
        .into_iter()
        .filter_map(|v| redis::from_redis_value::<SlowlogEntry>(v).ok())
        .collect();
    let slowlog_us = entries
        .iter()
        .find(|(_, _, _, args, _, _)| {
            args.first()
                .is_some_and(|c| c.eq_ignore_ascii_case("zremrangebyscore"))
        })
        .map(|e| e.2);
    Ok(Outcome {
        from,
        to,
        removed,
        command_ms: Some(to.duration_since(from).as_secs_f64() * 1e3),
        slowlog_ms: slowlog_us.map(|us| us as f64 / 1e3),
        background_free_ms: None,
    })
}

/// The log's own expiry: PEXPIRE it `after_ms` ahead, wait until Redis's active expiry has
/// deleted it and any background thread has freed it.
pub(super) fn expire(
    con: &mut redis::Connection,
    log: &Log,
    after_ms: u64,
) -> Result<Outcome, PhaseError> {
    let keys: u64 = redis::cmd("DBSIZE").query(con)?;
    if keys != 1 {
        return Err(PhaseError::Invalid(format!(
            "{keys} keys in the database: the big log must be alone to see when it has gone"
        )));
    }
    // What the expiry will remove, counted on the server: the whole set goes with its key.
    let removed: u64 = redis::cmd("ZCARD").arg(log.key).query(con)?;
    let set_at = Instant::now();
    redis::cmd("PEXPIRE")
        .arg(log.key)
        .arg(after_ms)
        .query::<()>(con)?;
    let deadline = set_at + Duration::from_millis(after_ms);
    let gone = poll_until(|| Ok(redis::cmd("DBSIZE").query::<u64>(con)? == 0))?;
    let freed = poll_until(|| {
        Ok(admin::info_u64(con, "memory", "lazyfree_pending_objects").unwrap_or(0) == 0)
    })?;
    Ok(Outcome {
        from: deadline.min(gone),
        to: freed,
        removed,
        command_ms: None,
        slowlog_ms: None,
        background_free_ms: Some(freed.duration_since(gone).as_secs_f64() * 1e3),
    })
}

/// Polls `done` until it holds; returns when it first did.
fn poll_until(mut done: impl FnMut() -> Result<bool, PhaseError>) -> Result<Instant, PhaseError> {
    let started = Instant::now();
    loop {
        if done()? {
            return Ok(Instant::now());
        }
        if started.elapsed() > GONE_TIMEOUT {
            return Err(PhaseError::Invalid(format!(
                "the big log had not expired and been freed after {GONE_TIMEOUT:?}"
            )));
        }
        std::thread::sleep(POLL);
    }
}

/// LATENCY LATEST as (event, max ms), worst first; empty when nothing crossed the threshold.
pub(super) fn latency_latest(
    con: &mut redis::Connection,
) -> Result<Vec<(String, f64)>, PhaseError> {
    let events: Vec<(String, i64, i64, i64)> = redis::cmd("LATENCY").arg("LATEST").query(con)?;
    let mut out: Vec<(String, f64)> = events
        .into_iter()
        .map(|(event, _, _, max_ms)| (event, max_ms as f64))
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    Ok(out)
}

/// Whether a latency event is the operation's own: a slow command for a trim, the expire cycle or
/// an expired key's deletion for an expiry (others, e.g. `fast-command`, are the machine's noise).
pub(super) fn is_own_event(op: Operation, event: &str) -> bool {
    match op {
        Operation::Trim => event == "command",
        Operation::Expire => event.starts_with("expire"),
    }
}
