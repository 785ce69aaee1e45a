//! # bigkey
//! Hypothesis (seed 002): Redis runs one command at a time, so one command on one big key stops
//! every other client. A sliding log whose client used its whole limit and went quiet for longer
//! than the window is trimmed by the script's ZREMRANGEBYSCORE in one call: 27 ms for 100,000
//! entries, 404 ms for 1,000,000. The key's own expiry frees the whole set inline with
//! lazyfree-lazy-expire no (Redis 7.0's default): 226 ms for 1,000,000; with yes a background
//! thread frees it and no expiry blocks Redis for 1 ms or more.
//!
//! Method: one managed server with latency-monitor-threshold 1 ms and every command logged to
//! SLOWLOG. Per (repeat, entries, lazyfree, operation) a fresh log of `entries` entries is built
//! with pipelined ZADD batches (members in the limiter's own format, scores spread over the window
//! before last). A probe thread then PINGs every `probe_period_us` on its own connection,
//! recording each round trip with its send time on the monotonic clock; after `baseline_ms` the
//! operation runs: `trim` is one ZREMRANGEBYSCORE removing every entry (timed by the harness and by
//! SLOWLOG), `expire` is a PEXPIRE `expire_after_ms` ahead and a wait, polling DBSIZE (which never
//! touches the key), until the key has gone and `lazyfree_pending_objects` is 0. The probe's worst
//! round trip overlapping the operation is the stall every client saw; LATENCY LATEST is the
//! server's own view
//! (its events at or above 1 ms). The kernel's per-thread schedstat of the main thread and of the
//! lazy-free thread (bigkey/threads.rs) says who did the work and who waited for a CPU meanwhile;
//! the variations repeat the lazy expiries with that thread at SCHED_IDLE (`idle`: it can no
//! longer take the main thread's core) and on another core (`apart`).
//!
//! Writes `bigkey/bigkey.csv` (one row per operation), `bigkey/meta.json`.

mod body;
mod charts;
mod ops;
mod report;
mod rows;
mod threads;

pub use ops::{Operation, YesNo};
pub use rows::{BigkeyRow, Bio, BIGKEY};

use super::{Body, Definition, Render, Summarize, Validate};
use crate::record::Table;
use crate::server::{admin, Target};
use serde::{Deserialize, Serialize};

/// The bigkey experiment.
pub struct Bigkey;

impl Definition for Bigkey {
    const ID: &'static str = "bigkey";
    const TOML: &'static str = include_str!("../../../experiments/bigkey.toml");
    const MUST_OWN_SERVER: Option<&'static str> = Some(
        "it sets lazyfree-lazy-expire, latency-monitor-threshold and SLOWLOG, and stalls the server on purpose",
    );
    type Params = Params;

    const BODY: Body<Params> = body::run;
    const CHARTS: Render = charts::render;
    const SUMMARY: Summarize = report::summary;

    fn tables() -> Vec<Table> {
        vec![BIGKEY.table()]
    }
}

/// Parameters; defaults in `experiments/bigkey.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Repetitions of every size x operation x lazyfree setting.
    pub repeats: u32,
    pub entries: Vec<u64>,
    /// How the big log goes: `trim` (ZREMRANGEBYSCORE of every entry) or `expire` (PEXPIRE,
    /// then Redis's active expiry).
    pub operations: Vec<Operation>,
    pub lazyfree: Vec<YesNo>,
    pub probe_period_us: u64,
    pub baseline_ms: u64,
    pub expire_after_ms: u64,
    pub window_ms: u64,
    pub zadd_batch: u64,
    pub pipeline: usize,
    pub bio_apart_repeats: u32,
    /// The variation testing whether the freeing thread takes the main thread's core: the
    /// lazyfree-yes expiries repeated this often with `bio_lazy_free` at SCHED_IDLE (0: not run).
    pub bio_idle_repeats: u32,
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        let p = self;
        let ok = p.repeats > 0
            && !p.entries.is_empty()
            && p.entries.iter().all(|&n| n > 0)
            && !p.operations.is_empty()
            && !p.lazyfree.is_empty()
            && p.probe_period_us > 0
            && p.window_ms > 0
            && p.zadd_batch > 0
            && p.pipeline > 0;
        if ok {
            return Ok(());
        }
        Err("repeats, entries (each), probe_period_us, window_ms, zadd_batch, pipeline must be >= 1; \
             operations and lazyfree non-empty"
            .into())
    }
}

/// Turns on the server's own latency records; returns what is now in effect.
fn configure(target: &Target) -> Result<String, crate::server::ServerError> {
    let mut con = target.connection()?;
    let settings = [
        ("latency-monitor-threshold", "1"),
        ("slowlog-log-slower-than", "0"),
        ("slowlog-max-len", "1024"),
    ];
    let mut out = Vec::new();
    for (name, value) in settings {
        out.push(format!(
            "{name} {}",
            admin::config_set(&mut con, name, value)?
        ));
    }
    Ok(out.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_profiles_are_valid_and_sweep_lazyfree_both_ways() {
        for profile in [
            crate::context::Profile::Quick,
            crate::context::Profile::Full,
        ] {
            let p = crate::experiments::frame::resolve::<Bigkey>(profile, &[]).unwrap();
            p.validate().unwrap();
            assert_eq!(p.lazyfree, [YesNo::No, YesNo::Yes]);
            assert_eq!(p.operations, [Operation::Trim, Operation::Expire]);
        }
        let sets = [(
            "operations".to_string(),
            r#"["trim", "delete"]"#.to_string(),
        )];
        let err =
            crate::experiments::frame::resolve::<Bigkey>(crate::context::Profile::Quick, &sets)
                .unwrap_err();
        assert!(
            matches!(err, crate::experiments::params::ParamError::BadValue { .. }),
            "{err}"
        );
    }
}
