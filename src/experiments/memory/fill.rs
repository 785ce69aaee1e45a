//! One fill of the memory experiment: every client of a fresh key set checked up to its limit
//! through the limiter itself, with `used_memory` read around it on a quiet server, and one
//! client's key inspected.

use super::MemoryRow;
use crate::experiments::measure::{measure, Measured};
use crate::experiments::{ExperimentError, Phase, PhaseError, Session};
use crate::limiter::{unix_ms, LimitSpec, Limiter, Strategy};
use crate::load::{KeyChoice, Stop, WorkerSpec};
use crate::server::{admin, Target};
use std::time::Duration;

/// How long disconnected workers may take to be freed before memory is read anyway (an error).
const QUIET_TIMEOUT: Duration = Duration::from_secs(10);

/// `clients` clients of `strategy`, each to be filled to `limit`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Fill {
    pub strategy: Strategy,
    pub limit: u64,
    pub clients: u64,
    /// The log's members made this long (the member-length sweep); `None`: ratelab's short id.
    pub member_bytes: Option<u32>,
    /// Client keys padded to this many bytes (the key-length sweep); `None`: as built.
    pub key_bytes: Option<u64>,
}

impl Fill {
    /// A fill of `clients` clients at `limit`, members and keys as ratelab makes them.
    pub(super) fn plain(strategy: Strategy, limit: u64, clients: u64) -> Self {
        Fill {
            strategy,
            limit,
            clients,
            member_bytes: None,
            key_bytes: None,
        }
    }

    /// The prefix of this fill's client keys (each is the prefix and a 12-digit index), padded
    /// so the keys are `key_bytes` long when the fill asks for it and the prefix leaves room.
    fn key_prefix(&self, setting_prefix: &str) -> String {
        let mut prefix = format!("{setting_prefix}{}:{}:", self.strategy, self.limit);
        if let Some(bytes) = self.member_bytes {
            prefix.push_str(&format!("m{bytes}:"));
        }
        if let Some(bytes) = self.key_bytes {
            let index_len = KeyChoice::indexed("", 0).len();
            let pad = (bytes as usize).saturating_sub(prefix.len() + index_len);
            prefix.push_str(&"k".repeat(pad));
        }
        prefix
    }
}

/// What every fill at one setting shares.
pub(super) struct FillSetup<'a> {
    /// The run: its server, worker binary, CPUs, seed and timeouts.
    pub session: &'a Session<'a>,
    pub window_ms: u64,
    pub connections: usize,
    pub in_flight: usize,
    /// This setting's key prefix (`ratelab:memory:<run>:`).
    pub prefix: &'a str,
    /// zset-max-listpack-entries in effect, for error messages.
    pub threshold: u64,
}

/// What one fill measured.
pub(super) struct Filled {
    key_name_bytes: u64,
    before: u64,
    after: u64,
    keys: u64,
    sample_key_bytes: u64,
    encoding: String,
    member_len: f64,
    sample_state: String,
    measured: Measured,
}

/// The limit of a fill: `limit` per window for every strategy, windows starting now, so the
/// whole fill sits in one window and nothing slides out or expires while it runs.
fn limit_spec(f: &Fill, window_ms: u64) -> LimitSpec {
    let limit = f.limit;
    let mut spec = LimitSpec {
        capacity: limit,
        refill_per_sec: limit as f64 * 1000.0 / window_ms as f64,
        window_ms,
        window_origin_ms: unix_ms(),
        idle_ttl_ms: window_ms,
        ..LimitSpec::default()
    };
    spec.log.member_bytes = f.member_bytes;
    spec
}

