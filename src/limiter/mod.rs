//! Rate-limiter strategies: the naive client-side ones the seeds show breaking, the atomic ones
//! that fix them (Lua scripts, MULTI/EXEC, optimistic WATCH), and a plain GET to measure them
//! against. One file per strategy; Lua in `lua/*.lua`, embedded with `include_str!`. How a
//! script is sent (EVAL, EVALSHA with or without a fallback, FCALL) is a separate choice, an
//! [`Invocation`]. Who decides is one interface, [`Decide`] (in `decide.rs`): every load loop and
//! the resilient store ask a [`Decider`], of which a [`Limiter`] (these strategies and the custom
//! manifests, on the caller's Redis connection) and the in-memory window are kinds.

pub mod custom;
mod decide;
mod get;
mod in_memory;
mod incr_window;
mod invocation;
mod library;
mod lua_bucket;
mod lua_gcra;
mod lua_log;
mod lua_swc;
mod lua_window;
mod multi_window;
mod naive_bucket;
mod naive_window;
pub mod process;
mod script;
mod seed002_bucket;
mod spec;
mod strategy;
mod watch_bucket;
pub mod wire;

pub use decide::{BoxedAttempt, Check, Decide, Decider, DynDecide, InMemory, Link};
pub use in_memory::InMemoryWindow;
pub use invocation::Invocation;
pub use library::{library, LIBRARY_NAME};
pub use spec::{LimitSpec, LogClock, LogMember, LogVariant};
pub use strategy::{with_strict_names, Strategy};

use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};
use std::time::{SystemTime, UNIX_EPOCH};

/// The answer to one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// Whether the request may pass.
    pub allowed: bool,
    /// What the strategy believes is left (tokens or requests in the window).
    pub remaining: i64,
    /// When to retry, in ms (-1: never, 0: not applicable).
    pub retry_ms: i64,
    /// Round trips to Redis this decision took, for "Redis calls per decision".
    #[serde(default)]
    pub redis_calls: u32,
    /// Optimistic transactions that aborted and were retried (WATCH strategies only).
    #[serde(default)]
    pub retries: u32,
    /// Refused because the WATCH retry budget ran out, not because the limit was reached.
    #[serde(default)]
    pub aborted: bool,
    /// Redis had lost the script (NOSCRIPT) or function on the way and the invocation's
    /// fallback made the decision anyway, at the cost of its extra round trips.
    #[serde(default)]
    pub noscript: bool,
}

impl Decision {
    /// A decision reached without optimistic retries, the case of every non-WATCH strategy.
    pub(crate) fn settled(allowed: bool, remaining: i64, retry_ms: i64, redis_calls: u32) -> Self {
        Decision {
            allowed,
            remaining,
            retry_ms,
            redis_calls,
            retries: 0,
            aborted: false,
            noscript: false,
        }
    }
}

/// One check with what it took even when it failed, for experiments about the failures (a
/// check's error alone says neither how many calls it made nor whether Redis lacked the script).
#[derive(Debug)]
pub struct Attempt {
    /// The decision, or why there was none.
    pub outcome: Result<Decision, LimiterError>,
    /// Round trips to Redis, failed ones included. Strategies without a script report a failed
    /// check as one (their checks stop at the first failed call; earlier ones are not counted).
    pub round_trips: u32,
    /// Redis answered NOSCRIPT (or FCALL found no function) on the way.
    pub noscript: bool,
}

impl Attempt {
    /// An attempt that sent nothing: refused before any round trip.
    fn refused(error: LimiterError) -> Self {
        Attempt {
            outcome: Err(error),
            round_trips: 0,
            noscript: false,
        }
    }

    /// The attempt of a strategy without a script.
    fn unscripted(outcome: Result<Decision, LimiterError>) -> Self {
        let round_trips = outcome.as_ref().map_or(1, |d| d.redis_calls);
        Attempt {
            outcome,
            round_trips,
            noscript: false,
        }
    }
}

