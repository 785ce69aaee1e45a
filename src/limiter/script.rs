//! Runs a strategy's Lua script and counts the round trips it took: EVALSHA, and on NOSCRIPT
//! (after a restart, a failover or SCRIPT FLUSH) one EVAL, which also caches the script again, as
//! go-redis's `Script.Run` does. redis-rs's `Script::invoke_async` would answer NOSCRIPT with
//! SCRIPT LOAD and EVALSHA, one round trip more, and would hide the count "calls per decision" needs.

use super::{Decision, LimiterError, Strategy};
use redis::aio::MultiplexedConnection;
use redis::{ErrorKind, FromRedisValue, RedisError, ServerErrorKind, ToRedisArgs};

/// A script's source and SHA-1, ready to be called by hash.
#[derive(Debug, Clone)]
pub(super) struct LuaScript {
    source: &'static str,
    hash: String,
}

impl LuaScript {
    /// Hashes `source` once, so every call can go by EVALSHA.
    pub(super) fn new(source: &'static str) -> Self {
        let hash = redis::Script::new(source).get_hash().to_string();
        LuaScript { source, hash }
    }

    /// The Lua source (for SCRIPT LOAD by tools that call the script themselves).
    pub(super) fn source(&self) -> &'static str {
        self.source
    }

    /// The SHA-1 that EVALSHA names it by.
    pub(super) fn hash(&self) -> &str {
        &self.hash
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
    pub(super) async fn decide(
        self,
        con: &mut MultiplexedConnection,
        strategy: Strategy,
    ) -> Result<Decision, LimiterError> {
        let (reply, calls): (Vec<i64>, u32) = self.run(con).await?;
        decision_from(strategy, &reply, calls)
    }

    /// Runs the script and returns its reply with the number of round trips made.
    pub(super) async fn run<T: FromRedisValue>(
        &self,
        con: &mut MultiplexedConnection,
    ) -> Result<(T, u32), RedisError> {
        match self
            .command("EVALSHA", &self.script.hash)
            .query_async(con)
            .await
        {
            Ok(reply) => Ok((reply, 1)),
            Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                let reply = self
                    .command("EVAL", self.script.source)
                    .query_async(con)
                    .await?;
                Ok((reply, 2))
            }
            Err(e) => Err(e),
        }
    }

    fn command(&self, name: &str, script: &str) -> redis::Cmd {
        let mut cmd = redis::cmd(name);
        cmd.arg(script)
            .arg(self.keys.len())
            .arg(&self.keys)
            .arg(&self.args);
        cmd
    }
}

/// Reads a `{allowed, remaining, retry_ms}` reply; anything else is the script's bug, reported.
fn decision_from(strategy: Strategy, reply: &[i64], calls: u32) -> Result<Decision, LimiterError> {
    match *reply {
        [allowed, remaining, retry_ms] => {
            Ok(Decision::settled(allowed == 1, remaining, retry_ms, calls))
        }
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
        let d = decision_from(Strategy::LuaBucket, &[1, 7, 0], 2).unwrap();
        assert!(d.allowed && d.remaining == 7 && d.redis_calls == 2 && !d.aborted);
        let d = decision_from(Strategy::LuaBucket, &[0, 0, 250], 1).unwrap();
        assert!(!d.allowed && d.retry_ms == 250);
        assert!(decision_from(Strategy::LuaBucket, &[1, 2], 1).is_err());
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
}
