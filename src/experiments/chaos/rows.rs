//! The chaos experiment's rows: one per time bin per client (chaos.csv), one per drill window per
//! client (drills.csv, the claims' figures), one per after-drill check (after.csv), one per fault
//! switch (switches.csv).

use crate::record::CsvFile;
use serde::{Deserialize, Serialize};

/// `chaos.csv`: One row per time bin of one client's service.
pub const BINS: CsvFile<BinRow> = CsvFile::new("chaos.csv");

/// `drills.csv`: One row per drill window of one client.
pub const DRILLS: CsvFile<DrillRow> = CsvFile::new("drills.csv").added(&[
    "degraded_denied",
    "checked_due_in_window",
    "rejected_due_in_window",
    "check_due_p50_ms",
]);

/// `after.csv`: One row per after-drill check.
pub const AFTERS: CsvFile<AfterRow> = CsvFile::new("after.csv");

/// `directions.csv`: One row per window of each blackhole direction's drill.
pub const DIRECTIONS: CsvFile<DirectionRow> = CsvFile::new("directions.csv");

/// `pool.csv`: One row per connection of the pool drill's pool per window.
pub const POOL: CsvFile<PoolRow> = CsvFile::new("pool.csv");

/// `pool_bins.csv`: One row per time bin of the pool drill.
pub const POOL_BINS: CsvFile<PoolBinRow> = CsvFile::new("pool_bins.csv");

/// `switches.csv`: One row per switch of the proxy's fault.
pub const SWITCHES: CsvFile<SwitchRow> = CsvFile::new("switches.csv");

/// A window of a drill sequence, in the seed's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Drill {
    /// Healthy, under load: the reference.
    Baseline,
    /// The store port blackholed (connections stay open, nothing forwarded).
    Blackhole,
    /// Healed after the blackhole.
    AfterBlackhole,
    /// Every reply delayed by the injected latency.
    Latency,
    /// Healed after the latency injection.
    AfterLatency,
    /// Every connection reset once, then healed: what a client that never reconnects cannot survive.
    Reset,
    /// New connections refused, open ones untouched (a firewall rule that drops only new
    /// connections): the pool drill's fault.
    Refused,
    /// Healed after new connections were refused.
    AfterRefused,
}

impl Drill {
    /// The windows a fault is active in (shaded in the charts).
    pub fn is_fault(self) -> bool {
        matches!(
            self,
            Drill::Blackhole | Drill::Latency | Drill::Reset | Drill::Refused
        )
    }
}

impl std::fmt::Display for Drill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::record::csv_text(self))
    }
}

/// One time bin of one client's service (`bin_ms` wide; counts are per bin).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BinRow {
    /// `correct`, or the flaw the client was given.
    pub client: String,
    /// The store's timeout (its whole-call budget; connecting only for `setup-timeout-only`).
    pub timeout_ms: u64,
    /// The drill window the bin starts in.
    pub drill: Drill,
    /// Start of the bin, s after the schedule's start.
    pub t_s: f64,
    /// The bin's width.
    pub bin_ms: u64,
    /// Requests whose intended start falls in the bin.
    pub offered: u64,
    /// Requests that finished (a worker answered them) in the bin.
    pub served: u64,
    /// Requests dropped in the bin: no worker within the queue wait, or the queue full.
    pub dropped: u64,
    /// Latency from the intended start of the requests served in the bin (empty: none served).
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
    /// How the requests served in the bin were answered: by Redis, or by policy (fail-open).
    pub allowed: u64,
    pub denied: u64,
    /// Answered by the store's policy because Redis did not answer in time (allowed or denied).
    pub degraded: u64,
    /// The client's own fail-open counter: its increase over the bin (the metric a dashboard
    /// shows; flat for an uninstrumented client whatever it admits).
    pub fail_open_counter: u64,
    /// Workers busy, sampled every few ms: the most and the mean over the bin; requests waiting.
    pub busy_max: u64,
    /// Workers busy, mean of the samples in the bin.
    pub busy_mean: f64,
    /// Requests waiting for a worker, the most sampled in the bin.
    pub queue_max: u64,
}