/// What can go wrong during a check.
#[derive(Debug, thiserror::Error)]
pub enum LimiterError {
    /// Redis refused a command or the connection failed: no decision was made. The cause is
    /// displayed, not exposed as `source()` (named once): runs record this text in their CSVs.
    #[error("redis: {0}")]
    Redis(redis::RedisError),
    /// A reply had the wrong shape: a bug in a script or in its caller, never silently allowed.
    #[error("unexpected reply from {strategy}: {detail}")]
    UnexpectedReply { strategy: Strategy, detail: String },
    /// Redis answered a command sent by the lean client with an error reply.
    #[error("redis refused: {0}")]
    Refused(String),
    /// A custom limiter's script failed on an argument ratelab chose: the error says which.
    #[error("{strategy}: redis: {error}; {why}")]
    CustomArgument {
        strategy: Strategy,
        error: redis::RedisError,
        why: String,
    },
    /// The decider decides one request at a time and was asked to charge more.
    #[error("{what} decides one request per check, not a cost of {cost}")]
    Cost { what: &'static str, cost: u32 },
    /// A decider that runs on the caller's Redis connection was handed none.
    #[error("{strategy} needs a Redis connection from its caller and was given none")]
    NoConnection { strategy: Strategy },
    /// A limiter process could not decide: it could not start, exited, wrote something that is
    /// not an answer, answered an id not in flight, or did not answer in time. The run stops.
    #[error("limiter process {name}: {why}")]
    Process { name: String, why: String },
    /// A limiter process's handshake did not say it uses the client the setup asked for (a
    /// cluster's, or one that finds the primary through Sentinels): it was stopped before any check.
    #[error("limiter process {name}: {why}")]
    NoClientFor { name: String, why: String },
    /// The strategy cannot be invoked that way (FCALL of a strategy the library lacks).
    #[error("{strategy} cannot be invoked as {invocation}: {why}")]
    Unsupported {
        strategy: Strategy,
        invocation: Invocation,
        why: &'static str,
    },
}

impl From<redis::RedisError> for LimiterError {
    fn from(err: redis::RedisError) -> Self {
        LimiterError::Redis(err)
    }
}

/// A strategy bound to its limit, ready to check keys; shared by a worker's in-flight tasks.
#[derive(Debug, Clone)]
pub struct Limiter {
    spec: LimitSpec,
    prepared: Prepared,
}

/// A strategy with whatever it needs at check time (its script, for the Lua ones).
#[derive(Debug, Clone)]
enum Prepared {
    NaiveBucket,
    LuaBucket(script::LuaScript),
    Seed002Bucket(script::LuaScript),
    WatchBucket,
    NaiveWindow,
    IncrWindow,
    LuaWindow(script::LuaScript),
    MultiWindow,
    LuaLog(script::LuaScript, lua_log::LogMembers),
    LuaSwc(script::LuaScript),
    LuaGcra(script::LuaScript),
    Get,
    Custom(std::sync::Arc<custom::Loaded>, script::LuaScript),
    /// A custom limiter's name with no manifest loaded in this process: every check says so.
    Unloaded(custom::CustomName),
}

impl Limiter {
    /// Binds a strategy to a limit (and prepares its script, if it has one, to be invoked the
    /// default way: EVALSHA, resent as EVAL on NOSCRIPT).
    pub fn new(strategy: Strategy, spec: LimitSpec) -> Self {
        let prepared = match strategy {
            Strategy::NaiveBucket => Prepared::NaiveBucket,
            Strategy::LuaBucket => Prepared::LuaBucket(lua_bucket::script()),
            Strategy::Seed002Bucket => Prepared::Seed002Bucket(seed002_bucket::script()),
            Strategy::WatchBucket => Prepared::WatchBucket,
            Strategy::NaiveWindow => Prepared::NaiveWindow,
            Strategy::IncrWindow => Prepared::IncrWindow,
            Strategy::LuaWindow => Prepared::LuaWindow(lua_window::script()),
            Strategy::MultiWindow => Prepared::MultiWindow,
            Strategy::LuaLog => Prepared::LuaLog(lua_log::script(), lua_log::LogMembers::new()),
            Strategy::LuaSwc => Prepared::LuaSwc(lua_swc::script()),
            Strategy::LuaGcra => Prepared::LuaGcra(lua_gcra::script()),
            Strategy::Get => Prepared::Get,
            Strategy::Custom(name) => match custom::lookup(name.as_str()) {
                // A process decides through its adapter, never on a caller's connection.
                Some(loaded) if loaded.def.process.is_some() => Prepared::Unloaded(name),
                Some(loaded) => {
                    let script = loaded.script.clone();
                    Prepared::Custom(loaded, script)
                }
                None => Prepared::Unloaded(name),
            },
        };
        Limiter { spec, prepared }
    }

