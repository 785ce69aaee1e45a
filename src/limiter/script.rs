//! Runs a strategy's Lua script the way its [`Invocation`] says and counts the round trips it
//! took, the failed ones included. The default, EVALSHA and on NOSCRIPT (after a restart, a
//! failover or SCRIPT FLUSH) one EVAL, which also caches the script again, is go-redis's
//! `Script.Run`; redis-rs's `Script::invoke_async` (SCRIPT LOAD, then EVALSHA) is one round trip
//! more and would hide the count "calls per decision" needs, so none of them go through redis-rs.

use super::library::library;
use super::{Attempt, Decision, Invocation, LimiterError, Strategy};
use redis::aio::ConnectionLike;
use redis::{ErrorKind, FromRedisValue, RedisError, ServerErrorKind, ToRedisArgs};

/// A script's source and SHA-1, its function in the `ratelab` library if it has one, and how it
/// is invoked.
#[derive(Debug, Clone)]
pub(super) struct LuaScript {
    source: &'static str,
    hash: String,
    function: Option<&'static str>,
    /// The library that holds `function`, when it is not ratelab's own (a custom limiter's).
    library: Option<&'static str>,
    invocation: Invocation,
}

impl LuaScript {
    /// Hashes `source` once, so every call can go by EVALSHA (the default invocation).
    pub(super) fn new(source: &'static str) -> Self {
        let hash = redis::Script::new(source).get_hash().to_string();
        LuaScript {
            source,
            hash,
            function: None,
            library: None,
            invocation: Invocation::default(),
        }
    }

    /// `function` of the library `library` (a custom limiter in mode fcall): it can only be
    /// called by FCALL, since the library's text is not a script EVAL could run.
    pub(super) fn library_function(library: &'static str, function: &'static str) -> Self {
        LuaScript {
            function: Some(function),
            library: Some(library),
            invocation: Invocation::FcallLoad,
            ..LuaScript::new(library)
        }
    }

    /// The same script, also registered as `function` in the library (same text).
    pub(super) fn with_function(self, function: &'static str) -> Self {
        LuaScript {
            function: Some(function),
            ..self
        }
    }

    /// The same script invoked another way; FCALL needs a function in the library.
    pub(super) fn invoked(self, invocation: Invocation) -> Result<Self, &'static str> {
        if invocation.uses_function() && self.function.is_none() {
            return Err("it has no function in the ratelab library");
        }
        if !invocation.uses_function() && self.library.is_some() {
            return Err("it is a function in a library: only FCALL calls it");
        }
        Ok(LuaScript { invocation, ..self })
    }

    /// The Lua source (for SCRIPT LOAD by tools that call the script themselves).
    pub(super) fn source(&self) -> &'static str {
        self.source
    }

    /// The SHA-1 that EVALSHA names it by.
    pub(super) fn hash(&self) -> &str {
        &self.hash
    }

    /// Its function's name in the library, if it has one.
    pub(super) fn function(&self) -> Option<&'static str> {
        self.function
    }

    /// How it is invoked.
    pub(super) fn invocation(&self) -> Invocation {
        self.invocation
    }

    /// The command its invocation sends first and what it names: EVAL and the source, EVALSHA
    /// and the hash, or FCALL and the function.
    pub(super) fn first_call(&self) -> (&'static str, &str) {
        match self.invocation {
            Invocation::Eval => ("EVAL", self.source),
            Invocation::Evalsha | Invocation::EvalshaEval | Invocation::EvalshaLoad => {
                ("EVALSHA", &self.hash)
            }
            Invocation::Fcall | Invocation::FcallLoad => {
                ("FCALL", self.function.unwrap_or_default())
            }
        }
    }

    /// Loads what its invocation calls: the script (SCRIPT LOAD) or its library (FUNCTION LOAD
    /// REPLACE), as a client does once at start-up when it has no fallback.
    pub(super) async fn preload(&self, con: &mut impl ConnectionLike) -> Result<(), RedisError> {
        let mut cmd = match self.invocation.uses_function() {
            true => redis::cmd("FUNCTION"),
            false => redis::cmd("SCRIPT"),
        };
        match self.invocation.uses_function() {
            true => cmd
                .arg("LOAD")
                .arg("REPLACE")
                .arg(self.library.unwrap_or_else(library)),
            false => cmd.arg("LOAD").arg(self.source),
        };
        cmd.query_async::<String>(con).await.map(drop)
    }

    /// Starts a call; add its keys and arguments, then run it.
    pub(super) fn call(&self) -> Call<'_> {
        Call {
            script: self,
            keys: Vec::new(),
            args: Vec::new(),
        }
    }
}

