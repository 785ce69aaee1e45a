//! memory's CSV schema.

use crate::limiter::Strategy;
use crate::record::CsvFile;
use serde::{Deserialize, Serialize};

/// `memory.csv`: One row per fill.
pub const MEMORY: CsvFile<MemoryRow> = CsvFile::new("memory.csv");

/// One fill: `clients` clients of one strategy, each at its limit.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MemoryRow {
    pub strategy: Strategy,
    pub limit: u64,
    pub clients: u64,
    /// zset-max-listpack-entries in effect (read back from the server).
    pub listpack_entries: u64,
    /// `default` (the server's own) or `set` (CONFIG SET by this run).
    pub listpack_setting: String,
    /// limit - listpack_entries: 0 is the biggest listpack log, 1 the first skiplist.
    pub over_threshold: i64,
    pub repeat: u32,
    /// Growth of used_memory divided by clients.
    pub bytes_per_client: f64,
    /// bytes_per_client / limit: what each admitted request in the window costs.
    pub bytes_per_entry: f64,
    /// bytes_per_client x 10,000, in MB (10^6 bytes): the seed's "10,000 busy clients".
    pub mb_per_10k_clients: f64,
    /// INFO memory used_memory before the fill, bytes.
    pub used_memory_before: u64,
    /// used_memory after it, bytes.
    pub used_memory_after: u64,
    /// Keys in the database after the fill (one per client).
    pub keys: u64,
    /// MEMORY USAGE <client 0's state key> SAMPLES 0.
    pub sample_key_bytes: u64,
    /// OBJECT ENCODING of that key.
    pub encoding: String,
    /// 1 when that key is a listpack (for judging where the cliff is).
    pub listpack: u8,
    /// Mean length of the log's members in bytes (0 for strategies without a log).
    pub member_len: f64,
    /// Members made this long by the member-length sweep; 0: ratelab's short unique id.
    pub member_bytes: u32,
    /// Client keys padded to this length by the key-length sweep; 0: as ratelab builds them.
    pub key_len: u64,
    /// Length of client 0's key name in bytes.
    pub key_name_bytes: u64,
    /// What client 0's key holds (log entries, tokens, count).
    pub sample_state: String,
    pub decisions: u64,
    pub denied: u64,
    /// Redis main-thread CPU per decision during the fill.
    pub cpu_us_per_decision: f64,
    pub decisions_per_s: f64,
    /// How long the fill took (0 for rows derived without one).
    pub fill_s: f64,
}

impl MemoryRow {
    /// A fill of the member- or key-length sweep rather than of ratelab's own members and keys.
    pub fn is_sweep(&self) -> bool {
        self.member_bytes != 0 || self.key_len != 0
    }
}