    /// Binds a strategy to a limit with its script invoked as `invocation`. A strategy without
    /// a script takes only the default; FCALL only a strategy with a function in the library.
    pub fn with_invocation(
        strategy: Strategy,
        spec: LimitSpec,
        invocation: Invocation,
    ) -> Result<Self, LimiterError> {
        let mut limiter = Limiter::new(strategy, spec);
        if invocation == Invocation::default() {
            return Ok(limiter);
        }
        let unsupported = |why| LimiterError::Unsupported {
            strategy,
            invocation,
            why,
        };
        let script = match &mut limiter.prepared {
            Prepared::LuaBucket(s)
            | Prepared::Seed002Bucket(s)
            | Prepared::LuaWindow(s)
            | Prepared::LuaLog(s, _)
            | Prepared::LuaSwc(s)
            | Prepared::LuaGcra(s)
            | Prepared::Custom(_, s) => s,
            _ => return Err(unsupported("it has no script")),
        };
        *script = script.clone().invoked(invocation).map_err(unsupported)?;
        Ok(limiter)
    }

    /// The strategy this limiter runs.
    pub fn strategy(&self) -> Strategy {
        match self.prepared {
            Prepared::NaiveBucket => Strategy::NaiveBucket,
            Prepared::LuaBucket(_) => Strategy::LuaBucket,
            Prepared::Seed002Bucket(_) => Strategy::Seed002Bucket,
            Prepared::WatchBucket => Strategy::WatchBucket,
            Prepared::NaiveWindow => Strategy::NaiveWindow,
            Prepared::IncrWindow => Strategy::IncrWindow,
            Prepared::LuaWindow(_) => Strategy::LuaWindow,
            Prepared::MultiWindow => Strategy::MultiWindow,
            Prepared::LuaLog(..) => Strategy::LuaLog,
            Prepared::LuaSwc(_) => Strategy::LuaSwc,
            Prepared::LuaGcra(_) => Strategy::LuaGcra,
            Prepared::Get => Strategy::Get,
            Prepared::Custom(_, _) | Prepared::Unloaded(_) => self.custom_strategy(),
        }
    }

    fn custom_strategy(&self) -> Strategy {
        match &self.prepared {
            Prepared::Custom(loaded, _) => match custom::CustomName::loaded(&loaded.def.name) {
                Some(name) => Strategy::Custom(name),
                None => Strategy::Get,
            },
            Prepared::Unloaded(name) => Strategy::Custom(*name),
            _ => Strategy::Get,
        }
    }

    /// The limit it enforces.
    pub fn spec(&self) -> &LimitSpec {
        &self.spec
    }

    /// The Lua source and SHA-1 of its script, if it has one: for redis-benchmark, which calls
    /// EVALSHA itself in the calibration (a custom limiter's source is its library in mode fcall).
    pub fn script(&self) -> Option<(&'static str, &str)> {
        self.lua().map(|s| (s.source(), s.hash()))
    }

    /// The name of its function in the `ratelab` library ([`library`]), if it has one.
    pub fn function(&self) -> Option<&'static str> {
        self.lua().and_then(|s| s.function())
    }

    /// How its script is invoked (the default for a strategy without one).
    pub fn invocation(&self) -> Invocation {
        self.lua()
            .map_or_else(Invocation::default, |s| s.invocation())
    }

