//! The sliding logs of an `L=<limit>` variant: filled to their limit before each run, so the run
//! measures logs that hold `limit` entries (what seed 002 compares), and counted after it.

use crate::experiments::PhaseError;
use crate::load::KeyChoice;

/// Redis's clock in Unix ms (TIME).
fn redis_ms(con: &mut redis::Connection) -> Result<u64, PhaseError> {
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query(con)?;
    Ok(secs * 1000 + micros / 1000)
}

/// Members per ZADD, and members per pipelined round trip.
const ZADD_BATCH: u64 = 1000;
const PIPELINE_MEMBERS: u64 = 10_000;

/// One variant's logs: keys `prefix` + index (as `KeyChoice::Uniform` names them), `limit` each.
pub(super) struct Logs<'a> {
    pub prefix: &'a str,
    pub keys: u64,
    pub limit: u64,
    pub window_ms: u64,
    /// Members are `<12 hex digits>-<counter in hex>`, the limiter's own format and length.
    pub member_prefix: u64,
}

impl Logs<'_> {
    fn key(&self, index: u64) -> String {
        KeyChoice::indexed(self.prefix, index)
    }

    /// Replaces every log with `limit` entries scored evenly over the window before now (Redis's
    /// clock, which the script reads) and the expiry the script sets: the steady state of a client
    /// at its limit, whose oldest entries leave the window as fast as new ones may be admitted.
    /// `now` is read again for each round trip, so a long fill leaves no backlog of admissions.
    pub(super) fn fill(&self, con: &mut redis::Connection) -> Result<(), PhaseError> {
        self.delete(con)?;
        let step = self.window_ms as f64 / self.limit.max(1) as f64;
        let mut pipe = redis::pipe();
        let (mut queued, mut oldest) = (0, 0);
        for k in 0..self.keys {
            if queued == 0 {
                oldest = redis_ms(con)?.saturating_sub(self.window_ms);
            }
            let key = self.key(k);
            let mut n = 0;
            while n < self.limit {
                let end = (n + ZADD_BATCH).min(self.limit);
                let mut zadd = redis::cmd("ZADD");
                zadd.arg(&key);
                for i in n..end {
                    let score = oldest + ((i + 1) as f64 * step) as u64;
                    zadd.arg(score)
                        .arg(format!("{:012x}-{i:x}", self.member_prefix));
                }
                pipe.add_command(zadd).ignore();
                queued += end - n;
                n = end;
            }
            pipe.cmd("PEXPIRE").arg(&key).arg(self.window_ms).ignore();
            if queued >= PIPELINE_MEMBERS || k + 1 == self.keys {
                pipe.query::<()>(con)?;
                pipe.clear();
                queued = 0;
            }
        }
        Ok(())
    }

    /// Mean and smallest number of entries the logs hold (ZCARD).
    pub(super) fn held(&self, con: &mut redis::Connection) -> Result<(f64, u64), PhaseError> {
        let mut pipe = redis::pipe();
        for k in 0..self.keys {
            pipe.cmd("ZCARD").arg(self.key(k));
        }
        let cards: Vec<u64> = pipe.query(con)?;
        let min = cards.iter().copied().min().unwrap_or(0);
        let mean = cards.iter().sum::<u64>() as f64 / cards.len().max(1) as f64;
        Ok((mean, min))
    }

    /// Deletes the logs (synchronously: freeing them in the background would compete with the
    /// next measured run for Redis's core).
    pub(super) fn delete(&self, con: &mut redis::Connection) -> Result<(), PhaseError> {
        let keys: Vec<String> = (0..self.keys).map(|k| self.key(k)).collect();
        for chunk in keys.chunks(1000) {
            redis::cmd("DEL").arg(chunk).query::<u64>(con)?;
        }
        Ok(())
    }
}