/// Fills `f.clients` keys to `f.limit` and measures what they cost.
pub(super) fn fill(s: &FillSetup, f: &Fill) -> Result<Filled, ExperimentError> {
    let what = || {
        format!(
            "{} L={} x {} clients at zset-max-listpack-entries {}{}{}",
            f.strategy,
            f.limit,
            f.clients,
            s.threshold,
            f.member_bytes
                .map(|b| format!(", {b}-byte members"))
                .unwrap_or_default(),
            f.key_bytes
                .map(|b| format!(", {b}-byte keys"))
                .unwrap_or_default(),
        )
    };
    let spec = limit_spec(f, s.window_ms);
    let target = &s.session.target;
    empty_server(target, &Limiter::new(f.strategy, spec)).phase(what)?;
    let before = quiet_used_memory(target).phase(what)?;
    let key_prefix = f.key_prefix(s.prefix);
    let keys = KeyChoice::RoundRobin {
        prefix: key_prefix.clone(),
        count: f.clients,
    };
    let worker = WorkerSpec {
        connections: s.connections,
        in_flight: s.in_flight,
        ..WorkerSpec::new(
            f.strategy,
            spec,
            keys,
            Stop::AfterChecks(f.clients * f.limit),
        )
    };
    let plan = s.session.closed_loop(1, worker);
    let measured = measure(target, &plan, &what)?;
    at_limit(&measured, f).phase(what)?;
    let after = quiet_used_memory(target).phase(what)?;
    let mut con = target.connection().phase(what)?;
    let keys: u64 = redis::cmd("DBSIZE").query(&mut con).phase(what)?;
    let client0 = KeyChoice::indexed(&key_prefix, 0);
    let key = f.strategy.state_key(&client0, &spec);
    let sample_key_bytes = admin::memory_usage(&mut con, &key).phase(what)?;
    let encoding = admin::object_encoding(&mut con, &key).phase(what)?;
    let member_len = match f.strategy {
        Strategy::LuaLog => mean_member_len(&mut con, &key).phase(what)?,
        _ => 0.0,
    };
    let sample_state: Option<String> = f
        .strategy
        .state_command(&client0, &spec)
        .query(&mut con)
        .phase(what)?;
    Ok(Filled {
        key_name_bytes: client0.len() as u64,
        before,
        after,
        keys,
        sample_key_bytes: sample_key_bytes.unwrap_or(0),
        encoding: encoding.unwrap_or_else(|| "missing".into()),
        member_len,
        sample_state: sample_state.unwrap_or_default(),
        measured,
    })
}

/// Empties the server and loads the strategy's script, so the script cache is not counted.
fn empty_server(target: &Target, limiter: &Limiter) -> Result<(), PhaseError> {
    let mut con = target.connection()?;
    admin::flush_all_sync(&mut con)?;
    if let Some((source, _)) = limiter.script() {
        redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(source)
            .query::<String>(&mut con)?;
    }
    Ok(())
}

/// `used_memory` read on a fresh connection once it is the only client. A connection kept open
/// across a fill would not do: Redis resizes an idle client's buffers in its cron (by kilobytes),
/// and a worker's connections are only freed some time after it exits.
fn quiet_used_memory(target: &Target) -> Result<u64, PhaseError> {
    let mut con = target.connection()?;
    let left = admin::wait_for_clients(&mut con, 1, QUIET_TIMEOUT)?;
    if left > 1 {
        return Err(PhaseError::Invalid(format!(
            "{left} clients still connected after {QUIET_TIMEOUT:?}: memory would count their buffers"
        )));
    }
    Ok(admin::used_memory(&mut con)?)
}

/// Every check admitted and none refused: each key holds exactly `limit` checks.
fn at_limit(m: &Measured, f: &Fill) -> Result<(), PhaseError> {
    let want = f.clients * f.limit;
    if m.tally.admitted == want && m.tally.denied == 0 {
        return Ok(());
    }
    Err(PhaseError::Invalid(format!(
        "expected {want} admitted checks, got {} admitted and {} denied: not every client is at its limit",
        m.tally.admitted, m.tally.denied
    )))
}

/// Mean byte length of a log's members.
fn mean_member_len(con: &mut redis::Connection, key: &str) -> Result<f64, PhaseError> {
    let members: Vec<Vec<u8>> = redis::cmd("ZRANGE").arg(key).arg(0).arg(-1).query(con)?;
    if members.is_empty() {
        return Ok(0.0);
    }
    let total: usize = members.iter().map(Vec::len).sum();
    Ok(total as f64 / members.len() as f64)
}

impl Filled {
    /// The CSV row of this fill.
    pub(super) fn row(&self, f: &Fill, threshold: u64, setting: &str, repeat: u32) -> MemoryRow {
        let m = &self.measured;
        let bytes_per_client = (self.after as f64 - self.before as f64) / f.clients as f64;
        MemoryRow {
            strategy: f.strategy,
            limit: f.limit,
            clients: f.clients,
            listpack_entries: threshold,
            listpack_setting: setting.to_string(),
            over_threshold: f.limit as i64 - threshold as i64,
            repeat,
            bytes_per_client,
            bytes_per_entry: bytes_per_client / f.limit as f64,
            mb_per_10k_clients: bytes_per_client * 10_000.0 / 1e6,
            used_memory_before: self.before,
            used_memory_after: self.after,
            keys: self.keys,
            sample_key_bytes: self.sample_key_bytes,
            encoding: self.encoding.clone(),
            listpack: u8::from(self.encoding == "listpack"),
            member_len: self.member_len,
            member_bytes: f.member_bytes.unwrap_or(0),
            key_len: f.key_bytes.unwrap_or(0),
            key_name_bytes: self.key_name_bytes,
            sample_state: self.sample_state.clone(),
            decisions: m.tally.admitted + m.tally.denied,
            denied: m.tally.denied,
            cpu_us_per_decision: m.cpu_us_per_decision(),
            decisions_per_s: m.decisions_per_s(),
            fill_s: m.tally.elapsed_ns as f64 / 1e9,
        }
    }
}