    fn lua(&self) -> Option<&script::LuaScript> {
        match &self.prepared {
            Prepared::LuaBucket(s)
            | Prepared::Seed002Bucket(s)
            | Prepared::LuaWindow(s)
            | Prepared::LuaLog(s, _)
            | Prepared::LuaSwc(s)
            | Prepared::LuaGcra(s)
            | Prepared::Custom(_, s) => Some(s),
            _ => None,
        }
    }

    /// Decides one request against `key`. In-flight checks may share `con` (it multiplexes),
    /// unless `Strategy::needs_own_connection`: then each needs a connection of its own.
    pub async fn check(
        &self,
        con: &mut MultiplexedConnection,
        key: &str,
    ) -> Result<Decision, LimiterError> {
        self.attempt(con, key).await.outcome
    }

    /// Decides one request against `key` as [`check`](Self::check) does, and says what it took
    /// even when it failed: round trips, and whether Redis had lost the script.
    pub async fn attempt(&self, con: &mut MultiplexedConnection, key: &str) -> Attempt {
        self.attempt_check(con, Check::one(key)).await
    }

    /// [`attempt`](Self::attempt) of a check of any cost: a custom limiter's `{cost}` is it;
    /// a built-in strategy decides one request per check and refuses any other cost.
    async fn attempt_check(&self, con: &mut MultiplexedConnection, check: Check<'_>) -> Attempt {
        let spec = &self.spec;
        let key = check.key;
        let plain = Attempt::unscripted;
        if check.cost != 1 && !matches!(self.prepared, Prepared::Custom(..)) {
            return Attempt::refused(LimiterError::Cost {
                what: self.strategy().name(),
                cost: check.cost,
            });
        }
        match &self.prepared {
            Prepared::NaiveBucket => plain(naive_bucket::check(con, key, spec).await),
            Prepared::LuaBucket(script) => lua_bucket::check(con, script, key, spec).await,
            Prepared::Seed002Bucket(script) => seed002_bucket::check(con, script, key, spec).await,
            Prepared::WatchBucket => plain(watch_bucket::check(con, key, spec).await),
            Prepared::NaiveWindow => plain(naive_window::check(con, key, spec).await),
            Prepared::IncrWindow => plain(incr_window::check(con, key, spec).await),
            Prepared::LuaWindow(script) => lua_window::check(con, script, key, spec).await,
            Prepared::MultiWindow => plain(multi_window::check(con, key, spec).await),
            Prepared::LuaLog(script, members) => {
                lua_log::check(con, script, members, key, spec).await
            }
            Prepared::LuaSwc(script) => lua_swc::check(con, script, key, spec).await,
            Prepared::LuaGcra(script) => lua_gcra::check(con, script, key, spec).await,
            Prepared::Get => plain(get::check(con, key).await),
            Prepared::Custom(loaded, script) => {
                custom::check(con, loaded, script, check, spec).await
            }
            Prepared::Unloaded(_) => self.unloaded(),
        }
    }

    fn unloaded(&self) -> Attempt {
        Attempt::refused(LimiterError::Unsupported {
            strategy: self.strategy(),
            invocation: self.invocation(),
            why: match custom::lookup(self.strategy().name()) {
                Some(_) => "a limiter process decides through its adapter, and this experiment calls limiters \
                            on its own Redis connections: give it a script manifest",
                None => "no manifest of that name is loaded (--limiter)",
            },
        })
    }
}

impl Decide for Limiter {
    fn link(&self) -> Link {
        match self.strategy().needs_own_connection() {
            true => Link::PerInFlight,
            false => Link::Shared,
        }
    }

    async fn decide<'a>(
        &'a self,
        con: Option<&'a mut MultiplexedConnection>,
        check: Check<'a>,
    ) -> Attempt {
        match con {
            Some(con) => self.attempt_check(con, check).await,
            None => Attempt::refused(LimiterError::NoConnection {
                strategy: self.strategy(),
            }),
        }
    }
}

