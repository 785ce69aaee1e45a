//! A user's Lua limiter, run beside the built-in strategies (`--limiter MANIFEST`). The manifest
//! ([`manifest`]) says how to call the script: KEYS and ARGV templates ([`template`]), how to read
//! the decision from the reply ([`reply`]), which algorithm it implements (so experiments know
//! what its limit means and which built-in strategy is its reference) and whether it is sent by
//! EVAL, EVALSHA (with or without a fallback on NOSCRIPT) or called as a function (FCALL, with or
//! without FUNCTION LOAD when missing), as the scripts experiment invokes its built-ins.
//!
//! Loaded limiters are registered once per process ([`register`]) under their manifest's name,
//! which becomes a [`Strategy::Custom`]; worker processes receive the definitions with their job.

pub mod anchor;
pub mod manifest;
pub mod promise;
pub mod reply;
pub mod template;

use super::lua_log::LogMembers;
use super::script::LuaScript;
use super::{Attempt, Check, Decision, Invocation, LimitSpec, LimiterError, Strategy};
use redis::aio::ConnectionLike;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, LazyLock, Mutex, RwLock};
use template::{Fill, Placeholder, Template};

pub use manifest::load;

/// What a manifest's limit means, named by the algorithm; each has a built-in reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Algorithm {
    /// `{limit}` tokens refilled at `{rate_per_s}` (lua-bucket).
    TokenBucket,
    /// `{limit}` per `{window_ms}` at a steady rate, bursts of `{limit}` (lua-gcra).
    Gcra,
    /// `{limit}` per fixed window of `{window_ms}` (lua-window).
    FixedWindow,
    /// `{limit}` in any span of `{window_ms}`, a log of requests (lua-log).
    SlidingLog,
    /// `{limit}` per sliding `{window_ms}`, estimated from two windows (lua-swc).
    SlidingWindow,
}

impl Algorithm {
    /// Whether its limit is counted per window, so the windows' anchor matters.
    pub fn has_windows(self) -> bool {
        matches!(self, Algorithm::FixedWindow | Algorithm::SlidingWindow)
    }

    const NAMES: &'static [(&'static str, Algorithm)] = &[
        ("token-bucket", Algorithm::TokenBucket),
        ("gcra", Algorithm::Gcra),
        ("fixed-window", Algorithm::FixedWindow),
        ("sliding-log", Algorithm::SlidingLog),
        ("sliding-window", Algorithm::SlidingWindow),
    ];

    /// The built-in Lua strategy of the same algorithm.
    pub fn reference(self) -> Strategy {
        match self {
            Algorithm::TokenBucket => Strategy::LuaBucket,
            Algorithm::Gcra => Strategy::LuaGcra,
            Algorithm::FixedWindow => Strategy::LuaWindow,
            Algorithm::SlidingLog => Strategy::LuaLog,
            Algorithm::SlidingWindow => Strategy::LuaSwc,
        }
    }

    /// Its name in manifests.
    pub fn name(self) -> &'static str {
        (Self::NAMES.iter())
            .find(|(_, a)| *a == self)
            .map_or("?", |(n, _)| n)
    }

    /// The steady rate `{rate_per_s}` stands for: the refill of a bucket, limit / window otherwise.
    fn rate_per_s(self, spec: &LimitSpec) -> f64 {
        match self {
            Algorithm::TokenBucket => spec.refill_per_sec,
            _ => spec.capacity as f64 * 1000.0 / spec.window_ms.max(1) as f64,
        }
    }
}

impl FromStr for Algorithm {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        (Self::NAMES.iter())
            .find(|(n, _)| *n == s)
            .map(|&(_, a)| a)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::NAMES.iter().map(|(n, _)| *n).collect();
                format!("unknown algorithm `{s}`; valid: {}", names.join(", "))
            })
    }
}

/// Where a window limiter's windows start, which says where its edge is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Anchor {
    /// At multiples of the window since the Unix epoch (`floor(now / window)`).
    #[default]
    Epoch,
    /// At multiples of the window since the experiment's origin (`{window}`; the epoch where an
    /// experiment aligns its windows to it).
    Origin,
    /// At each key's first request, as windows kept by a Redis expiry are (SET NX PX, then INCR).
    FirstHit,
}

impl Anchor {
    const NAMES: &'static [(&'static str, Anchor)] = &[
        ("epoch", Anchor::Epoch),
        ("origin", Anchor::Origin),
        ("first-hit", Anchor::FirstHit),
    ];

    /// Its name in manifests.
    pub fn name(self) -> &'static str {
        (Self::NAMES.iter())
            .find(|(_, a)| *a == self)
            .map_or("?", |(n, _)| n)
    }
}

