//! A redis-server process the harness owns: free loopback port, temporary directory, the
//! persistence asked for (none by default), pinned, readiness by PING, killed and reaped on drop.
//! It can be killed and started again on the same port and directory, as a crashed server
//! restarted by a supervisor; `persistence.rs` stops it gracefully instead, `replica.rs` starts
//! one as a replica of another.

use super::address::{Credentials, Endpoint};
use super::spawn::{free_cluster_port, free_port, on_free_ports, resolve_server_binary, spawn};
use super::tls::{make_certs, ServerCerts};
use super::{admin, admin_connection, cleanup, endpoint, Persistence, ServerError};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How to start a server.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// The redis-server binary (`redis-server` on PATH by default).
    pub binary: PathBuf,
    /// CPUs to pin the server to; empty for no pinning.
    pub cpus: Vec<usize>,
    /// Extra `--name value` arguments (e.g. `appendonly yes`).
    pub extra_args: Vec<(String, String)>,
    /// How long to wait for the first PING.
    pub start_timeout: Duration,
    /// What the server writes to its directory, so a graceful restart can keep data.
    pub persistence: Persistence,
    /// A Redis Cluster node: `--cluster-enabled yes`, its node table in its own directory, and a
    /// port below 55535 whose bus port (port + 10000) is free too (`cluster.rs`).
    pub cluster_node: bool,
    /// `requirepass`: clients authenticate with it (the URL carries it, masked wherever shown).
    pub password: Option<String>,
    /// TLS only, with a CA and certificates made for this server in its directory (`tls.rs`).
    pub tls: bool,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            binary: PathBuf::from("redis-server"),
            cpus: Vec::new(),
            extra_args: Vec::new(),
            start_timeout: Duration::from_secs(10),
            persistence: Persistence::None,
            cluster_node: false,
            password: None,
            tls: false,
        }
    }
}

/// A running redis-server started by the harness.
pub struct RedisServer {
    // Behind a mutex so liveness can be checked through a shared reference.
    child: Mutex<Child>,
    pid: u32,
    port: u16,
    dir: cleanup::OwnedDir,
    binary: PathBuf,
    // Kept so a restart starts the same server (pinning, extra arguments, start timeout).
    opts: ServerOptions,
    // The primary's port while this server is a replica (a restart starts it as one again);
    // behind a mutex because promotion clears it through a shared reference.
    replica_of: Mutex<Option<u16>>,
    // True once the process has been killed and waited for: its pid may belong to someone else
    // now, so it must never be signalled again.
    reaped: bool,
}

impl RedisServer {
    /// Starts a server on a free loopback port and waits until it answers PING.
    pub fn start(opts: &ServerOptions) -> Result<Self, ServerError> {
        Self::start_with(opts, None)
    }

    /// Starts a server, as a replica of the primary on `replica_of` when given.
    pub(super) fn start_with(
        opts: &ServerOptions,
        replica_of: Option<u16>,
    ) -> Result<Self, ServerError> {
        let binary = resolve_server_binary(&opts.binary)?;
        on_free_ports(|| {
            let port = match opts.cluster_node {
                true => free_cluster_port()?,
                false => free_port()?,
            };
            Self::start_on(&binary, port, opts, replica_of)
        })
    }

    fn start_on(
        binary: &Path,
        port: u16,
        opts: &ServerOptions,
        replica_of: Option<u16>,
    ) -> Result<Self, ServerError> {
        let dir = cleanup::OwnedDir::new("ratelab-redis-").map_err(ServerError::TempDir)?;
        let certs = opts.tls.then(|| make_certs(dir.path())).transpose()?;
        let child = spawn(binary, port, dir.path(), opts, certs.as_ref(), replica_of)?;
        let server = RedisServer {
            pid: child.id(),
            child: Mutex::new(child),
            port,
            dir,
            binary: binary.to_path_buf(),
            opts: opts.clone(),
            replica_of: Mutex::new(replica_of),
            reaped: false,
        };
        server.wait_ready(opts.start_timeout)?;
        Ok(server)
    }

    /// Continues (in case it was stopped), kills and reaps the process; the port and directory
    /// stay reserved for `restart`. Killing a server already reaped is a no-op.
    pub fn kill(&mut self) -> Result<Option<ExitStatus>, ServerError> {
        if self.reaped {
            return Ok(None);
        }
        // Ignored: the process may already have died on its own (then kill fails with ESRCH).
        let _ = self.signal(libc::SIGCONT);
        let child = self.child.get_mut().unwrap_or_else(|p| p.into_inner());
        let _ = child.kill();
        let status = child.wait()?;
        self.reaped = true;
        cleanup::unregister(self.pid);
        Ok(Some(status))
    }

    /// Starts a fresh process on the same port and directory (what clients see after a crash and
    /// a restart: the same address, an empty script cache, and only what persistence left on disk:
    /// the AOF, or the RDB of an earlier graceful restart) and waits until it answers PING. A
    /// still-running process is killed and reaped first.
    pub fn restart(&mut self) -> Result<(), ServerError> {
        self.start_again()?;
        self.wait_ready(self.opts.start_timeout)
    }

    /// Starts the server's process again on its port and directory (killing a running one
    /// first) and returns at once, without waiting for it to answer: a caller measuring what
    /// clients meet while it comes back (an auto-recovery racing a failover) must not stop its
    /// own clock for it.
    pub fn start_again(&mut self) -> Result<(), ServerError> {
        self.kill()?;
        let replica_of = *self.replica_of();
        let child = spawn(
            &self.binary,
            self.port,
            self.dir.path(),
            &self.opts,
            self.certs().as_ref(),
            replica_of,
        )?;
        self.pid = child.id();
        *self.child.get_mut().unwrap_or_else(|p| p.into_inner()) = child;
        self.reaped = false;
        Ok(())
    }

