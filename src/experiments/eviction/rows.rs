//! eviction's CSV schemas and the choices its rows name.

use crate::record::CsvFile;
use serde::{Deserialize, Serialize};

/// `eviction.csv`: One row per limiter user per (layout, policy, trial).
pub const USERS: CsvFile<UserRow> = CsvFile::new("eviction.csv");

/// `keys.csv`: One row per (layout, policy, trial).
pub const CELLS: CsvFile<CellRow> =
    CsvFile::new("keys.csv").added(&["growth_users", "growth_refused", "limiter_maxmemory_bytes"]);

/// Where the limiter's keys live relative to the cache data that pushes the store past maxmemory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// Limiter keys and cache keys in one database of one server.
    Shared,
    /// Cache keys in database 1 of the same server: the seed's "dedicated database" taken
    /// literally. maxmemory is per server, so this separates names, not memory.
    SharedDb,
    /// Cache keys on a server of their own with the same maxmemory and policy: the limiter's
    /// server holds limiter keys only.
    Dedicated,
    /// As `Dedicated`, and the limiter's own server pushed past its maxmemory by its own keys:
    /// users arriving during the pressure, one new bucket each (seed 003's drill on the store it
    /// recommends: "Fill the store past maxmemory").
    DedicatedGrowth,
}

/// The server's `maxmemory-policy`, or no maxmemory at all (the control).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EvictionPolicy {
    /// maxmemory 0: nothing is evicted and nothing refused, whatever is written.
    Unlimited,
    Noeviction,
    AllkeysLru,
    VolatileLru,
    VolatileTtl,
}

impl Layout {
    /// Whether the cache data goes to a server of its own.
    pub fn cache_apart(self) -> bool {
        matches!(self, Layout::Dedicated | Layout::DedicatedGrowth)
    }
}

impl EvictionPolicy {
    /// The value CONFIG SET maxmemory-policy takes.
    pub fn redis_name(self) -> &'static str {
        match self {
            EvictionPolicy::Unlimited | EvictionPolicy::Noeviction => "noeviction",
            EvictionPolicy::AllkeysLru => "allkeys-lru",
            EvictionPolicy::VolatileLru => "volatile-lru",
            EvictionPolicy::VolatileTtl => "volatile-ttl",
        }
    }
}

/// When a user first came: its bucket's history is what eviction can lose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UserClass {
    /// Emptied its bucket before the pressure (`capacity` checks, all admitted), then
    /// `capacity` checks after it: an exact bucket admits only its refill.
    Emptied,
    /// First seen after the pressure, with 2 x `capacity` checks: an exact bucket admits its
    /// capacity, and creating the bucket is a write that needs memory.
    New,
}

/// One limiter user in one (layout, policy, trial): what it was admitted before the cache
/// pressure, whether its bucket survived it, and what it was admitted after.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct UserRow {
    /// Where the cache data went: `shared` (the limiter's database), `shared-db` (database 1 of
    /// the same server) or `dedicated` (a server of its own).
    pub layout: Layout,
    /// The server's maxmemory-policy (`unlimited`: no maxmemory, the control).
    pub policy: EvictionPolicy,
    pub trial: u32,
    /// The user's number: its bucket is the key `<run prefix>user:<n>`.
    pub user: u64,
    /// `emptied` (emptied its bucket before the pressure) or `new` (first seen after it).
    pub class: UserClass,
    /// The bucket's capacity.
    pub capacity: u64,
    /// Admitted before the pressure: the capacity for an emptied user (the run fails otherwise),
    /// 0 for a new one.
    pub admitted_before: u64,
    /// 1 when the bucket's key existed after the pressure (EXISTS), else 0 (always 0 when new).
    pub key_survived: u8,
    /// Checks sent after the pressure.
    pub checks_after: u64,
    /// The store's answers to them.
    pub allowed_after: u64,
    /// Checks after the pressure that the limiter denied.
    pub denied_after: u64,
    /// Answered by the store's policy because Redis refused (e.g. OOM under noeviction).
    pub degraded_allowed_after: u64,
    /// Denied by the store's policy because Redis refused.
    pub degraded_denied_after: u64,
    /// allowed_after + degraded_allowed_after: what got through.
    pub admitted_after: u64,
    /// The most an exact bucket could admit after: capacity + its refill from its first check
    /// to its last (floored), less admitted_before, at most checks_after.
    pub ideal_after: u64,
    /// admitted_after - ideal_after: requests let through only because state was lost or refused.
    pub over_admitted: i64,
}

