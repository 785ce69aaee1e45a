//! The store's one connection: made on demand inside a check's budget, shared by concurrent
//! checks (it multiplexes), dropped when it fails. Each connection gets a generation number so a
//! check that failed on an old connection never drops a newer one another check just made.

use super::{lock, Failure, Flaw, Reconnect, StoreError, StoreSettings};
use crate::limiter::{Check, Decide, Decider, Decision, LimiterError, Link};
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ErrorKind, RedisError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// node-redis's default reconnect strategy: 50 ms more per failed try, at most 500 ms.
const BACKOFF_STEP: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_millis(500);

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
    /// Made by the background task and not yet used by a check (which reports it reconnected).
    fresh: bool,
}

/// Where the connection lives between checks.
pub(super) struct Slot {
    client: redis::Client,
    config: AsyncConnectionConfig,
    timeouts: (Duration, Duration),
    /// The budget bounds connecting only (the `SetupTimeoutOnly` flaw).
    setup_only: bool,
    /// Reconnecting is a background task's, not the checks' (`Reconnect::Background`).
    background: bool,
    budget: Duration,
    current: Arc<Mutex<Current>>,
    /// The background task is running.
    reconnecting: Arc<AtomicBool>,
}

impl Slot {
    /// No connection yet; redis-rs's own timeouts are set to the budget explicitly (its default
    /// response timeout is 500 ms), though the whole-call timeout in `ask` fires first or with them.
    /// With the `SetupTimeoutOnly` flaw the response timeout is off and only connecting is bounded.
    pub(super) fn new(url: &str, settings: &StoreSettings) -> Result<Self, StoreError> {
        let budget = settings.budget;
        let setup_only = settings.flaw == Some(Flaw::SetupTimeoutOnly);
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
            background: settings.reconnect == Reconnect::Background,
            budget,
            current: Arc::new(Mutex::new(Current {
                generation: 0,
                con: None,
                fresh: false,
            })),
            reconnecting: Arc::new(AtomicBool::new(false)),
        })
    }

    /// (connection timeout, response timeout) given to redis-rs.
    pub(super) fn timeouts(&self) -> (Duration, Duration) {
        self.timeouts
    }

    /// Runs one check within `budget`, connecting first if there is no connection. Nothing
    /// waits for anything beyond the budget: the timeout wraps connecting and checking alike.
    /// A decider with a link of its own ([`Link::Own`]) is asked within the budget alone: it
    /// has no connection here to make, keep or drop.
    pub(super) async fn ask(&self, decider: &Decider, key: &str, budget: Duration) -> Asked {
        if decider.link() == Link::Own {
            let result = within(budget, decide(decider, None, key)).await;
            return Asked {
                result,
                generation: 0,
                reconnected: false,
            };
        }
        if self.setup_only {
            return self.ask_setup_bounded(decider, key, budget).await;
        }
        if self.background {
            return self.ask_fail_fast(decider, key, budget).await;
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
            decide(decider, Some(&mut con), key).await
        };
        let result = within(budget, attempt).await;
        Asked {
            result,
            generation,
            reconnected,
        }
    }

    /// The flawed check: `budget` bounds connecting, the command waits for as long as it takes.
    async fn ask_setup_bounded(&self, decider: &Decider, key: &str, budget: Duration) -> Asked {
        let (generation, mut con, reconnected) = match self.connection() {
            Some((g, con)) => (g, con, false),
            None => match tokio::time::timeout(budget, self.connect()).await {
                Ok(Ok((g, con))) => (g, con, true),
                Ok(Err(e)) => return failed(e, 0, true),
                Err(_elapsed) => return failed_timeout(true),
            },
        };
        match decide(decider, Some(&mut con), key).await {
            Ok(decision) => Asked {
                result: Ok(decision),
                generation,
                reconnected,
            },
            Err(e) => failed(e, generation, reconnected),
        }
    }

    /// The check of `Reconnect::Background`: without a connection it answers at once (a
    /// connection failure, for the policy) and leaves reconnecting to the background task.
    async fn ask_fail_fast(&self, decider: &Decider, key: &str, budget: Duration) -> Asked {
        let Some((generation, mut con)) = self.connection() else {
            self.reconnect_in_background();
            return Asked {
                result: Err(AskFailure::Redis(Failure::Connection)),
                generation: 0,
                reconnected: false,
            };
        };
        let reconnected = std::mem::take(&mut lock(&self.current).fresh);
        let result = within(budget, decide(decider, Some(&mut con), key)).await;
        Asked {
            result,
            generation,
            reconnected,
        }
    }

    /// Starts the background task unless it runs: it tries to connect (each try bounded by the
    /// budget), backing off between tries, until it succeeds or the store is gone.
    fn reconnect_in_background(&self) {
        if self.reconnecting.swap(true, Ordering::AcqRel) {
            return;
        }
        let (client, config, budget) = (self.client.clone(), self.config.clone(), self.budget);
        let current: Weak<Mutex<Current>> = Arc::downgrade(&self.current);
        let running = Arc::clone(&self.reconnecting);
        tokio::spawn(async move {
            let mut wait = Duration::ZERO;
            loop {
                let connecting = client.get_multiplexed_async_connection_with_config(&config);
                let made = tokio::time::timeout(budget, connecting).await;
                let Some(current) = current.upgrade() else {
                    break;
                };
                if let Ok(Ok(con)) = made {
                    install(&current, con);
                    break;
                }
                drop(current);
                wait = (wait + BACKOFF_STEP).min(BACKOFF_MAX);
                tokio::time::sleep(wait).await;
            }
            running.store(false, Ordering::Release);
        });
    }

    /// What the breaker's background probe needs of the slot, owned, for its task.
    pub(super) fn prober(&self) -> Prober {
        Prober {
            client: self.client.clone(),
            config: self.config.clone(),
            current: Arc::downgrade(&self.current),
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

/// The breaker's background probe: a fresh connection and a PING.
pub(super) struct Prober {
    client: redis::Client,
    config: AsyncConnectionConfig,
    current: Weak<Mutex<Current>>,
}

impl Prober {
    /// Connects afresh and PINGs, all within `budget`; on an answer the connection becomes the
    /// store's, so the first check after recovery does not pay for connecting either.
    pub(super) async fn ping(&self, budget: Duration) -> bool {
        let attempt = async {
            let connecting = self
                .client
                .get_multiplexed_async_connection_with_config(&self.config);
            let mut con = connecting.await?;
            redis::cmd("PING").query_async::<()>(&mut con).await?;
            Ok::<_, RedisError>(con)
        };
        let Ok(Ok(con)) = tokio::time::timeout(budget, attempt).await else {
            return false;
        };
        match self.current.upgrade() {
            Some(current) => {
                install(&current, con);
                true
            }
            None => false,
        }
    }
}

/// Makes `con` the slot's connection, one not yet used by a check.
fn install(current: &Mutex<Current>, con: MultiplexedConnection) {
    let mut current = lock(current);
    current.generation += 1;
    current.con = Some(con);
    current.fresh = true;
}

/// One request's decision by `decider` on `con`.
async fn decide(
    decider: &Decider,
    con: Option<&mut MultiplexedConnection>,
    key: &str,
) -> Result<Decision, LimiterError> {
    decider.decide(con, Check::one(key)).await.outcome
}

/// Runs `attempt` within `budget`: its decision, or why there is none.
async fn within(
    budget: Duration,
    attempt: impl std::future::Future<Output = Result<Decision, LimiterError>>,
) -> Result<Decision, AskFailure> {
    match tokio::time::timeout(budget, attempt).await {
        Ok(Ok(decision)) => Ok(decision),
        Ok(Err(LimiterError::Redis(e))) => Err(AskFailure::Redis(classify(&e))),
        Ok(Err(bug)) => Err(AskFailure::Bug(bug)),
        Err(_elapsed) => Err(AskFailure::Redis(Failure::Timeout)),
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
