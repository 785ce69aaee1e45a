//! # chaos
//! Hypothesis (seed 003): with fail-open and a 5 s store timeout, a store blackhole makes every
//! request wait 5 s, so a 40-worker service at 800 req/s has every worker busy in under a second
//! and stops serving: the limiter took the service down without rejecting anything. With a 30 ms
//! timeout each request pays at most 30 ms, the fail-open counter climbs and the service keeps
//! serving. Injected latency shows whether the timeout really bounds commands: p99 rises by at
//! most the timeout, or by the injected delay when the timeout covers only connection set-up. A
//! fail-open path that records nothing admits everything with its counter flat; a client that
//! never reconnects stays open after the drill: the after-drill check allows all 300 requests
//! where an enforcing limiter allows its limit. A client whose error path answers a denial
//! rejects during a fail-open drill, where the correct one rejects nothing; a correct client
//! configured fail-closed rejects every request of the blackhole by its policy. Which way the
//! blackhole drops packets does not change what the client sees (every check times out) but does
//! change what Redis does: dropping only the replies lets Redis run every check nobody hears back
//! about; dropping commands (or both ways) runs none until the heal, then the held ones at once.
//!
//! Method: an in-process loopback TCP proxy (crate::fault::proxy) between the clients and Redis;
//! the model service (chaos/service.rs) on one current-thread runtime in the harness with the
//! proxy. Per store timeout a sequence: baseline, blackhole, healed, +latency on every reply,
//! healed, every connection reset once then healed; traffic throughout; then the after-drill
//! check. The misconfigured clients (store flaws) and the fail-closed one run one sequence side
//! by side, each its own service. A sequence is one drill (crate::load::drill): the services'
//! requests its schedule, the proxy's switches its plan. Every request is recorded (intended
//! start, end, answer), the pool sampled every few ms, every fault switch timed; then binned and
//! summed per drill window (chaos/tally.rs).
//!
//! Writes `chaos/chaos.csv` (one row per bin per client), `chaos/drills.csv` (one row per drill
//! window per client), `chaos/after.csv` (one row per client), `chaos/switches.csv` (one row per
//! fault switch), `chaos/meta.json`.

mod body;
mod charts;
mod directions;
mod pool;
mod report;
mod rows;
pub mod service;
pub mod tally;
mod timers;
mod warm;

pub use rows::{AfterRow, BinRow, DirectionRow, Drill, DrillRow, PoolBinRow, PoolRow, SwitchRow};
pub use rows::{AFTERS, BINS, DIRECTIONS, DRILLS, POOL, POOL_BINS, SWITCHES};

use super::{Body, Definition, Render, Summarize, Validate};
use crate::fault::Direction;
use crate::limiter::{LimitSpec, Limiter, Strategy};
use crate::record::Table;
use crate::store::Flaw;
use serde::{Deserialize, Serialize};

/// The chaos experiment.
pub struct Chaos;

impl Definition for Chaos {
    const ID: &'static str = "chaos";
    const TOML: &'static str = include_str!("../../../experiments/chaos.toml");
    const NO_MANAGED_TLS: Option<&'static str> = Some(
        "its fault proxy sits between client and server, where TLS would see the proxy, not the server",
    );
    type Params = Params;
    // Every check goes through the store's one decider: a custom limiter (a process's adapter
    // connects through the proxy) runs as one more correct client in the side sequence.
    const TAKES_LIMITERS: bool = true;
    const TAKES_PROCESSES: bool = true;
    const VERDICTS: crate::experiments::limiters::Verdicts = report::verdicts;
    const LIMITER_CLAIMS: crate::experiments::limiters::Claims = report::limiter_claims;

    const BODY: Body<Params> = body::run;
    const CHARTS: Render = charts::render;
    const SUMMARY: Summarize = report::summary;

    fn tables() -> Vec<Table> {
        vec![
            BINS.table(),
            DRILLS.table(),
            AFTERS.table(),
            SWITCHES.table(),
            DIRECTIONS.table(),
            POOL.table(),
            POOL_BINS.table(),
        ]
    }
}

