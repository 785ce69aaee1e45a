//! What breaks Redis on purpose, each with a record of when it happened on the monotonic clock,
//! and a guard so a stopped server can never outlive the code that stopped it.
//!
//! Two outages look nothing alike to a client (seed 000): a killed server closes its sockets and
//! refuses new ones, so every check fails at once; a SIGSTOPped one is frozen while the kernel keeps
//! its TCP connections open and even completes new handshakes, so every check waits its full budget.
//!
//! `proxy`: a loopback TCP proxy between clients and Redis that blackholes, refuses, delays,
//! resets and heals at run time (seed 003's drills); `ProxyThread` runs one beside synchronous code.

mod background;
pub mod proxy;

pub use background::ProxyThread;
pub use proxy::{Direction, Fault, Proxy, Switch};

use crate::server::{RedisServer, ServerError};
use std::time::{Duration, Instant};

/// How long a signal may take to show in /proc before it counts as not delivered.
const SIGNAL_WAIT: Duration = Duration::from_secs(2);

/// The server, frozen by SIGSTOP; dropping this (error, panic, early return) sends SIGCONT.
#[must_use = "dropping the guard continues the server at once"]
pub struct Suspended<'a> {
    server: &'a RedisServer,
    /// When SIGSTOP was sent.
    pub at: Instant,
    resumed: bool,
}

impl<'a> Suspended<'a> {
    /// Continues the server (SIGCONT) and returns once it is running again.
    pub fn resume(mut self) -> Result<Instant, ServerError> {
        self.resumed = true;
        self.server.signal(libc::SIGCONT)?;
        wait_until(self.server.pid(), false)?;
        Ok(Instant::now())
    }
}

impl Drop for Suspended<'_> {
    fn drop(&mut self) {
        if !self.resumed {
            // Nothing to report to: the caller is already unwinding or returning an error.
            let _ = self.server.signal(libc::SIGCONT);
        }
    }
}

/// Freezes the server (SIGSTOP): the hung case.
pub fn suspend(server: &RedisServer) -> Result<Suspended<'_>, ServerError> {
    // The guard exists before the signal is sent, so even a failure in between continues it.
    let mut guard = Suspended {
        server,
        at: Instant::now(),
        resumed: false,
    };
    server.signal(libc::SIGSTOP)?;
    // Signals are delivered asynchronously: the hang starts when the kernel says it is stopped.
    wait_until(server.pid(), true)?;
    guard.at = Instant::now();
    Ok(guard)
}

/// Polls /proc until `pid` is (or is no longer) stopped.
fn wait_until(pid: u32, stopped: bool) -> Result<(), ServerError> {
    let start = Instant::now();
    while is_stopped(pid) != stopped {
        if start.elapsed() > SIGNAL_WAIT {
            let what = format!(
                "redis-server {pid} did not {} within {SIGNAL_WAIT:?}",
                if stopped { "stop" } else { "continue" }
            );
            return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, what).into());
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(())
}

/// Kills the server (SIGKILL) and reaps it: the dead case. Returns when it was gone.
pub fn kill(server: &mut RedisServer) -> Result<Instant, ServerError> {
    server.kill()?;
    Ok(Instant::now())
}

/// Starts the server again on the same port; returns when it answered PING, the earliest moment
/// a client could get an answer.
pub fn restart(server: &mut RedisServer) -> Result<Instant, ServerError> {
    server.restart()?;
    Ok(Instant::now())
}

/// Whether process `pid` is stopped (state T in /proc), so tests can prove none is left stopped.
pub fn is_stopped(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let after = stat.rsplit_once(')')?.1.to_string();
            after.split_whitespace().next().map(|s| s == "T")
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_process_is_not_stopped() {
        assert!(!is_stopped(std::process::id()));
        assert!(!is_stopped(u32::MAX), "a missing process is not stopped");
    }
}