impl Limiter {
    /// How many replies one decision's commands get when a client pipelines them raw
    /// ([`encode`](Self::encode), then [`decide_reply`](Self::decide_reply) on the last): 1 for
    /// GET and the scripts, 4 for MULTI INCR PEXPIRE EXEC. None for WATCH and the
    /// read-then-write strategies: their second command depends on the first reply. None for a
    /// custom script too: its keys and arguments are the manifest's, which `encode` does not build.
    pub fn pipelined_replies(&self) -> Option<usize> {
        match &self.prepared {
            Prepared::MultiWindow => Some(multi_window::REPLIES),
            Prepared::Get
            | Prepared::LuaBucket(_)
            | Prepared::Seed002Bucket(_)
            | Prepared::LuaWindow(_)
            | Prepared::LuaLog(..)
            | Prepared::LuaSwc(_)
            | Prepared::LuaGcra(_) => Some(1),
            _ => None,
        }
    }

    /// Appends the commands of one decision for `key` to `out`, byte for byte what
    /// [`check`](Self::check) sends first (`scratch` is reused space for a script call's body).
    /// Callers send only what [`pipelined_replies`](Self::pipelined_replies) allows; the fallback
    /// on NOSCRIPT is theirs (load the script before).
    pub fn encode(
        &self,
        key: &str,
        scratch: &mut Vec<u8>,
        out: &mut Vec<u8>,
    ) -> Result<(), LimiterError> {
        let spec = &self.spec;
        if let Prepared::MultiWindow = &self.prepared {
            multi_window::encode(key, spec, unix_ms(), out);
            return Ok(());
        }
        use wire::ArgSink;
        let sink = wire::WireCommand::new(scratch);
        let (body, script) = match &self.prepared {
            Prepared::Get => (sink.key(key), None),
            Prepared::LuaBucket(s) => (lua_bucket::args(sink, key, spec), Some(s)),
            Prepared::Seed002Bucket(s) => (seed002_bucket::args(sink, key, spec), Some(s)),
            Prepared::LuaWindow(s) => (lua_window::args(sink, key, spec, unix_ms()), Some(s)),
            Prepared::LuaLog(s, members) => (lua_log::args(sink, members, key, spec), Some(s)),
            Prepared::LuaSwc(s) => (lua_swc::args(sink, key, spec), Some(s)),
            Prepared::LuaGcra(s) => (lua_gcra::args(sink, key, spec), Some(s)),
            _ => {
                return Err(LimiterError::Unsupported {
                    strategy: self.strategy(),
                    invocation: self.invocation(),
                    why: "its second command depends on the first reply",
                })
            }
        };
        match script {
            Some(s) => {
                let (name, target) = s.first_call();
                body.finish(name, Some(target), out);
            }
            None => body.finish("GET", None, out),
        }
        Ok(())
    }

    /// [`encode`](Self::encode)'s bytes with the key left out, for the strategies whose every
    /// other argument is fixed by the limit (not the clock, not a per-request member): GET and
    /// the bucket, sliding-window-counter and GCRA scripts, however invoked.
    pub fn key_template(&self) -> Option<wire::KeyTemplate> {
        match &self.prepared {
            Prepared::Get
            | Prepared::LuaBucket(_)
            | Prepared::Seed002Bucket(_)
            | Prepared::LuaSwc(_)
            | Prepared::LuaGcra(_) => {}
            _ => return None,
        }
        // A key no caller uses, so the split cannot land on an argument that happens to match.
        const MARK: &str = "\u{1}ratelab-template-key\u{1}";
        let (mut scratch, mut out) = (Vec::new(), Vec::new());
        self.encode(MARK, &mut scratch, &mut out).ok()?;
        wire::KeyTemplate::split(&out, MARK)
    }

