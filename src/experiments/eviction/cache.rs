//! The cache data that pushes the store past maxmemory, and the survivor count afterwards.

use super::Params;
use redis::{Connection, RedisResult, Value};

/// Commands per pipeline: large enough to write quickly, small enough that eviction between
/// commands sees the keyspace as it grows.
const BATCH: usize = 100;
/// Single writes after the bulk, at most.
const TOP_UP: u64 = 1000;

/// What the cache writes left.
pub(super) struct Written {
    pub ttl_keys: Vec<String>,
    pub plain_keys: Vec<String>,
    pub bytes: u64,
    pub errors: u64,
    pub first_error: String,
}

impl Written {
    /// Adds cache key `i` to `cmd` (a SET), with an expiry for a `cache_ttl_fraction` share
    /// spread evenly: key i has one when the running share crosses an integer.
    fn add(&mut self, cmd: &mut redis::Cmd, prefix: &str, i: u64, value: &[u8], p: &Params) {
        let share = p.cache_ttl_fraction;
        if ((i + 1) as f64 * share).floor() > (i as f64 * share).floor() {
            let key = format!("{prefix}cache:ttl:{i}");
            cmd.arg(&key).arg(value).arg("EX").arg(p.cache_ttl_s);
            self.ttl_keys.push(key);
        } else {
            let key = format!("{prefix}cache:plain:{i}");
            cmd.arg(&key).arg(value);
            self.plain_keys.push(key);
        }
        self.bytes += value.len() as u64;
    }

    /// Counts a refused write (keeping the first refusal's text); true when it was refused.
    fn count(&mut self, reply: RedisResult<Value>) -> bool {
        let Err(e) = reply else { return false };
        if self.errors == 0 {
            self.first_error = e.to_string();
        }
        self.errors += 1;
        true
    }
}

/// Writes `pressure` x headroom bytes of cache values under `prefix` on `con` (whichever server
/// and database it is on): every key with a `cache_ttl_fraction` share (spread evenly) with an
/// expiry of `cache_ttl_s`. Refused writes (OOM) are counted, never fatal: they are the finding.
pub(super) fn fill(con: &mut Connection, prefix: &str, p: &Params) -> RedisResult<Written> {
    let count = (p.pressure * p.headroom_bytes as f64 / p.value_bytes as f64).ceil() as u64;
    let value = vec![b'c'; p.value_bytes];
    let mut out = Written {
        ttl_keys: Vec::new(),
        plain_keys: Vec::new(),
        bytes: 0,
        errors: 0,
        first_error: String::new(),
    };
    let indices: Vec<u64> = (0..count).collect();
    for batch in indices.chunks(BATCH) {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for &i in batch {
            let mut cmd = redis::cmd("SET");
            out.add(&mut cmd, prefix, i, &value, p);
            pipe.add_command(cmd);
        }
        let replies: Vec<RedisResult<Value>> = pipe.query(con)?;
        for reply in replies {
            out.count(reply);
        }
    }
    // A pipeline's own query buffer counts as used memory while Redis reads it, so a bulk writer
    // is refused near the limit and the server then sits just under it. A cache keeps writing:
    // single writes go on until one is refused (a full noeviction store) or TOP_UP have passed.
    for i in count..count + TOP_UP {
        let mut cmd = redis::cmd("SET");
        out.add(&mut cmd, prefix, i, &value, p);
        if out.count(cmd.query::<Value>(con)) {
            break;
        }
    }
    Ok(out)
}

/// Whether each key exists, in order.
pub(super) fn exists(con: &mut Connection, keys: &[String]) -> RedisResult<Vec<bool>> {
    let mut out = Vec::with_capacity(keys.len());
    for batch in keys.chunks(1000) {
        let mut pipe = redis::pipe();
        for key in batch {
            pipe.cmd("EXISTS").arg(key);
        }
        let found: Vec<u8> = pipe.query(con)?;
        out.extend(found.into_iter().map(|n| n > 0));
    }
    Ok(out)
}

/// How many of `keys` exist.
pub(super) fn count_existing(con: &mut Connection, keys: &[String]) -> RedisResult<u64> {
    Ok(exists(con, keys)?.into_iter().filter(|&e| e).count() as u64)
}