impl FromStr for Anchor {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        (Self::NAMES.iter())
            .find(|(n, _)| *n == s)
            .map(|&(_, a)| a)
            .ok_or_else(|| format!("unknown anchor `{s}`; valid: epoch, origin, first-hit"))
    }
}

/// A checked manifest with its script's text: everything a worker process needs to run it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CustomLimiter {
    pub name: String,
    pub description: String,
    pub algorithm: Algorithm,
    /// The manifest's path, as given.
    pub manifest: String,
    /// The script's file name, as the manifest gives it.
    pub script: String,
    /// The script (or, with mode fcall or fcall-load, the library).
    pub source: String,
    /// Where its windows start (fixed and sliding windows; the epoch unless the manifest says).
    #[serde(default)]
    pub anchor: Anchor,
    /// How the library invokes it: the scripts experiment's invocations (`evalsha-eval` unless
    /// the manifest says otherwise).
    pub mode: Invocation,
    pub function: Option<String>,
    /// KEYS templates, each starting with `{key}` or `{prefix}` (or the declared empty key).
    pub keys: Vec<Template>,
    /// What was done to a key template to keep it under the run's prefix, for meta.json.
    #[serde(default)]
    pub key_notes: Vec<String>,
    pub args: Vec<Template>,
    pub allowed: reply::Rule,
    /// `allowed` as written, and its line, for errors.
    pub allowed_text: String,
    pub allowed_line: usize,
    pub remaining: Option<reply::Pick>,
    /// Where the time to wait is, and the unit the script answers it in (converted to ms).
    pub retry_after_ms: Option<reply::TimePick>,
    /// `kind = "process"`: the adapter's program, which decides instead of a script (the script
    /// fields are then empty).
    #[serde(default)]
    pub process: Option<ProcessCommand>,
    /// What its library promises beyond its algorithm, each with its documentation's words.
    #[serde(default)]
    pub promises: Vec<promise::Promise>,
}

/// A limiter process's program: its argv and the folder it runs in (the manifest's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessCommand {
    pub argv: Vec<String>,
    pub dir: String,
}

impl CustomLimiter {
    /// Whether any argument is the caller's clock (the script trusts the caller's time).
    pub fn uses_caller_clock(&self) -> bool {
        (self.args.iter().chain(&self.keys)).any(|t| t.placeholders().any(Placeholder::is_clock))
    }

    /// Reads a decision from `reply`, or says (with the manifest line) why it cannot.
    fn decide(&self, reply: &redis::Value, spec: &LimitSpec) -> Result<(bool, i64, i64), String> {
        let at = |why: String| {
            format!(
                "{} line {} (allowed = {:?}): {why}; reply: {}",
                self.manifest,
                self.allowed_line,
                self.allowed_text,
                reply::describe(reply)
            )
        };
        let allowed = self.allowed.allowed(reply, spec).map_err(at)?;
        let number = |pick: Option<reply::Pick>, what: &str| -> Result<i64, String> {
            pick.map_or(Ok(0), |p| {
                p.number(reply)
                    .map(|n| n.floor() as i64)
                    .map_err(|e| at(format!("{what}: {e}")))
            })
        };
        Ok((
            allowed,
            number(self.remaining, "remaining")?,
            (self.retry_after_ms).map_or(Ok(0), |p| {
                p.ms(reply)
                    .map(|ms| ms.floor() as i64)
                    .map_err(|e| at(format!("retry_after_ms: {e}")))
            })?,
        ))
    }
}

/// A manifest that cannot be used, with where it is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("limiter manifest {manifest}{}: {message}", line.map(|l| format!(" line {l}")).unwrap_or_default())]
pub struct ManifestError {
    pub manifest: String,
    pub line: Option<usize>,
    pub message: String,
}

/// A custom limiter's name inside a [`Strategy`]: interned, so the strategy stays `Copy`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CustomName(&'static str);

impl fmt::Debug for CustomName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

static NAMES: LazyLock<Mutex<BTreeSet<&'static str>>> = LazyLock::new(Default::default);
static LOADED: LazyLock<RwLock<Vec<Arc<Loaded>>>> = LazyLock::new(Default::default);

fn intern(name: &str) -> CustomName {
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    match names.get(name) {
        Some(&n) => CustomName(n),
        None => {
            // Leaked once per distinct name: a handful per process.
            let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
            names.insert(leaked);
            CustomName(leaked)
        }
    }
}