/// One (layout, policy, trial): the memory limit, what was written and what survived.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CellRow {
    /// Where the cache data went: `shared` (the limiter's database), `shared-db` (database 1 of
    /// the same server), `dedicated` (a server of its own) or `dedicated-growth` (a server of its
    /// own, and the limiter's server filled by its own new buckets).
    pub layout: Layout,
    /// The server's maxmemory-policy (`unlimited`: no maxmemory, the control).
    pub policy: EvictionPolicy,
    pub trial: u32,
    /// maxmemory set on the server the cache data went to (0: unlimited).
    pub maxmemory_bytes: u64,
    /// used_memory there just before the cache data and at its end.
    pub used_before_bytes: u64,
    /// used_memory there at the end of the cache data.
    pub used_after_bytes: u64,
    /// Cache keys written and their values' bytes in total.
    pub cache_bytes_written: u64,
    /// INFO stats evicted_keys during the pressure, on the limiter's server and on the cache's
    /// (the same server unless the layout is dedicated).
    pub evicted_on_limiter_server: u64,
    /// INFO stats evicted_keys during the pressure on the server the cache data went to.
    pub evicted_on_cache_server: u64,
    /// evicted_keys on the limiter's server while the users checked after the pressure.
    pub evicted_during_checks: u64,
    /// Limiter buckets that existed before the pressure (one per emptied user).
    pub limiter_keys: u64,
    /// Of them, those whose key still existed after it (EXISTS).
    pub limiter_survived: u64,
    /// limiter_keys - limiter_survived: buckets the pressure deleted.
    pub limiter_lost: u64,
    /// limiter_survived / limiter_keys.
    pub limiter_survived_fraction: f64,
    /// Cache keys written with an expiry, and how many still exist.
    pub cache_ttl_keys: u64,
    /// Of them, those that still exist.
    pub cache_ttl_survived: u64,
    /// cache_ttl_survived / cache_ttl_keys.
    pub cache_ttl_survived_fraction: f64,
    /// Cache keys written without an expiry, and how many still exist.
    pub cache_plain_keys: u64,
    /// Of them, those that still exist.
    pub cache_plain_survived: u64,
    /// cache_plain_survived / cache_plain_keys.
    pub cache_plain_survived_fraction: f64,
    /// Cache writes Redis refused, and the first refusal's text.
    pub cache_write_errors: u64,
    /// The first refusal's text (empty when none was refused).
    pub cache_first_error: String,
    /// What one limiter check answered right after the pressure: empty when it decided.
    pub limiter_error: String,
    /// 1 when that answer was Redis's OOM error.
    pub limiter_oom: u8,
    /// The store's policy for checks Redis refuses.
    pub store_policy: String,
    /// How long writing the cache data took.
    pub pressure_ms: f64,
    /// dedicated-growth only: users who arrived during the pressure, one check each (a new bucket
    /// on the limiter's server); 0 in the other layouts.
    #[serde(default)]
    pub growth_users: u64,
    /// Of their checks, those Redis refused (OOM), answered by the store's policy.
    #[serde(default)]
    pub growth_refused: u64,
    /// maxmemory of the limiter's own server (0: unlimited): the cache's in the shared layouts.
    #[serde(default)]
    pub limiter_maxmemory_bytes: u64,
}