    /// The decision the last reply to [`encode`](Self::encode)'s commands carries.
    pub fn decide_reply(&self, reply: &wire::Reply) -> Result<Decision, LimiterError> {
        use wire::Reply;
        if let Reply::Error(e) = reply {
            return Err(LimiterError::Refused(
                String::from_utf8_lossy(e).into_owned(),
            ));
        }
        let strategy = self.strategy();
        match (&self.prepared, reply) {
            (Prepared::Get, Reply::Bulk(_)) => Ok(Decision::settled(true, 0, 0, 1)),
            // EXEC's array: INCR's count, then PEXPIRE's 1.
            (
                Prepared::MultiWindow,
                Reply::Array {
                    len: 2,
                    ints: [Some(count), _, _],
                },
            ) => Ok(multi_window::decide(*count, &self.spec, unix_ms())),
            (Prepared::Get, _) => Err(LimiterError::UnexpectedReply {
                strategy,
                detail: format!("{reply:?}"),
            }),
            (
                _,
                Reply::Array {
                    len: 3,
                    ints: [Some(a), Some(b), Some(c)],
                },
            ) => script::decision_from(strategy, &[*a, *b, *c], 1, false),
            // Seed 002's script answers {allowed, tokens left}.
            (
                Prepared::Seed002Bucket(_),
                Reply::Array {
                    len: 2,
                    ints: [Some(a), Some(b), _],
                },
            ) => script::decision_from(strategy, &[*a, *b], 1, false),
            _ => Err(LimiterError::UnexpectedReply {
                strategy,
                detail: format!("{reply:?}"),
            }),
        }
    }

    /// Decides one request on any async connection, a Redis Cluster client's included. Only the
    /// scripts whose one key is `KEYS[1]` (lua-bucket, lua-window) run there: a cluster client routes
    /// a script by its first key, and nothing else of theirs needs a node of its own.
    pub async fn attempt_on(
        &self,
        con: &mut impl redis::aio::ConnectionLike,
        key: &str,
    ) -> Attempt {
        let spec = &self.spec;
        match &self.prepared {
            Prepared::LuaBucket(script) => lua_bucket::check(con, script, key, spec).await,
            Prepared::LuaWindow(script) => lua_window::check(con, script, key, spec).await,
            Prepared::Custom(loaded, script) => {
                custom::check(con, loaded, script, Check::one(key), spec).await
            }
            _ => Attempt::refused(LimiterError::Unsupported {
                strategy: self.strategy(),
                invocation: self.invocation(),
                why: "only lua-bucket, lua-window and custom limiters run on any connection",
            }),
        }
    }
}