/// One invocation being built: KEYS and ARGV, in order.
pub(super) struct Call<'a> {
    script: &'a LuaScript,
    keys: Vec<Vec<u8>>,
    args: Vec<Vec<u8>>,
}

/// What one invocation did: its reply or the error that ended it, with what it took on the way.
struct Invoked<T> {
    reply: Result<T, RedisError>,
    round_trips: u32,
    noscript: bool,
}

impl Call<'_> {
    /// Appends to KEYS (every key the script touches is declared, so it works on Cluster).
    pub(super) fn key(mut self, key: impl ToRedisArgs) -> Self {
        key.write_redis_args(&mut self.keys);
        self
    }

    /// Appends to ARGV.
    pub(super) fn arg(mut self, arg: impl ToRedisArgs) -> Self {
        arg.write_redis_args(&mut self.args);
        self
    }

    /// Runs a script that returns `{allowed (1|0), remaining, retry_ms}`.
    pub(super) async fn decide(self, con: &mut impl ConnectionLike, strategy: Strategy) -> Attempt {
        let Invoked {
            reply,
            round_trips,
            noscript,
        } = self.invoke::<Vec<i64>>(con).await;
        let outcome = reply
            .map_err(LimiterError::from)
            .and_then(|reply| decision_from(strategy, &reply, round_trips, noscript));
        Attempt {
            outcome,
            round_trips,
            noscript,
        }
    }

    /// Runs the script and hands back its reply as Redis sent it, with the round trips and
    /// whether Redis had lost the script on the way (a custom limiter reads the reply itself).
    pub(super) async fn reply(
        self,
        con: &mut impl ConnectionLike,
    ) -> (Result<redis::Value, RedisError>, u32, bool) {
        let Invoked {
            reply,
            round_trips,
            noscript,
        } = self.invoke::<redis::Value>(con).await;
        (reply, round_trips, noscript)
    }

    /// Runs the script as its invocation says, falling back if that is part of it.
    async fn invoke<T: FromRedisValue>(&self, con: &mut impl ConnectionLike) -> Invoked<T> {
        let script = self.script;
        let (name, target) = script.first_call();
        let first = self.command(name, target);
        match first.query_async(con).await {
            Ok(reply) => return invoked(Ok(reply), 1, false),
            Err(e) => {
                let missing = is_missing(&e);
                if !(missing && script.invocation.has_fallback()) {
                    return invoked(Err(e), 1, missing);
                }
            }
        }
        let reload = match script.invocation {
            // EVAL both runs the script and caches it again: no separate load.
            Invocation::EvalshaEval => {
                let reply = self.command("EVAL", script.source).query_async(con).await;
                return invoked(reply, 2, true);
            }
            Invocation::EvalshaLoad => redis::cmd("SCRIPT")
                .arg("LOAD")
                .arg(script.source)
                .query_async::<String>(con)
                .await
                .map(drop),
            _ => redis::cmd("FUNCTION")
                .arg("LOAD")
                .arg("REPLACE")
                .arg(script.library.unwrap_or_else(library))
                .query_async::<String>(con)
                .await
                .map(drop),
        };
        if let Err(e) = reload {
            return invoked(Err(e), 2, true);
        }
        invoked(first.query_async(con).await, 3, true)
    }

    pub(super) fn command(&self, name: &str, script: &str) -> redis::Cmd {
        let mut cmd = redis::cmd(name);
        cmd.arg(script)
            .arg(self.keys.len())
            .arg(&self.keys)
            .arg(&self.args);
        cmd
    }
}