/// One drill window of one client: what the claims read.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DrillRow {
    /// `correct`, or the flaw the client was given.
    pub client: String,
    /// The store's timeout (its whole-call budget; connecting only for `setup-timeout-only`).
    pub timeout_ms: u64,
    /// The drill window: baseline, blackhole, after-blackhole, latency, after-latency or reset.
    pub drill: Drill,
    /// The window on the schedule's clock, from the proxy's switch instants.
    pub start_ms: f64,
    /// The window's end on the same clock.
    pub end_ms: f64,
    /// The model service's workers (each serves one request at a time).
    pub workers: u64,
    /// The delay injected in this window (0 outside the latency drill).
    pub injected_ms: u64,
    /// Requests intended in the window; of them served and dropped.
    pub offered: u64,
    /// Of them, served by a worker (whenever they finished).
    pub served: u64,
    /// Of them, dropped: no worker within the queue wait, or the queue full.
    pub dropped: u64,
    /// Requests finished inside the window, as a share of those offered: the service's
    /// throughput while the window lasted.
    pub completed_in_window: u64,
    /// completed_in_window / offered.
    pub served_fraction: f64,
    /// The most `workers` workers can finish in the window when each request holds one for the
    /// timeout: workers x (1 + ceil(window / timeout)), as a share of `offered`.
    pub pool_bound: f64,
    /// dropped / offered.
    pub dropped_fraction: f64,
    /// Latency from the intended start of the requests offered in the window that were served.
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
    /// The same client's baseline p99, and this window's p99 minus it.
    pub baseline_p99_ms: Option<f64>,
    /// p99_ms - baseline_p99_ms: what the drill added to the tail.
    pub p99_rise_ms: Option<f64>,
    /// Where the served requests' latency went: waiting for a worker (from the intended start, so
    /// the generator's wake-up counts), the limiter's check, the work after it. Absent in runs
    /// before they were recorded.
    #[serde(default)]
    pub wait_p99_ms: Option<f64>,
    /// The limiter's check of the served requests: median.
    #[serde(default)]
    pub check_p50_ms: Option<f64>,
    /// A tokio sleep of the store's timeout, repeated on the service's runtime beside the drills
    /// (the timer the store's timeout uses): median lateness past its deadline of the sleeps that
    /// ended in the window, ms; empty when none did.
    #[serde(default)]
    pub tokio_timer_late_p50_ms: Option<f64>,
    /// The same with a precise timer (a timerfd, not rounded to tokio's millisecond tick), on the
    /// same runtime at the same time: median lateness, ms.
    #[serde(default)]
    pub precise_timer_late_p50_ms: Option<f64>,
    /// The limiter's check of the served requests: 99th percentile.
    #[serde(default)]
    pub check_p99_ms: Option<f64>,
    /// The work after the check: 99th percentile.
    #[serde(default)]
    pub work_p99_ms: Option<f64>,
    /// From the window's start to the first instant every worker was busy (empty: never).
    pub all_busy_after_ms: Option<f64>,
    /// Workers busy, sampled every few ms: the most in the window.
    pub busy_max: u64,
    /// Workers busy: the mean of the samples in the window.
    pub busy_mean: f64,
    /// How the requests offered in the window were answered.
    pub allowed: u64,
    pub denied: u64,
    /// Allowed by the store's fail-open policy because Redis did not answer in time.
    pub degraded_allowed: u64,
    /// Denied by the store's fail-closed policy because Redis did not answer in time.
    #[serde(default)]
    pub degraded_denied: u64,
    /// Answers that came from the policy, as a share of those served.
    pub degraded_fraction: f64,
    /// The client's fail-open counter: its increase over the window.
    pub fail_open_counter: u64,
    /// Requests whose check was a limiter bug (never expected: the run fails on any).
    pub errors: u64,
    /// Of the requests served, those whose check began at least a timeout before the window's end:
    /// answered under the window's conditions, not the next one's. Absent in runs before it was
    /// recorded.
    #[serde(default)]
    pub checked_due_in_window: Option<u64>,
    /// Of those, rejected: denied by Redis, by the fail-closed policy or by a flawed error path.
    #[serde(default)]
    pub rejected_due_in_window: Option<u64>,
    /// The median check of those (`checked_due_in_window`), ms: what a check under the window's
    /// conditions took. A request that arrived in the window but took a worker after the heal is
    /// checked by a healthy store and is left out. Absent in runs before it was recorded.
    #[serde(default)]
    pub check_due_p50_ms: Option<f64>,
}

/// The after-drill check: `requests` checks on one fresh key, one after another, once healed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AfterRow {
    /// `correct`, or the flaw the client was given.
    pub client: String,
    /// The store's timeout (its whole-call budget; connecting only for `setup-timeout-only`).
    pub timeout_ms: u64,
    pub requests: u64,
    /// The bucket's capacity: what an enforcing limiter allows at once.
    pub capacity: u64,
    /// The bucket's refill, tokens per second.
    pub refill_per_sec: f64,
    pub elapsed_ms: f64,
    /// capacity + the tokens refilled while the check ran, rounded up: the most it may allow.
    pub max_allowed: u64,
    pub allowed: u64,
    pub denied: u64,
    /// Allowed by the store's policy because Redis did not answer in time.
    pub degraded_allowed: u64,
    /// Denied by the store's policy because Redis did not answer in time.
    pub degraded_denied: u64,
    /// Checks that opened a new connection.
    pub reconnects: u64,
    /// Redis decided again: something was denied and no more than `max_allowed` allowed.
    pub enforced: bool,
}

