//! What a managed server writes to its directory, and a graceful restart that keeps it, so what
//! survives a restart (keys, functions; never the script cache) is measured rather than assumed.

use super::{admin, RedisServer, ServerError};
use std::time::{Duration, Instant};

/// What a managed server persists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Persistence {
    /// No RDB, no AOF: a restart starts empty.
    #[default]
    None,
    /// An RDB written only by `SHUTDOWN SAVE` (no periodic snapshots that would load the server
    /// mid-measurement).
    Rdb,
    /// `appendonly yes` with `appendfsync always`: every write is on disk before its reply.
    Aof,
}

impl Persistence {
    /// The redis-server arguments that set it up.
    pub(super) fn server_args(self) -> &'static [&'static str] {
        match self {
            Persistence::None | Persistence::Rdb => &["--save", "", "--appendonly", "no"],
            Persistence::Aof => &[
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
            ],
        }
    }

    /// The SHUTDOWN arguments of a graceful stop that keeps (or, for None, drops) the data.
    fn shutdown_args(self) -> &'static [&'static str] {
        match self {
            Persistence::None => &["NOSAVE"],
            Persistence::Rdb => &["SAVE"],
            // SHUTDOWN itself flushes and fsyncs the AOF; with `save ""` it writes no RDB.
            Persistence::Aof => &[],
        }
    }
}

/// How long a graceful SHUTDOWN may take (it writes the RDB first) before it counts as hung.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

impl RedisServer {
    /// Stops the server gracefully (`SHUTDOWN SAVE` for Rdb; `SHUTDOWN` once the AOF is fsynced
    /// for Aof; `SHUTDOWN NOSAVE` for None), reaps it, then starts the same binary on the same
    /// port and directory with the same options, ready by PING and `loading:0`. A server that
    /// does not exit is killed, and the error carries its log tail.
    pub fn restart_keeping_data(&mut self) -> Result<(), ServerError> {
        if !self.is_reaped() {
            let persistence = self.options().persistence;
            if persistence == Persistence::Aof {
                self.wait_aof_synced(SHUTDOWN_TIMEOUT)?;
            }
            self.shutdown(persistence.shutdown_args())?;
            if let Err(hung) = self.wait_exit(SHUTDOWN_TIMEOUT) {
                self.kill()?;
                return Err(hung);
            }
        }
        self.restart()
    }

    /// Sends SHUTDOWN; a refusal (e.g. the RDB could not be written) is an error, while the
    /// connection closing is the expected answer.
    fn shutdown(&self, args: &[&str]) -> Result<(), ServerError> {
        // A stopped server could not act on it.
        self.signal(libc::SIGCONT)?;
        let mut con = self.connection()?;
        match redis::cmd("SHUTDOWN").arg(args).query::<()>(&mut con) {
            Err(err) if err.code().is_some() => Err(ServerError::ShutdownRefused {
                port: self.port(),
                reply: err.to_string(),
                log_tail: self.log_tail(20),
            }),
            _ => Ok(()),
        }
    }

    /// Waits until nothing written is still waiting for the disk: no rewrite running or
    /// scheduled, the AOF buffer empty, no background fsync pending and the last write ok.
    fn wait_aof_synced(&self, timeout: Duration) -> Result<(), ServerError> {
        const SETTLED: &[(&str, &str)] = &[
            ("aof_enabled", "1"),
            ("aof_rewrite_in_progress", "0"),
            ("aof_rewrite_scheduled", "0"),
            ("aof_buffer_length", "0"),
            ("aof_pending_bio_fsync", "0"),
            ("aof_last_write_status", "ok"),
        ];
        let mut con = self.connection()?;
        let started = Instant::now();
        loop {
            let info = admin::info(&mut con, "persistence")?;
            let unsettled: Vec<String> = SETTLED
                .iter()
                .filter(|(field, want)| info.get(field) != Some(*want))
                .map(|(field, _)| format!("{field}:{}", info.get(field).unwrap_or("?")))
                .collect();
            if unsettled.is_empty() {
                return Ok(());
            }
            if started.elapsed() > timeout {
                return Err(ServerError::AofNotSynced {
                    port: self.port(),
                    waited: timeout,
                    unsettled: unsettled.join(", "),
                    log_tail: self.log_tail(20),
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