/// Milliseconds since the Unix epoch on this machine's clock.
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::wire::{parse, Reply};
    use super::*;

    /// What redis-rs's path sends first for one decision of `limiter` on `key`.
    fn redis_rs_bytes(limiter: &Limiter, key: &str, now: u64) -> Vec<u8> {
        let spec = &limiter.spec;
        let call = |s: &script::LuaScript, c: script::Call| {
            let (name, target) = s.first_call();
            c.command(name, target).get_packed_command()
        };
        match &limiter.prepared {
            Prepared::Get => redis::cmd("GET").arg(key).get_packed_command(),
            Prepared::LuaBucket(s) => call(s, lua_bucket::args(s.call(), key, spec)),
            Prepared::Seed002Bucket(s) => call(s, seed002_bucket::args(s.call(), key, spec)),
            Prepared::LuaWindow(s) => call(s, lua_window::args(s.call(), key, spec, now)),
            Prepared::LuaSwc(s) => call(s, lua_swc::args(s.call(), key, spec)),
            Prepared::LuaGcra(s) => call(s, lua_gcra::args(s.call(), key, spec)),
            _ => unreachable!("not one command"),
        }
    }

    #[test]
    fn the_wire_encoding_is_byte_for_byte_what_redis_rs_sends() {
        let spec = LimitSpec {
            refill_per_sec: 12.5,
            ..LimitSpec::default()
        };
        let (mut scratch, mut out) = (Vec::new(), Vec::new());
        for strategy in [
            Strategy::Get,
            Strategy::LuaBucket,
            Strategy::Seed002Bucket,
            Strategy::LuaSwc,
            Strategy::LuaGcra,
        ] {
            for invocation in [Invocation::EvalshaEval, Invocation::Eval] {
                let Ok(limiter) = Limiter::with_invocation(strategy, spec, invocation) else {
                    continue;
                };
                out.clear();
                limiter
                    .encode("rl:k:000000000042", &mut scratch, &mut out)
                    .unwrap();
                let expected = redis_rs_bytes(&limiter, "rl:k:000000000042", 0);
                assert_eq!(
                    String::from_utf8_lossy(&out),
                    String::from_utf8_lossy(&expected),
                    "{strategy} {invocation}"
                );
            }
        }
        // The key template sends the same bytes as encoding whole, for every strategy that has one.
        for strategy in Strategy::ALL {
            for &invocation in Invocation::ALL {
                let Ok(limiter) = Limiter::with_invocation(*strategy, spec, invocation) else {
                    continue;
                };
                let Some(template) = limiter.key_template() else {
                    continue;
                };
                for key in ["k", "rl:k:000000000042", "ratelab:run:x:lua-bucket:9"] {
                    let (mut whole, mut from_template) = (Vec::new(), Vec::new());
                    limiter.encode(key, &mut scratch, &mut whole).unwrap();
                    template.encode(key, &mut from_template);
                    assert_eq!(from_template, whole, "{strategy} {invocation} {key}");
                }
            }
        }
        let windowed = Limiter::new(Strategy::LuaWindow, spec);
        assert!(
            windowed.key_template().is_none(),
            "the window's arguments move with the clock"
        );
        // The fixed window's key moves with the clock: compare at one instant, ms before a boundary.
        let window = Limiter::new(Strategy::LuaWindow, spec);
        let Prepared::LuaWindow(s) = &window.prepared else {
            unreachable!()
        };
        out.clear();
        let (name, target) = s.first_call();
        lua_window::args(wire::WireCommand::new(&mut scratch), "k", &spec, 5_000).finish(
            name,
            Some(target),
            &mut out,
        );
        assert_eq!(out, redis_rs_bytes(&window, "k", 5_000));
        // MULTI INCR PEXPIRE EXEC as redis-rs packs its atomic pipeline, at one instant.
        out.clear();
        multi_window::encode("k", &spec, 5_000, &mut out);
        let w = spec.window_key("k", 5_000);
        let packed = redis::pipe()
            .atomic()
            .incr(&w, 1)
            .pexpire(&w, spec.window_ttl_ms() as i64)
            .ignore()
            .get_packed_pipeline();
        assert_eq!(
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(&packed)
        );
        let multi = Limiter::new(Strategy::MultiWindow, spec);
        assert_eq!(multi.pipelined_replies(), Some(4));
        let decide = |bytes: &[u8]| multi.decide_reply(&parse(bytes).unwrap().unwrap().0);
        assert!(decide(b"*2\r\n:3\r\n:1\r\n").unwrap().allowed);
        assert!(!decide(b"*2\r\n:101\r\n:1\r\n").unwrap().allowed);
        assert!(decide(b"-EXECABORT Transaction discarded\r\n").is_err());
        let naive = Limiter::new(Strategy::NaiveWindow, spec);
        assert_eq!(naive.pipelined_replies(), None);
        assert!(naive.encode("k", &mut scratch, &mut out).is_err());
    }

    #[test]
    fn replies_decide_as_the_redis_rs_path_does() {
        let bucket = Limiter::new(Strategy::LuaBucket, LimitSpec::default());
        let reply = |bytes: &'static [u8]| parse(bytes).unwrap().unwrap().0;
        let d = bucket
            .decide_reply(&reply(b"*3\r\n:1\r\n:99\r\n:0\r\n"))
            .unwrap();
        assert!(d.allowed && d.remaining == 99 && d.redis_calls == 1);
        let d = bucket
            .decide_reply(&reply(b"*3\r\n:0\r\n:0\r\n:250\r\n"))
            .unwrap();
        assert!(!d.allowed && d.retry_ms == 250);
        assert!(matches!(
            bucket.decide_reply(&reply(b"-NOSCRIPT No matching script.\r\n")),
            Err(LimiterError::Refused(m)) if m.starts_with("NOSCRIPT")
        ));
        assert!(bucket.decide_reply(&Reply::Int(1)).is_err());
        let get = Limiter::new(Strategy::Get, LimitSpec::default());
        assert!(get.decide_reply(&Reply::Bulk(None)).unwrap().allowed);
        assert!(get.decide_reply(&Reply::Int(3)).is_err());
    }
}