/// One window (baseline, blackhole, after-blackhole) of one blackhole direction's drill: one
/// correct client, fail-open, through a proxy of its own; what it saw and what Redis ran.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DirectionRow {
    /// What the blackhole dropped: `to-server` (commands), `to-client` (replies) or `both`.
    pub direction: crate::fault::Direction,
    /// The client's store timeout.
    pub timeout_ms: u64,
    /// The window: baseline, blackhole or after-blackhole (healed).
    pub drill: Drill,
    /// The window's start on the drill's clock, from the proxy's switch instants.
    pub start_ms: f64,
    /// The window's end on the same clock.
    pub end_ms: f64,
    /// Checks intended in the window.
    pub offered: u64,
    /// Of them, answered by Redis.
    pub by_redis: u64,
    /// Of them, answered by the fail-open policy (Redis did not answer in time).
    pub by_policy: u64,
    /// Of them, started at least a timeout before the window's end: their answer was due in it.
    pub due_in_window: u64,
    /// Of the checks due in the window, the share answered by policy.
    pub by_policy_fraction: f64,
    /// How long the window's checks took, as the client saw them: the median.
    pub check_p50_ms: Option<f64>,
    /// The longest of them.
    pub check_max_ms: Option<f64>,
    /// Limiter scripts Redis ran between the window's switches (EVALSHA and EVAL calls in INFO
    /// commandstats, read on a connection that bypasses the proxy): whoever's checks they were.
    pub redis_ran: u64,
    /// redis_ran / offered: 1 when Redis runs each check of the window as it comes, 0 when none
    /// reaches it, above 1 when held checks of an earlier window arrive in this one.
    pub redis_ran_fraction: f64,
    /// Connections the proxy accepted in the window: the client's reconnect attempts.
    pub connections_accepted: u64,
    /// New connections the client reported in the window.
    pub reconnects: u64,
}

/// One connection of the pool drill's pool in one window (baseline, refused, after-refused): the
/// checks it carried and how they were answered, before and after the pool replaced it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PoolRow {
    /// The window: baseline, refused (new connections refused) or after-refused (healed).
    pub drill: Drill,
    /// The connection's place in the pool (requests take the places in turn).
    pub connection: u64,
    /// The pool replaces a connection at its first check-out past this age.
    pub max_age_ms: u64,
    /// The window's start on the drill's clock, from the proxy's switch instants.
    pub start_ms: f64,
    /// The window's end on the same clock.
    pub end_ms: f64,
    /// Times the pool replaced this connection in the window.
    pub replaced: u64,
    /// The first replacement, ms after the window's start (empty: none).
    pub replaced_at_ms: Option<f64>,
    /// Checks intended in the window that took this connection.
    pub checks: u64,
    /// Of them, answered by Redis.
    pub by_redis: u64,
    /// Of them, answered by the fail-open policy (Redis could not be asked or did not answer in
    /// time).
    pub by_policy: u64,
    /// by_policy / checks.
    pub by_policy_fraction: f64,
    /// Of the checks before the connection's first replacement in the window (on the connection
    /// it had at the window's start), the share answered by policy.
    pub policy_before_replaced_fraction: f64,
    /// Checks after its first replacement in the window answered by Redis (of those started
    /// before the window's end: one intended just before it may start after the next switch).
    pub redis_after_replaced: u64,
    /// The first check answered by policy, ms after the window's start (empty: none).
    pub first_policy_ms: Option<f64>,
}

/// One time bin of the pool drill, all connections together; bins start at their window's
/// start (the last one of a window runs to its end).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PoolBinRow {
    /// The window the bin is in.
    pub drill: Drill,
    /// The bin's place in its window, from 0.
    pub bin: u64,
    /// The window's last bin.
    pub last_in_window: bool,
    /// Start of the bin, s after the schedule's start.
    pub t_s: f64,
    /// The bin's width, ms.
    pub bin_ms: f64,
    /// The pool's connections.
    pub connections: u64,
    /// Checks intended in the bin.
    pub checks: u64,
    /// Of them, answered by the fail-open policy.
    pub by_policy: u64,
    /// by_policy / checks.
    pub by_policy_fraction: f64,
    /// Connections with a check answered by policy in the bin.
    pub connections_failing: u64,
    /// Connections the pool replaced since the window's start, by the bin's end.
    pub connections_replaced: u64,
}

/// One switch of the proxy's fault.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SwitchRow {
    /// The clients that ran through this sequence of faults, `+`-joined.
    pub clients: String,
    /// The store's timeout those clients ran with.
    pub timeout_ms: u64,
    /// On the schedule's clock (negative: before traffic started).
    pub at_ms: f64,
    /// The proxy's mode from then on: `healed`, `blackhole <direction>`, `refuse`, `delay <n> ms`
    /// (`+ U[0, <j>] ms` with jitter) or `reset`.
    pub fault: String,
}
