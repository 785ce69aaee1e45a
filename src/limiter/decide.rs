//! Who decides: the one interface every load loop and the resilient store ask for a decision.
//! A decider takes a key and a cost and answers with an [`Attempt`] (the decision, or why there
//! was none, with the round trips and NOSCRIPTs it took), whatever it decides with: a script or
//! plain commands on the caller's Redis connection ([`Limiter`]: the built-in strategies and the
//! custom manifests), a window in this process's memory ([`InMemory`]), or a limiter
//! process with its own client. [`Decider`] is the registry: the kinds a run can name, built from
//! a strategy and its limit, dispatched by `match` (no allocation per check on the Redis kinds).

use super::process::{Process, Reach};
use super::{Attempt, InMemoryWindow, Invocation, LimitSpec, Limiter, LimiterError, Strategy};
use redis::aio::MultiplexedConnection;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

/// What a decider takes from its caller's connection pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// One of the caller's connections, shared by the checks in flight on it (it multiplexes).
    Shared,
    /// A connection of the caller's for each check in flight (WATCH state belongs to one).
    PerInFlight,
    /// None: it brings its own (a limiter process's client) or needs none (memory). Callers
    /// open no Redis connection for it and pass `None`.
    Own,
}

/// One decision asked for: the client's key and what the request costs (1 for one request).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Check<'a> {
    pub key: &'a str,
    pub cost: u32,
}

impl<'a> Check<'a> {
    /// One request against `key`, the only cost the seeds' limiters know.
    pub fn one(key: &'a str) -> Self {
        Check { key, cost: 1 }
    }
}

/// A way of deciding. Implementations are `Send + Sync` (the store is shared across threads)
/// and so are their futures.
///
/// A limiter process ([`super::process::Process`]) is one more implementation: built by
/// [`Decider::reaching`] in a worker before its start signal, it has [`Link::Own`] (its library
/// has its own Redis client, so the load loops open no connection for it and the store makes
/// none; the store's budget, policy and breaker still bound and answer each check), and it is
/// wrapped in [`Decider::Boxed`]: one allocation per check, which a round trip through a pipe
/// dwarfs.
pub trait Decide: Send + Sync {
    /// What it needs from the caller's pool.
    fn link(&self) -> Link;

    /// Decides `check`. `con` is one of the caller's connections unless [`link`](Self::link)
    /// is [`Link::Own`] (then `None`).
    fn decide<'a>(
        &'a self,
        con: Option<&'a mut MultiplexedConnection>,
        check: Check<'a>,
    ) -> impl Future<Output = Attempt> + Send + 'a;

    /// After a caller's last check: waits for what it still owes checks their callers gave up
    /// on (a limiter process's late answers), or says why it cannot decide any more. Nothing for
    /// a decider that answers within the check.
    fn settle(&self) -> Result<(), LimiterError> {
        Ok(())
    }
}

/// A decision in flight behind a pointer, for kinds outside the hot path.
pub type BoxedAttempt<'a> = Pin<Box<dyn Future<Output = Attempt> + Send + 'a>>;

/// [`Decide`] as an object, for [`Decider::Boxed`]; every decider is one.
pub trait DynDecide: Send + Sync {
    /// [`Decide::link`].
    fn link_dyn(&self) -> Link;
    /// [`Decide::decide`], boxed.
    fn decide_boxed<'a>(
        &'a self,
        con: Option<&'a mut MultiplexedConnection>,
        check: Check<'a>,
    ) -> BoxedAttempt<'a>;
    /// [`Decide::settle`].
    fn settle_dyn(&self) -> Result<(), LimiterError>;
}

impl<D: Decide> DynDecide for D {
    fn link_dyn(&self) -> Link {
        Decide::link(self)
    }

    fn decide_boxed<'a>(
        &'a self,
        con: Option<&'a mut MultiplexedConnection>,
        check: Check<'a>,
    ) -> BoxedAttempt<'a> {
        Box::pin(self.decide(con, check))
    }

    fn settle_dyn(&self) -> Result<(), LimiterError> {
        Decide::settle(self)
    }
}

/// This process's own window ([`InMemoryWindow`]): a pod limiting itself, no Redis.
#[derive(Debug)]
pub struct InMemory(Mutex<InMemoryWindow>);

impl InMemory {
    /// A window admitting `spec.capacity` per `spec.window_ms`.
    pub fn new(spec: LimitSpec) -> Self {
        InMemory(Mutex::new(InMemoryWindow::new(spec)))
    }
}

impl Decide for InMemory {
    fn link(&self) -> Link {
        Link::Own
    }

    fn decide<'a>(
        &'a self,
        _con: Option<&'a mut MultiplexedConnection>,
        check: Check<'a>,
    ) -> impl Future<Output = Attempt> + Send + 'a {
        // Decided before the future is polled the first time: no await holds the lock.
        let outcome = match check.cost {
            1 => {
                let mut window = self.0.lock().unwrap_or_else(|p| p.into_inner());
                Ok(window.check(super::unix_ms()))
            }
            _ => Err(LimiterError::Cost {
                what: "the in-memory window",
                cost: check.cost,
            }),
        };
        std::future::ready(Attempt {
            outcome,
            round_trips: 0,
            noscript: false,
        })
    }
}