    /// Waits up to `timeout` for the process to exit on its own, then reaps it; on timeout it is
    /// left running (the caller decides) and the error carries the log tail.
    pub(super) fn wait_exit(&mut self, timeout: Duration) -> Result<ExitStatus, ServerError> {
        let started = Instant::now();
        loop {
            let exited = self.child().try_wait()?;
            if let Some(status) = exited {
                self.reaped = true;
                cleanup::unregister(self.pid);
                return Ok(status);
            }
            if started.elapsed() > timeout {
                return Err(ServerError::DidNotExit {
                    pid: self.pid,
                    port: self.port,
                    waited: timeout,
                    log_tail: self.log_tail(20),
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// True once the process has been reaped (killed, or stopped by SHUTDOWN and waited for).
    pub(super) fn is_reaped(&self) -> bool {
        self.reaped
    }

    /// The options it was started with.
    pub fn options(&self) -> &ServerOptions {
        &self.opts
    }

    /// The primary's port while this server is a replica.
    pub(super) fn replica_of(&self) -> MutexGuard<'_, Option<u16>> {
        self.replica_of
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn child(&self) -> MutexGuard<'_, Child> {
        self.child
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn wait_ready(&self, timeout: Duration) -> Result<(), ServerError> {
        let started = Instant::now();
        loop {
            let exited = self.child().try_wait()?;
            if let Some(status) = exited {
                return Err(ServerError::ExitedAtStart {
                    status: status.to_string(),
                    log_tail: self.log_tail(20),
                });
            }
            // A server loading its RDB or AOF answers PING with -LOADING; `loading:0` is checked
            // too so readiness never depends on that.
            if self.ping().is_ok() && self.loaded() {
                return Ok(());
            }
            if started.elapsed() > timeout {
                return Err(ServerError::NotReady {
                    port: self.port,
                    waited: timeout,
                    log_tail: self.log_tail(20),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn ping(&self) -> Result<(), ServerError> {
        let client = endpoint::client(&self.url())?;
        let mut con = client.get_connection_with_timeout(Duration::from_millis(200))?;
        con.set_read_timeout(Some(Duration::from_millis(200)))?;
        redis::cmd("PING").query::<String>(&mut con)?;
        Ok(())
    }

    fn loaded(&self) -> bool {
        if self.opts.persistence == Persistence::None {
            return true;
        }
        let Ok(mut con) = self.connection() else {
            return false;
        };
        admin::info(&mut con, "persistence").is_ok_and(|info| info.get("loading") == Some("0"))
    }

    /// What a client needs to reach this server: loopback and its port, its password, its CA and
    /// client certificate when it runs TLS.
    pub fn endpoint(&self) -> Endpoint {
        let mut endpoint = Endpoint::loopback(self.port);
        endpoint.credentials = (self.opts.password.clone()).map(|password| Credentials {
            username: String::new(),
            password: Some(password),
        });
        endpoint.tls = self.certs().map(|certs| certs.client_files());
        endpoint
    }

    /// The URL of this server (see [`Endpoint::url`]), for a worker's arguments or a tool.
    pub fn url(&self) -> String {
        self.endpoint().url()
    }

    /// Its CA and certificates (in its directory, kept across restarts), when it runs TLS.
    pub fn certs(&self) -> Option<ServerCerts> {
        self.opts.tls.then(|| ServerCerts::in_dir(self.dir.path()))
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its process id (for signals).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The binary it was started from.
    pub fn binary(&self) -> &Path {
        &self.binary
    }

    /// A blocking admin connection with explicit timeouts.
    pub fn connection(&self) -> Result<redis::Connection, ServerError> {
        admin_connection(&self.url())
    }

    /// The last `lines` lines of the server's log, for error messages.
    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.dir.path().join("redis.log"), lines)
    }

    /// Fails with the log tail if the process has exited.
    pub fn check_alive(&self) -> Result<(), ServerError> {
        let exited = self.child().try_wait()?;
        match exited {
            None => Ok(()),
            Some(status) => Err(ServerError::Crashed {
                pid: self.pid,
                port: self.port,
                status: status.to_string(),
                log_tail: self.log_tail(20),
            }),
        }
    }

    /// Sends a signal (STOP, CONT, KILL) to the server process.
    pub fn signal(&self, signal: i32) -> Result<(), ServerError> {
        if self.reaped {
            let what = format!("redis-server on port {} is not running", self.port);
            return Err(std::io::Error::new(std::io::ErrorKind::NotFound, what).into());
        }
        // SAFETY: kill(2) on our own child's pid, not yet reaped, so not reused by another process.
        if unsafe { libc::kill(self.pid as i32, signal) } == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error().into())
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        // A SIGSTOPped server must not be left behind: `kill` continues it, then kills it.
        let _ = self.kill();
    }
}

/// The last `lines` lines of a server's (or Sentinel's) log file, or where it was looked for.
pub(super) fn log_tail(path: &Path, lines: usize) -> String {
    let Ok(file) = std::fs::File::open(path) else {
        return format!("(no log at {})", path.display());
    };
    let all: Vec<String> = BufReader::new(file).lines().map_while(Result::ok).collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