fn invoked<T>(reply: Result<T, RedisError>, round_trips: u32, noscript: bool) -> Invoked<T> {
    Invoked {
        reply,
        round_trips,
        noscript,
    }
}

/// Whether Redis said it has no such script (NOSCRIPT) or function (FCALL's "Function not found").
fn is_missing(e: &RedisError) -> bool {
    e.kind() == ErrorKind::Server(ServerErrorKind::NoScript)
        || e.detail().is_some_and(|d| d.contains("Function not found"))
}

/// Reads a `{allowed, remaining, retry_ms}` reply, or seed 002's `{allowed, remaining}` (it says
/// no retry time: 0); anything else is the script's bug, reported.
pub(super) fn decision_from(
    strategy: Strategy,
    reply: &[i64],
    calls: u32,
    noscript: bool,
) -> Result<Decision, LimiterError> {
    match *reply {
        [allowed, remaining, retry_ms] => Ok(Decision {
            noscript,
            ..Decision::settled(allowed == 1, remaining, retry_ms, calls)
        }),
        [allowed, remaining] if strategy == Strategy::Seed002Bucket => Ok(Decision {
            noscript,
            ..Decision::settled(allowed == 1, remaining, 0, calls)
        }),
        _ => Err(LimiterError::UnexpectedReply {
            strategy,
            detail: format!("{reply:?}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_of_three_integers_become_decisions() {
        let d = decision_from(Strategy::LuaBucket, &[1, 7, 0], 2, true).unwrap();
        assert!(d.allowed && d.remaining == 7 && d.redis_calls == 2 && !d.aborted && d.noscript);
        let d = decision_from(Strategy::LuaBucket, &[0, 0, 250], 1, false).unwrap();
        assert!(!d.allowed && d.retry_ms == 250 && !d.noscript);
        assert!(decision_from(Strategy::LuaBucket, &[1, 2], 1, false).is_err());
    }

    #[test]
    fn eval_and_evalsha_carry_keys_then_args() {
        let script = LuaScript::new("return 1");
        let call = script.call().key("k").arg(5).arg("x");
        let packed = call.command("EVALSHA", &script.hash).get_packed_command();
        let text = String::from_utf8(packed).unwrap();
        let expected = format!(
            "EVALSHA\r\n$40\r\n{}\r\n$1\r\n1\r\n$1\r\nk\r\n$1\r\n5\r\n$1\r\nx\r\n",
            script.hash
        );
        assert!(text.ends_with(&expected), "{text}");
    }

    #[test]
    fn fcall_needs_a_function() {
        let plain = LuaScript::new("return 1");
        assert!(plain.clone().invoked(Invocation::Fcall).is_err());
        assert!(plain.clone().invoked(Invocation::Eval).is_ok());
        let with = plain
            .with_function("f")
            .invoked(Invocation::FcallLoad)
            .unwrap();
        assert_eq!(
            (with.function(), with.invocation()),
            (Some("f"), Invocation::FcallLoad)
        );
    }

    #[test]
    fn missing_scripts_and_functions_are_told_apart_from_other_errors() {
        let parsed = |text: &str| -> RedisError {
            let reply = redis::parse_redis_value(text.as_bytes()).unwrap();
            reply.extract_error().unwrap_err()
        };
        assert!(is_missing(&parsed("-NOSCRIPT No matching script.\r\n")));
        assert!(is_missing(&parsed("-ERR Function not found\r\n")));
        assert!(!is_missing(&parsed(
            "-READONLY You can't write against a read only replica.\r\n"
        )));
    }
}
