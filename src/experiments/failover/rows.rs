//! failover's CSV schemas and the variants its rows name.

use crate::limiter::{Invocation, Strategy};
use crate::record::CsvFile;
use serde::{Deserialize, Serialize};

/// `failover.csv`: one row per active key per trial.
pub const KEYS: CsvFile<KeyRow> = CsvFile::new("failover.csv");

/// `bins.csv`: one row per bin of one trial.
pub const BINS: CsvFile<BinRow> = CsvFile::new("bins.csv");

/// `trials.csv`: one row per trial.
pub const TRIALS: CsvFile<TrialRow> = CsvFile::new("trials.csv");

/// `clients.csv`: one row per client of a Sentinel variant's trial.
pub const CLIENTS: CsvFile<ClientRow> = CsvFile::new("clients.csv");

/// What the promoted replica holds of the limiter's state when clients move to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// The replica caught up with the primary's offset just before the promotion.
    Replicated,
    /// The replication link was cut (a blackhole in both directions) `lag_ms` before the
    /// promotion: the writes of that time never reached the replica.
    Lagging,
    /// The promoted replica was flushed before clients moved: every key is recreated empty.
    Wiped,
    /// `SENTINEL FAILOVER` under load (seed 003's drill): Sentinel promotes the replica and
    /// demotes the old primary; clients move when they learn it (a READONLY reply, an error).
    SentinelPlanned,
    /// The primary SIGKILLed under load: Sentinel promotes the replica after
    /// `down-after-milliseconds`; clients move when the Sentinels name it.
    SentinelCrash,
    /// As sentinel-crash, with the auto-recovery seed 003 warns of racing the drill: the killed
    /// primary, persisting every write to its AOF, is started again as soon as Sentinel has
    /// promoted the replica, and comes back a primary with its data until Sentinel demotes it.
    SentinelRacing,
}

impl Variant {
    /// Whether Sentinels fail over and clients find the primary through them.
    pub fn is_sentinel(self) -> bool {
        matches!(
            self,
            Variant::SentinelPlanned | Variant::SentinelCrash | Variant::SentinelRacing
        )
    }
}

/// How every client reached the promoted replica at one instant.
pub const SWITCH: &str = "client-reconnect";
/// How clients reached the promoted replica in the Sentinel variants: each on its own, asking
/// the Sentinels after a failed check.
pub const SENTINEL_SWITCH: &str = "sentinel-rediscovery";

/// One active key in one trial: what it was admitted over whole windows before and after the
/// promotion, and what its limit allows over the same windows.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KeyRow {
    /// What the promoted replica holds of the limiter's state: `replicated`, `lagging` or `wiped`;
    /// or how Sentinel promotes it: `sentinel-planned` (SENTINEL FAILOVER), `sentinel-crash` (SIGKILL),
    /// `sentinel-racing` (SIGKILL, the old primary restarted with its data once the replica is promoted).
    pub variant: Variant,
    pub strategy: Strategy,
    /// How the limiter's script is invoked: eval, evalsha, evalsha-eval, evalsha-load or fcall.
    pub invocation: Invocation,
    /// Active keys in the trial (K).
    pub keys: u64,
    /// Offered rate per key as a multiple of its limit's rate.
    pub offered: f64,
    pub trial: u32,
    /// The Sentinels' down-after-milliseconds (0 in the variants without Sentinel).
    pub down_after_ms: u64,
    /// The key's number within the trial.
    pub key: u64,
    /// The key's burst: bucket capacity, or requests per fixed window.
    pub burst: u64,
    /// The window (a bucket refills `burst` per window).
    pub window_ms: u64,
    /// Requests the key sent (and was answered) in the windows after the promotion.
    pub sent_post: u64,
    /// Admitted by the old primary after the cut: what the promoted replica never got (all of
    /// the key's admissions when wiped).
    pub lost_admits: u64,
    /// Admitted in the `pre_windows` whole windows before the window of the switch.
    pub admitted_pre: u64,
    /// burst x pre_windows: what the limit allows there at its rate.
    pub allowed_pre: u64,
    /// Admitted in the `post_windows` whole windows from the window of the switch, the switch's
    /// own included (by the old primary before it, the promoted replica after).
    pub admitted_post: u64,
    /// burst x post_windows.
    pub allowed_post: u64,
    /// admitted_pre - allowed_pre: the steady state's own excess, the noise floor.
    pub baseline: i64,
    /// admitted_post - allowed_post: what the promotion let through beyond the limit.
    pub overshoot: i64,
    /// overshoot / burst.
    pub overshoot_bursts: f64,
    /// baseline / burst.
    pub baseline_bursts: f64,
}

