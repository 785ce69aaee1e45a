//! What Redis itself counted while a limiter decided: its `INFO stats commandstats`, read on a
//! connection of the test's own before and after, so no limiter can report its own cost.

use super::sync_con;
use ratelab::limiter::{Decision, Limiter};
use ratelab::server::{command_stats, Info, RedisServer};
use std::collections::BTreeMap;

/// Redis's counters between two snapshots, less the snapshots' own INFO.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Wire {
    /// Calls per command, lower-case as INFO names them: each command a script ran and each one
    /// inside MULTI/EXEC counts, a command that failed (NOSCRIPT) too.
    pub commands: BTreeMap<String, u64>,
    /// Socket reads Redis made (`total_reads_processed`): one per request a client wrote, so one
    /// per round trip of a client that waits for each reply (a MULTI..EXEC pipeline is one).
    pub reads: u64,
}

impl Wire {
    /// Calls of `command`, 0 if Redis never ran it.
    pub fn calls(&self, command: &str) -> u64 {
        self.commands.get(command).copied().unwrap_or(0)
    }
}

/// One snapshot: calls per command and reads so far.
struct Counters {
    calls: BTreeMap<String, u64>,
    reads: u64,
}

impl Counters {
    fn read(con: &mut redis::Connection) -> Counters {
        let text: String = redis::cmd("INFO")
            .arg("stats")
            .arg("commandstats")
            .query(con)
            .expect("INFO answers");
        let info = Info::parse(&text);
        let calls = (command_stats(&info).into_iter())
            .map(|(name, (calls, _))| (name, calls))
            .collect();
        let reads = info.get_f64("total_reads_processed").expect("Redis >= 6.0") as u64;
        Counters { calls, reads }
    }

    /// What happened between this snapshot and `later`. An INFO is counted once it has run, so
    /// `later` holds the earlier snapshot's INFO (dropped by name) and its own read (taken off).
    fn until(&self, later: &Counters) -> Wire {
        let commands = (later.calls.iter())
            .filter(|(name, _)| name.as_str() != "info")
            .map(|(name, &calls)| {
                (
                    name.clone(),
                    calls - self.calls.get(name).copied().unwrap_or(0),
                )
            })
            .filter(|&(_, calls)| calls > 0)
            .collect();
        Wire {
            commands,
            reads: later.reads - self.reads - 1,
        }
    }
}

/// Makes `checks` checks of `key` one at a time on one connection, and returns each decision
/// with what Redis counted while it was made.
pub fn decide_on_the_wire(
    server: &RedisServer,
    limiter: &Limiter,
    key: &str,
    checks: u64,
) -> Vec<(Decision, Wire)> {
    let mut counters = sync_con(server);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = redis::Client::open(server.url()).unwrap();
        let mut con = client.get_multiplexed_async_connection().await.unwrap();
        let mut out = Vec::new();
        for _ in 0..checks {
            let before = Counters::read(&mut counters);
            let decision = limiter.check(&mut con, key).await.expect("check succeeds");
            out.push((decision, before.until(&Counters::read(&mut counters))));
        }
        out
    })
}

/// What Redis counted while `run` ran, snapshots taken on a connection of their own: for loads
/// too concurrent to pin on one decision. Reads then include connecting and disconnecting.
pub fn on_the_wire<T>(server: &RedisServer, run: impl FnOnce() -> T) -> (T, Wire) {
    let mut counters = sync_con(server);
    let before = Counters::read(&mut counters);
    let out = run();
    (out, before.until(&Counters::read(&mut counters)))
}