/// Parameters; defaults in `experiments/chaos.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The model service's workers.
    pub workers: usize,
    /// Requests per second arriving at the service (open loop).
    pub rate_per_s: f64,
    /// What a worker does after the limiter answers (a sleep: it occupies the worker).
    pub work_ms: u64,
    /// Requests that may wait for a free worker; one more is dropped.
    pub queue_max: usize,
    /// A request that waited this long for a worker is dropped.
    pub queue_wait_ms: u64,
    /// Limiter keys the requests are spread over.
    pub keys: u64,
    /// Each key's bucket capacity.
    pub capacity: u64,
    /// Each key's refill rate, tokens per second.
    pub refill_per_sec: f64,
    /// Store timeouts, one drill sequence each (the seed's 5 s and 30 ms).
    pub timeouts_ms: Vec<u64>,
    /// Misconfigured clients run side by side in one more sequence: a timeout covering
    /// connection set-up only, a fail-open path that records nothing, a client that never
    /// reconnects, one whose error path answers a denial.
    pub flaws: Vec<Flaw>,
    /// A correct client configured fail-closed runs beside the misconfigured ones.
    pub fail_closed: bool,
    /// The misconfigured and fail-closed clients' store timeout.
    pub flaw_timeout_ms: u64,
    /// The blackhole and the latency drill in the misconfigured clients' sequence (ratelab's
    /// own variation: the seed's minute is for the correct client's pool to turn over).
    pub flaw_drill_ms: u64,
    /// The drill sequence's first window, before any fault.
    pub baseline_ms: u64,
    /// How long the proxy drops traffic (the correct clients' sequence).
    pub blackhole_drill_ms: u64,
    /// What the blackhole drops: `to-server` (commands), `to-client` (replies) or `both`.
    pub blackhole_direction: Direction,
    /// The blackhole directions drilled one after another, each through a proxy of its own with
    /// one correct client at `flaw_timeout_ms` (empty: none).
    pub directions: Vec<Direction>,
    /// Each window of a direction's drill (baseline, blackhole, healed).
    pub direction_drill_ms: u64,
    /// Checks per second in a direction's drill (open loop, Poisson).
    pub direction_rate_per_s: f64,
    /// An idle service (the correct client, requests arriving at this rate) beside the loaded
    /// one in the first sequence's drills (0: none).
    pub idle_rate_per_s: f64,
    /// The pool drill, beside the first sequence: connections in the pool (0: no pool drill).
    pub pool_connections: usize,
    /// The pool replaces a connection at its first check-out past this age; one connection
    /// reaches it every `pool_max_age_ms / pool_connections`.
    pub pool_max_age_ms: u64,
    /// How long the pool drill refuses new connections (open ones go on), after a baseline of
    /// `baseline_ms` and before `settle_ms` healed.
    pub pool_drill_ms: u64,
    /// Checks per second through the pool (open loop, Poisson).
    pub pool_rate_per_s: f64,
    /// The latency drill: delay added to every reply.
    pub injected_ms: u64,
    /// The latency drill: random extra delay, up to this much.
    pub jitter_ms: u64,
    /// How long latency is injected (the correct clients' sequence).
    pub latency_drill_ms: u64,
    /// The windows after each drill: healed after the blackhole, after the latency, and
    /// after every connection was reset once.
    pub settle_ms: u64,
    /// The after-drill check: requests on one fresh key, one after another.
    pub after_requests: u64,
    /// Width of the time bins of chaos.csv.
    pub bin_ms: u64,
    /// The service's pool (busy workers, queue) is sampled this often.
    pub sample_ms: u64,
}

impl Params {
    /// Each key's bucket: the built-in limiter's, and what a custom limiter is told.
    fn spec(&self) -> LimitSpec {
        LimitSpec {
            capacity: self.capacity,
            refill_per_sec: self.refill_per_sec,
            ..LimitSpec::default()
        }
    }

    fn limiter(&self) -> Limiter {
        Limiter::new(Strategy::LuaBucket, self.spec())
    }
}

impl Validate for Params {
    fn validate(&self) -> Result<(), String> {
        let p = self;
        let bad = [
            (p.workers == 0, "workers must be >= 1"),
            (
                !(p.rate_per_s > 0.0 && p.rate_per_s.is_finite()),
                "rate_per_s must be a positive number",
            ),
            (
                !(p.idle_rate_per_s >= 0.0 && p.idle_rate_per_s.is_finite()),
                "idle_rate_per_s must be 0 (no idle service) or a positive number",
            ),
            (p.keys == 0, "keys must be >= 1"),
            (p.capacity == 0, "capacity must be >= 1"),
            (
                p.after_requests <= p.capacity,
                "after_requests must exceed capacity, or enforcement cannot show",
            ),
            (
                p.timeouts_ms.is_empty() || p.timeouts_ms.contains(&0),
                "timeouts_ms must list timeouts >= 1",
            ),
            (
                p.flaw_timeout_ms == 0 || p.flaw_drill_ms == 0,
                "flaw_timeout_ms and flaw_drill_ms must be >= 1",
            ),
            (
                p.baseline_ms == 0 || p.blackhole_drill_ms == 0 || p.latency_drill_ms == 0,
                "baseline_ms, blackhole_drill_ms and latency_drill_ms must be >= 1",
            ),
            (
                !p.directions.is_empty()
                    && (p.direction_drill_ms == 0
                        || !(p.direction_rate_per_s > 0.0 && p.direction_rate_per_s.is_finite())),
                "with directions, direction_drill_ms must be >= 1 and direction_rate_per_s positive",
            ),
            (
                p.pool_connections > 0
                    && (p.pool_max_age_ms == 0
                        || p.pool_drill_ms == 0
                        || !(p.pool_rate_per_s > 0.0 && p.pool_rate_per_s.is_finite())),
                "with pool_connections, pool_max_age_ms and pool_drill_ms must be >= 1 and \
                 pool_rate_per_s positive",
            ),
            (
                p.bin_ms == 0 || p.sample_ms == 0,
                "bin_ms and sample_ms must be >= 1",
            ),
        ];
        match bad.iter().find(|(is_bad, _)| *is_bad) {
            Some((_, reason)) => Err((*reason).to_string()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Profile;
    use crate::experiments::frame::resolve;

    #[test]
    fn full_profile_has_the_seeds_shape() {
        let full = resolve::<Chaos>(Profile::Full, &[]).unwrap();
        full.validate().unwrap();
        assert_eq!((full.workers, full.rate_per_s), (40, 800.0));
        assert_eq!(full.timeouts_ms, [5000, 30]);
        // The seed's minute: the pool's drill (the blackhole and latency drills are shorter).
        assert_eq!((full.pool_drill_ms, full.pool_max_age_ms), (60_000, 60_000));
        assert_eq!((full.injected_ms, full.after_requests), (300, 300));
        let quick = resolve::<Chaos>(Profile::Quick, &[]).unwrap();
        quick.validate().unwrap();
        assert_eq!(quick.flaws.len(), 4, "every misconfiguration in CI");
        assert!(quick.fail_closed, "the fail-closed client in CI");
    }

    #[test]
    fn an_after_check_no_longer_than_the_limit_is_refused() {
        let sets = [("after_requests".to_string(), "20".to_string())];
        let p = resolve::<Chaos>(Profile::Quick, &sets).unwrap();
        assert!(p.validate().unwrap_err().contains("after_requests"));
    }
}
