//! The store's one connection: made on demand inside a check's budget, shared by concurrent
//! checks (it multiplexes), dropped when it fails. Each connection gets a generation number so a
//! check that failed on an old connection never drops a newer one another check just made.

use super::{lock, Failure, Flaw, StoreError};
use crate::limiter::{Decision, Limiter, LimiterError};
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ErrorKind, RedisError};
use std::sync::Mutex;
use std::time::Duration;

/// Why a check got no decision from Redis.
pub(super) enum AskFailure {
    /// Redis was unusable: the policy answers.
    Redis(Failure),
    /// Redis answered something the limiter cannot read: a bug, reported.
    Bug(LimiterError),
}

/// What one attempt to ask Redis came to.
pub(super) struct Asked {
    pub(super) result: Result<Decision, AskFailure>,
    /// The connection generation used (0: none was reached).
    pub(super) generation: u64,
    /// A new connection was opened for this check.
    pub(super) reconnected: bool,
}

struct Current {
    generation: u64,
    con: Option<MultiplexedConnection>,
}

/// Where the connection lives between checks.
pub(super) struct Slot {
    client: redis::Client,
    config: AsyncConnectionConfig,
    timeouts: (Duration, Duration),
    /// The budget bounds connecting only (the `SetupTimeoutOnly` flaw).
    setup_only: bool,
    current: Mutex<Current>,
}

impl Slot {
    /// No connection yet; redis-rs's own timeouts are set to the budget explicitly (its default
    /// response timeout is 500 ms), though the whole-call timeout in `ask` fires first or with them.
    /// With the `SetupTimeoutOnly` flaw the response timeout is off and only connecting is bounded.
    pub(super) fn new(url: &str, budget: Duration, flaw: Option<Flaw>) -> Result<Self, StoreError> {
        let setup_only = flaw == Some(Flaw::SetupTimeoutOnly);
        // No response timeout at all: what a client that never set a command timeout waits.
        let response = (!setup_only).then_some(budget);
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(budget))
            .set_response_timeout(response);
        Ok(Slot {
            client: crate::server::endpoint::client(url)?,
            config,
            timeouts: (budget, response.unwrap_or(Duration::MAX)),
            setup_only,
            current: Mutex::new(Current {
                generation: 0,
                con: None,
            }),
        })
    }

    /// (connection timeout, response timeout) given to redis-rs.
    pub(super) fn timeouts(&self) -> (Duration, Duration) {
        self.timeouts
    }

    /// Runs one check within `budget`, connecting first if there is no connection. Nothing
    /// waits for anything beyond the budget: the timeout wraps connecting and checking alike.
    pub(super) async fn ask(&self, limiter: &Limiter, key: &str, budget: Duration) -> Asked {
        if self.setup_only {
            return self.ask_setup_bounded(limiter, key, budget).await;
        }
        let mut generation = 0;
        let mut reconnected = false;
        let attempt = async {
            let mut con = match self.connection() {
                Some((g, con)) => {
                    generation = g;
                    con
                }
                None => {
                    reconnected = true;
                    let (g, con) = self.connect().await?;
                    generation = g;
                    con
                }
            };
            limiter.check(&mut con, key).await
        };
        let result = match tokio::time::timeout(budget, attempt).await {
            Ok(Ok(decision)) => Ok(decision),
            Ok(Err(LimiterError::Redis(e))) => Err(AskFailure::Redis(classify(&e))),
            Ok(Err(bug)) => Err(AskFailure::Bug(bug)),
            Err(_elapsed) => Err(AskFailure::Redis(Failure::Timeout)),
        };
        Asked {
            result,
            generation,
            reconnected,
        }
    }

    /// The flawed check: `budget` bounds connecting, the command waits for as long as it takes.
    async fn ask_setup_bounded(&self, limiter: &Limiter, key: &str, budget: Duration) -> Asked {
        let (generation, mut con, reconnected) = match self.connection() {
            Some((g, con)) => (g, con, false),
            None => match tokio::time::timeout(budget, self.connect()).await {
                Ok(Ok((g, con))) => (g, con, true),
                Ok(Err(e)) => return failed(e, 0, true),
                Err(_elapsed) => return failed_timeout(true),
            },
        };
        match limiter.check(&mut con, key).await {
            Ok(decision) => Asked {
                result: Ok(decision),
                generation,
                reconnected,
            },
            Err(e) => failed(e, generation, reconnected),
        }
    }

    fn connection(&self) -> Option<(u64, MultiplexedConnection)> {
        let current = lock(&self.current);
        current.con.clone().map(|con| (current.generation, con))
    }

    async fn connect(&self) -> Result<(u64, MultiplexedConnection), LimiterError> {
        let con = self
            .client
            .get_multiplexed_async_connection_with_config(&self.config)
            .await?;
        let mut current = lock(&self.current);
        current.generation += 1;
        current.con = Some(con.clone());
        Ok((current.generation, con))
    }

    /// Drops connection `generation` if it is still the current one.
    pub(super) fn forget(&self, generation: u64) {
        let mut current = lock(&self.current);
        if current.generation == generation {
            current.con = None;
        }
    }

    /// Drops whatever connection there is (the breaker opened: the probe gets a fresh one).
    pub(super) fn forget_any(&self) {
        lock(&self.current).con = None;
    }
}

fn failed(e: LimiterError, generation: u64, reconnected: bool) -> Asked {
    let result = match e {
        LimiterError::Redis(e) => Err(AskFailure::Redis(classify(&e))),
        bug => Err(AskFailure::Bug(bug)),
    };
    Asked {
        result,
        generation,
        reconnected,
    }
}

fn failed_timeout(reconnected: bool) -> Asked {
    Asked {
        result: Err(AskFailure::Redis(Failure::Timeout)),
        generation: 0,
        reconnected,
    }
}

/// Sorts a Redis error: its own timeout, a broken or refused connection, or an error reply.
fn classify(e: &RedisError) -> Failure {
    if e.is_timeout() {
        Failure::Timeout
    } else if e.kind() == ErrorKind::Io || e.is_connection_dropped() || e.is_connection_refusal() {
        Failure::Connection
    } else {
        Failure::Server
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn errors_are_sorted_by_what_they_mean_for_the_connection() {
        let io = |kind| RedisError::from(std::io::Error::from(kind));
        assert_eq!(
            classify(&io(std::io::ErrorKind::TimedOut)),
            Failure::Timeout
        );
        for kind in [
            std::io::ErrorKind::ConnectionRefused,
            std::io::ErrorKind::BrokenPipe,
            std::io::ErrorKind::ConnectionReset,
        ] {
            assert_eq!(classify(&io(kind)), Failure::Connection, "{kind:?}");
        }
        let loading = RedisError::from((
            ErrorKind::Server(redis::ServerErrorKind::BusyLoading),
            "LOADING",
        ));
        assert_eq!(classify(&loading), Failure::Server);
    }
}