impl CustomName {
    /// The manifest's name.
    pub fn as_str(self) -> &'static str {
        self.0
    }

    /// The name of a limiter this process has loaded.
    pub fn loaded(name: &str) -> Option<CustomName> {
        lookup(name).map(|_| intern(name))
    }

    /// A name read back from a CSV (no manifest needed to chart or report a run).
    pub fn recorded(name: &str) -> Result<CustomName, String> {
        manifest::valid_name(name).map(|()| intern(name))
    }

    /// The algorithm of the loaded limiter, if it is loaded.
    pub fn algorithm(self) -> Option<Algorithm> {
        lookup(self.0).map(|l| l.def.algorithm)
    }

    /// Its definition, if loaded.
    pub fn definition(self) -> Option<CustomLimiter> {
        lookup(self.0).map(|l| l.def.clone())
    }

    /// The Redis key its first KEYS template names for `key` now.
    pub fn state_key(self, key: &str, spec: &LimitSpec) -> String {
        // A limiter process names its keys itself: they start with the client's key.
        match lookup(self.0).filter(|l| !l.def.keys.is_empty()) {
            Some(l) => {
                let fill = l.fill(Check::one(key), spec, String::new());
                String::from_utf8_lossy(&l.def.keys[0].render(&fill)).into_owned()
            }
            None => key.to_string(),
        }
    }
}

/// A registered limiter with its script ready to invoke.
#[derive(Debug)]
pub(super) struct Loaded {
    pub(super) def: CustomLimiter,
    pub(super) script: LuaScript,
    members: LogMembers,
}

impl Loaded {
    fn fill<'a>(&self, check: Check<'a>, spec: &'a LimitSpec, request_id: String) -> Fill<'a> {
        let now_us = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64);
        Fill {
            key: check.key,
            cost: check.cost,
            spec,
            now_us,
            request_id,
            rand: random(),
            rate_per_s: self.def.algorithm.rate_per_s(spec),
        }
    }

    /// A script error, saying when ratelab passed a zero refill: an experiment that means a bucket
    /// that never refills hands `{rate_per_s}` = 0, which a script that divides by it cannot take.
    fn explain(&self, error: redis::RedisError, fill: &Fill) -> LimiterError {
        let passes_rate =
            (self.def.args.iter().chain(&self.def.keys)).any(|t| t.uses(Placeholder::RatePerS));
        let script_error =
            error.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ResponseError);
        if !(passes_rate && fill.rate_per_s == 0.0 && script_error) {
            return LimiterError::Redis(error);
        }
        LimiterError::CustomArgument {
            strategy: Strategy::Custom(intern(&self.def.name)),
            error,
            why: "ratelab passed {rate_per_s} = 0 (a zero refill: this experiment measures a bucket that never \
                  refills), which the script cannot take (does it divide by its refill rate?)"
                .into(),
        }
    }
}

fn random() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0);
    h.finish()
}

/// Registers `def` (replacing a limiter of the same name) and returns its strategy.
pub fn register(def: CustomLimiter) -> Strategy {
    let source: &'static str = Box::leak(def.source.clone().into_boxed_str());
    let script = match &def.function {
        Some(f) => {
            let function: &'static str = Box::leak(f.clone().into_boxed_str());
            LuaScript::library_function(source, function)
        }
        None => LuaScript::new(source),
    };
    // The manifest was checked: a function has a function mode, a script a script mode.
    let script = script.clone().invoked(def.mode).unwrap_or(script);
    let name = intern(&def.name);
    let loaded = Arc::new(Loaded {
        def,
        script,
        members: LogMembers::new(),
    });
    let mut all = LOADED.write().unwrap_or_else(|p| p.into_inner());
    all.retain(|l| l.def.name != name.0);
    all.push(loaded);
    Strategy::Custom(name)
}

/// Every limiter this process has loaded, in the order they were registered.
pub fn loaded() -> Vec<CustomLimiter> {
    let all = LOADED.read().unwrap_or_else(|p| p.into_inner());
    all.iter().map(|l| l.def.clone()).collect()
}

pub(super) fn lookup(name: &str) -> Option<Arc<Loaded>> {
    let all = LOADED.read().unwrap_or_else(|p| p.into_inner());
    all.iter().find(|l| l.def.name == name).cloned()
}

/// Decides one request with a custom limiter invoked by `script`.
pub(super) async fn check(
    con: &mut impl ConnectionLike,
    loaded: &Loaded,
    script: &LuaScript,
    check: Check<'_>,
    spec: &LimitSpec,
) -> Attempt {
    let fill = loaded.fill(check, spec, loaded.members.next());
    let mut call = script.call();
    for t in &loaded.def.keys {
        call = call.key(t.render(&fill));
    }
    for t in &loaded.def.args {
        call = call.arg(t.render(&fill));
    }
    let (reply, round_trips, noscript) = call.reply(con).await;
    let outcome = reply
        .map_err(|e| loaded.explain(e, &fill))
        .and_then(|reply| {
            let (allowed, remaining, retry_ms) =
                loaded.def.decide(&reply, spec).map_err(|detail| {
                    LimiterError::UnexpectedReply {
                        strategy: Strategy::Custom(intern(&loaded.def.name)),
                        detail,
                    }
                })?;
            Ok(Decision {
                noscript,
                ..Decision::settled(allowed, remaining, retry_ms, round_trips)
            })
        });
    Attempt {
        outcome,
        round_trips,
        noscript,
    }
}