/// One bin of one trial, all keys summed, timed from the switch.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BinRow {
    /// What the promoted replica holds of the limiter's state: `replicated`, `lagging` or `wiped`;
    /// or how Sentinel promotes it: `sentinel-planned` (SENTINEL FAILOVER), `sentinel-crash` (SIGKILL),
    /// `sentinel-racing` (SIGKILL, the old primary restarted with its data once the replica is promoted).
    pub variant: Variant,
    pub strategy: Strategy,
    /// How the limiter's script is invoked: eval, evalsha, evalsha-eval, evalsha-load or fcall.
    pub invocation: Invocation,
    pub keys: u64,
    pub offered: f64,
    pub trial: u32,
    /// The Sentinels' down-after-milliseconds (0 in the variants without Sentinel).
    pub down_after_ms: u64,
    /// Start of the bin in ms after the switch (negative: before it).
    pub t_ms: f64,
    /// The bin's width.
    pub bin_ms: u64,
    /// Checks sent in the bin (by their send instant) and their answers.
    pub sent: u64,
    pub admitted: u64,
    pub denied: u64,
    /// Checks that got no decision (counted neither admitted nor denied).
    pub errors: u64,
    /// Checks that met NOSCRIPT (or a missing function) on the way.
    pub noscript: u64,
    /// keys x burst x bin_ms / window_ms: what the limit allows per bin at its rate.
    pub limit: f64,
}

/// One trial: the promotion, the switch, and what the replica had lost.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TrialRow {
    /// What the promoted replica holds of the limiter's state: `replicated`, `lagging` or `wiped`;
    /// or how Sentinel promotes it: `sentinel-planned` (SENTINEL FAILOVER), `sentinel-crash` (SIGKILL),
    /// `sentinel-racing` (SIGKILL, the old primary restarted with its data once the replica is promoted).
    pub variant: Variant,
    pub strategy: Strategy,
    /// How the limiter's script is invoked: eval, evalsha, evalsha-eval, evalsha-load or fcall.
    pub invocation: Invocation,
    pub keys: u64,
    pub offered: f64,
    pub trial: u32,
    /// The Sentinels' down-after-milliseconds (0 in the variants without Sentinel).
    pub down_after_ms: u64,
    /// How clients moved: client-reconnect (connections to the replica opened beforehand, used
    /// by every check sent after the switch), or sentinel-rediscovery (each client asked the
    /// Sentinels after a failed check; the "switch" is then the failover's start: SENTINEL
    /// FAILOVER sent, or the primary killed).
    pub switch: String,
    /// Each key's burst: bucket capacity, or requests per fixed window.
    pub burst: u64,
    /// The window (a bucket refills `burst` per window).
    pub window_ms: u64,
    /// How long the replication link was cut before the promotion (0 unless lagging).
    pub lag_ms: f64,
    /// REPLICAOF NO ONE sent (Sentinel: the failover's start) to role:master seen, ms.
    pub promote_ms: f64,
    /// REPLICAOF NO ONE sent to the switch, ms (flush included when wiped); Sentinel: the
    /// failover's start to the last client's move to the promoted replica.
    pub switch_after_promote_ms: f64,
    /// Phase of the switch within its window, 0..1.
    pub switch_phase: f64,
    /// The old primary's master_repl_offset at the end minus the promoted replica's offset at
    /// its promotion: replication bytes it never got. -1 in the Sentinel variants: the old
    /// primary is demoted and resynced, or dead, before its offset can be read.
    pub lost_repl_bytes: i64,
    /// Checks admitted by the old primary after the last write the replica got (the cut: the
    /// caught-up offset, the blackhole, or everything when wiped); Sentinel: admitted by the
    /// old primary after the replica's promotion (writes the demoted primary's resync drops);
    /// sentinel-racing: admitted by the restarted old primary (the replica has nothing after the kill).
    pub lost_admits: u64,
    /// Keys on the replica right after its promotion (before the flush when wiped).
    pub replica_keys: u64,
    /// The old primary's role when the load stopped (INFO replication; sentinel-racing: once
    /// demoted, or 25 s after its restart, past Sentinel's bound): master (left running, or restarted
    /// and not demoted), slave (demoted: what it admitted after the split was
    /// replaced by the promoted replica's data), or unreachable (killed).
    pub old_primary_role: String,
    /// The first check the promoted replica answered: ok, noscript or error.
    pub first_call: String,
    /// Checks after the switch that met NOSCRIPT, and that got no decision.
    pub noscript_after: u64,
    /// Checks after the switch that got no decision.
    pub errors_after: u64,
    /// Mean and max over keys of overshoot_bursts.
    pub overshoot_bursts_mean: f64,
    /// The largest overshoot_bursts of any key.
    pub overshoot_bursts_max: f64,
    /// Mean over keys of baseline_bursts: the steady state's own excess.
    pub baseline_bursts_mean: f64,
    /// overshoot_bursts_mean / offered: the same at every offered rate when the overshoot is
    /// proportional to traffic.
    pub overshoot_per_offered: f64,
    /// All keys' overshoot summed, in checks.
    pub overshoot_total: i64,
    /// Checks sent in the trial, and the latest a check left after its intended start (ms): a
    /// load generator that fell behind shows here.
    pub requests: u64,
    /// The latest a check left after its intended start.
    pub send_lag_max_ms: f64,
    /// Runs of the case this trial took: earlier ones ran later than one token's refill
    /// (window / burst) and were discarded (the run's notes give how late).
    pub attempts: u32,
}