/// Every kind of decider a run can name: the registry.
pub enum Decider {
    /// A strategy on the caller's Redis connection: a built-in one or a custom manifest's script.
    Redis(Limiter),
    /// This process's own window.
    InMemory(InMemory),
    /// Any other [`Decide`] (a limiter process), one allocation per check.
    Boxed(Arc<dyn DynDecide>),
}

impl Decider {
    /// The decider of `strategy` bound to `spec`, its script (if any) invoked as `invocation`;
    /// a limiter process needs [`reaching`](Self::reaching), which knows the server.
    pub fn new(
        strategy: Strategy,
        spec: LimitSpec,
        invocation: Invocation,
    ) -> Result<Self, LimiterError> {
        Ok(Decider::Redis(Limiter::with_invocation(
            strategy, spec, invocation,
        )?))
    }

    /// [`new`](Self::new), where a limiter process is started against `reach` (the server the
    /// caller's own connections go to): its adapter's handshake is read before this returns.
    pub fn reaching(
        strategy: Strategy,
        spec: LimitSpec,
        invocation: Invocation,
        reach: &Reach,
    ) -> Result<Self, LimiterError> {
        let process = match strategy {
            Strategy::Custom(name) => name
                .definition()
                .and_then(|d| Some((name, d.algorithm, d.process?))),
            _ => None,
        };
        match process {
            Some((name, algorithm, command)) => Ok(Decider::Boxed(Arc::new(Process::start(
                name.as_str(),
                algorithm,
                &command,
                &spec,
                reach,
            )?))),
            None => Self::new(strategy, spec, invocation),
        }
    }

    /// A window in this process's memory enforcing `spec`.
    pub fn in_memory(spec: LimitSpec) -> Self {
        Decider::InMemory(InMemory::new(spec))
    }

    /// The Redis strategy, when it is one (what its script is, how to encode it raw).
    pub fn limiter(&self) -> Option<&Limiter> {
        match self {
            Decider::Redis(limiter) => Some(limiter),
            _ => None,
        }
    }
}

impl From<Limiter> for Decider {
    fn from(limiter: Limiter) -> Self {
        Decider::Redis(limiter)
    }
}

impl Decide for Decider {
    fn link(&self) -> Link {
        match self {
            Decider::Redis(limiter) => Decide::link(limiter),
            Decider::InMemory(window) => Decide::link(window),
            Decider::Boxed(other) => other.link_dyn(),
        }
    }

    fn settle(&self) -> Result<(), LimiterError> {
        match self {
            Decider::Boxed(other) => other.settle_dyn(),
            Decider::Redis(_) | Decider::InMemory(_) => Ok(()),
        }
    }

    async fn decide<'a>(
        &'a self,
        con: Option<&'a mut MultiplexedConnection>,
        check: Check<'a>,
    ) -> Attempt {
        match self {
            Decider::Redis(limiter) => limiter.decide(con, check).await,
            Decider::InMemory(window) => window.decide(con, check).await,
            Decider::Boxed(other) => other.decide_boxed(con, check).await,
        }
    }
}

impl std::fmt::Debug for Decider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Decider::Redis(limiter) => f.debug_tuple("Redis").field(limiter).finish(),
            Decider::InMemory(window) => f.debug_tuple("InMemory").field(window).finish(),
            Decider::Boxed(_) => f.write_str("Boxed(..)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<F: Future>(f: F) -> F::Output {
        let rt = tokio::runtime::Builder::new_current_thread().build();
        rt.expect("a runtime").block_on(f)
    }

    #[test]
    fn kinds_say_what_they_take_and_refuse_what_they_cannot_decide() {
        let spec = LimitSpec {
            capacity: 1,
            window_ms: 3_600_000,
            ..LimitSpec::default()
        };
        let watch = Decider::new(Strategy::WatchBucket, spec, Invocation::default()).unwrap();
        let bucket = Decider::new(Strategy::LuaBucket, spec, Invocation::default()).unwrap();
        let memory = Decider::in_memory(spec);
        let links = [watch.link(), bucket.link(), memory.link()];
        assert_eq!(links, [Link::PerInFlight, Link::Shared, Link::Own]);
        // A Redis strategy handed no connection says so, having sent nothing.
        let a = block_on(bucket.decide(None, Check::one("k")));
        assert!(matches!(a.outcome, Err(LimiterError::NoConnection { .. })));
        assert_eq!(a.round_trips, 0);
        // The window decides one request per check: a cost of 2 is refused, not half-charged.
        let two = Check { key: "k", cost: 2 };
        let a = block_on(memory.decide(None, two));
        assert!(matches!(a.outcome, Err(LimiterError::Cost { cost: 2, .. })));
        let allowed = |d: &Decider| {
            block_on(d.decide(None, Check::one("k")))
                .outcome
                .unwrap()
                .allowed
        };
        assert!(allowed(&memory), "the refused cost took nothing");
        assert!(!allowed(&memory));
        // The same window behind a pointer decides alike.
        let boxed = Decider::Boxed(Arc::new(InMemory::new(spec)));
        assert_eq!(boxed.link(), Link::Own);
        assert!(allowed(&boxed) && !allowed(&boxed));
    }
}