/// Whether the empty key exists (an error reads as yes: nothing is concluded from it).
async fn exists_empty(con: &mut impl ConnectionLike) -> bool {
    let found: Result<u64, _> = redis::cmd("EXISTS").arg("").query_async(con).await;
    found.map_or(true, |n| n > 0)
}

/// What [`probe`] saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// Calls made, one at a time, on one fresh key, with `{limit}` = `limit`.
    pub calls: u64,
    pub admitted: u64,
    pub limit: u64,
}

/// The limit a probe uses: small, a window far longer than the probe.
pub const PROBE_LIMIT: u64 = 5;

/// The probe's window: its refill (the limit per window) cannot add a token during the probe.
pub const PROBE_WINDOW_MS: u64 = 600_000;

/// The limit a probe gives a limiter: [`PROBE_LIMIT`] per `PROBE_WINDOW_MS`, with a real refill
/// as slow as the window (a bucket that divides by its rate can run).
pub fn probe_spec() -> LimitSpec {
    LimitSpec {
        capacity: PROBE_LIMIT,
        refill_per_sec: PROBE_LIMIT as f64 * 1000.0 / PROBE_WINDOW_MS as f64,
        window_ms: PROBE_WINDOW_MS,
        window_origin_ms: super::unix_ms(),
        ..LimitSpec::default()
    }
}

/// Loads the limiter's script (SCRIPT LOAD) or library (FUNCTION LOAD REPLACE) into a server, as
/// a library whose mode has no fallback does when it starts (EVALSHA or FCALL alone would fail on
/// a server that has never seen it); nothing for a mode that sends or loads it itself.
pub async fn initialise(
    con: &mut impl ConnectionLike,
    strategy: Strategy,
) -> Result<(), redis::RedisError> {
    let Strategy::Custom(name) = strategy else {
        return Ok(());
    };
    match lookup(name.0) {
        Some(l) if matches!(l.def.mode, Invocation::Evalsha | Invocation::Fcall) => {
            l.script.preload(con).await
        }
        _ => Ok(()),
    }
}

/// Calls the limiter on a fresh key before anything is measured: a script error, a reply that
/// `allowed` cannot read, or a first call refused on a fresh key (an inverted `allowed`) is an
/// error naming the manifest and showing the reply. Says how many of limit + 1 calls it admitted.
pub async fn probe(
    con: &mut impl ConnectionLike,
    strategy: Strategy,
    key: &str,
) -> Result<Probe, ManifestError> {
    let Strategy::Custom(name) = strategy else {
        return Ok(Probe {
            calls: 0,
            admitted: 0,
            limit: 0,
        });
    };
    let loaded = lookup(name.0).ok_or_else(|| ManifestError {
        manifest: name.0.to_string(),
        line: None,
        message: "not loaded".into(),
    })?;
    let spec = probe_spec();
    let fail = |line: Option<usize>, message: String| ManifestError {
        manifest: loaded.def.manifest.clone(),
        line,
        message,
    };
    // A declared empty key is sent as is: the script may read it, never write it.
    let empty_key =
        (loaded.def.keys.iter()).any(|t| t.pieces == [template::Piece::Text(String::new())]);
    let empty_existed = match empty_key {
        true => exists_empty(con).await,
        false => true,
    };
    let mut admitted = 0;
    for call in 0..=PROBE_LIMIT {
        let attempt = check(con, &loaded, &loaded.script, Check::one(key), &spec).await;
        match attempt.outcome {
            Ok(d) if call == 0 && !d.allowed => {
                return Err(fail(
                    Some(loaded.def.allowed_line),
                    format!(
                        "the first call on a fresh key was read as denied (allowed = {:?}); is the rule inverted, \
                         or {{limit}} not where the script expects it?",
                        loaded.def.allowed_text
                    ),
                ))
            }
            Ok(d) => admitted += u64::from(d.allowed),
            Err(LimiterError::UnexpectedReply { detail, .. }) => {
                return Err(fail(None, format!("probe call {}: {detail}", call + 1)))
            }
            Err(e) => {
                return Err(fail(
                    None,
                    format!("probe call {} on a fresh key failed: {e} (script {})", call + 1, loaded.def.script),
                ))
            }
        }
    }
    if !empty_existed && exists_empty(con).await {
        let _ = redis::cmd("DEL").arg("").exec_async(con).await;
        return Err(fail(
            None,
            "the script wrote the empty key (declared in shared_keys as a key it only passes): \
             ratelab writes nothing outside its run's prefix"
                .into(),
        ));
    }
    Ok(Probe {
        calls: PROBE_LIMIT + 1,
        admitted,
        limit: PROBE_LIMIT,
    })
}