/// One client of one Sentinel trial: when it learned of the promoted replica, and what its
/// checks met from the failover's start until then.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ClientRow {
    /// The Sentinel variant: `sentinel-planned` (SENTINEL FAILOVER), `sentinel-crash` (SIGKILL) or
    /// `sentinel-racing` (SIGKILL, the old primary restarted with its data once the replica is promoted).
    pub variant: Variant,
    pub strategy: Strategy,
    /// How the limiter's script is invoked: eval, evalsha, evalsha-eval, evalsha-load or fcall.
    pub invocation: Invocation,
    pub keys: u64,
    pub offered: f64,
    pub trial: u32,
    /// The client (its keys are those with key % clients == client).
    pub client: u64,
    /// The Sentinels' `down-after-milliseconds`.
    pub down_after_ms: u64,
    /// The failover's start (SENTINEL FAILOVER sent, or the primary killed) to the replica
    /// reporting role:master, ms.
    pub promoted_ms: f64,
    /// The failover's start to the client's connection to the promoted replica, ms; empty when
    /// it never decided there (a library whose client did not follow the promotion).
    pub rediscovered_ms: Option<f64>,
    /// Times the client asked the Sentinels after the failover's start.
    pub asks: u64,
    /// Checks the client sent from the failover's start to its move.
    pub checks_between: u64,
    /// Of those, the checks that got no decision (a connection error, a refusal, no primary
    /// known): what a limiter failing open would have admitted unchecked.
    pub failed: u64,
    /// Of the failed, those refused READONLY (the demoted primary).
    pub readonly: u64,
    /// The first failed check's send to the first decided check's send after it, or to the run's
    /// last answer when none came, ms (0: none failed): how long the client's keys had no limiter.
    pub unavailable_ms: f64,
    /// Active keys on this client (key % 8 == client).
    pub client_keys: u64,
    /// Mean over the client's keys of the overshoot counted as seed 003's drill counts it, its
    /// limiter failing open: (admitted + checks without a decision) over the whole windows after
    /// the switch, minus what the limit allows there, in bursts.
    pub overshoot_open_bursts: f64,
}

/// The columns that name a trial (its case and repetition), the same on every row it wrote:
/// variant, strategy, invocation, keys, offered (as bits), trial, down-after.
pub type TrialKey = (Variant, Strategy, Invocation, u64, u64, u32, u64);

/// `trial_key` on the row types that carry every column of a trial's name.
macro_rules! trial_key {
    ($($row:ty),*) => {$(
        impl $row {
            /// The trial this row belongs to.
            pub fn trial_key(&self) -> TrialKey {
                let r = self;
                let offered = r.offered.to_bits();
                (r.variant, r.strategy, r.invocation, r.keys, offered, r.trial, r.down_after_ms)
            }
        }
    )*};
}

trial_key!(BinRow, TrialRow);
