//! Redis Sentinels watching a managed primary, as seed 003's drill runs failover: each Sentinel is
//! the same redis-server binary started with `--sentinel` on a free loopback port, with the config
//! file ratelab writes in its own temporary directory (a Sentinel rewrites its file as it learns,
//! so the file stays there), registered for cleanup like every server and killed on drop.
//! Ready once every Sentinel reports the primary as a master with all its replicas and every other
//! Sentinel: before that a failover would be decided by fewer Sentinels than configured. Each
//! config names the Sentinel's own id and its peers (`known-sentinel`, as a Sentinel rewrites its
//! file once it has met them), so they agree at once instead of after the 2 s hello messages.

use super::spawn::{free_port, on_free_ports, resolve_server_binary, spawn_owned};
use super::{admin_connection, cleanup, RedisServer, ServerError};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// The name every Sentinel knows the primary by (`sentinel monitor <name> ...`).
pub const SERVICE_NAME: &str = "ratelab";

/// How to start the Sentinels.
#[derive(Debug, Clone)]
pub struct SentinelOptions {
    /// The redis-server binary (started with `--sentinel`).
    pub binary: PathBuf,
    /// How many Sentinels (seed 003's drill assumes the usual three).
    pub count: usize,
    /// Sentinels that must agree the primary is down before a failover starts.
    pub quorum: usize,
    /// `down-after-milliseconds`: how long the primary must be unreachable to be called down.
    pub down_after: Duration,
    /// `failover-timeout`: also how long a Sentinel waits before retrying a failed failover.
    pub failover_timeout: Duration,
    /// How long to wait for every Sentinel to see the primary, its replicas and each other.
    pub start_timeout: Duration,
    /// CPUs to pin the Sentinels to; empty for no pinning.
    pub cpus: Vec<usize>,
}

impl Default for SentinelOptions {
    fn default() -> Self {
        SentinelOptions {
            binary: PathBuf::from("redis-server"),
            count: 3,
            quorum: 2,
            down_after: Duration::from_millis(1000),
            failover_timeout: Duration::from_millis(10_000),
            // Sentinels find each other through hello messages sent every 2 s on the primary.
            start_timeout: Duration::from_secs(20),
            cpus: Vec::new(),
        }
    }
}

/// A Sentinel's address and run id, known before any starts so each config can name its peers.
#[derive(Debug, Clone)]
struct Peer {
    port: u16,
    id: String,
}

impl Peer {
    /// A free port and a run id (40 hex digits) unique to this process, instant and index.
    fn pick(index: usize) -> Result<Peer, ServerError> {
        let port = free_port()?;
        let nanos = (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH))
            .map_or(0, |d| d.as_nanos());
        let id = format!(
            "{:08x}{:032x}",
            std::process::id(),
            nanos ^ ((index as u128) << 100)
        );
        Ok(Peer { port, id })
    }
}

/// One Sentinel process.
struct Sentinel {
    child: Child,
    port: u16,
    dir: cleanup::OwnedDir,
}

impl Sentinel {
    fn start(
        binary: &Path,
        primary: &RedisServer,
        opts: &SentinelOptions,
        (me, peers): (&Peer, &[Peer]),
    ) -> Result<Self, ServerError> {
        let dir = cleanup::OwnedDir::new("ratelab-sentinel-").map_err(ServerError::TempDir)?;
        let port = me.port;
        let conf = dir.path().join("sentinel.conf");
        let mut text = config(port, dir.path(), primary, opts);
        text.push_str(&format!("sentinel myid {}\n", me.id));
        for peer in peers.iter().filter(|p| p.id != me.id) {
            text.push_str(&format!(
                "sentinel known-sentinel {SERVICE_NAME} 127.0.0.1 {} {}\n",
                peer.port, peer.id
            ));
        }
        std::fs::write(&conf, text)?;
        let mut cmd = Command::new(binary);
        cmd.arg(&conf).arg("--sentinel");
        let child = spawn_owned(cmd, binary, &opts.cpus)?;
        Ok(Sentinel { child, port, dir })
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn log_tail(&self, lines: usize) -> String {
        super::managed::log_tail(&self.dir.path().join("sentinel.log"), lines)
    }

    /// What this Sentinel knows of the primary (`SENTINEL MASTER`), or why it could not say.
    fn master_state(&self) -> Result<HashMap<String, String>, ServerError> {
        let mut con = admin_connection(&self.url())?;
        Ok(redis::cmd("SENTINEL")
            .arg("MASTER")
            .arg(SERVICE_NAME)
            .query(&mut con)?)
    }

    /// What this Sentinel knows of the primary's replicas (`SENTINEL REPLICAS`).
    fn replica_states(&self) -> Result<Vec<HashMap<String, String>>, ServerError> {
        let mut con = admin_connection(&self.url())?;
        Ok(redis::cmd("SENTINEL")
            .arg("REPLICAS")
            .arg(SERVICE_NAME)
            .query(&mut con)?)
    }

    fn exited(&mut self) -> Result<Option<String>, ServerError> {
        Ok(self.child.try_wait()?.map(|status| status.to_string()))
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        // Ignored: it may have exited on its own; either way it is reaped here.
        let _ = self.child.kill();
        let _ = self.child.wait();
        cleanup::unregister(self.child.id());
    }
}

/// The config file a Sentinel starts from (it rewrites it as it learns replicas and peers).
fn config(port: u16, dir: &Path, primary: &RedisServer, opts: &SentinelOptions) -> String {
    let name = SERVICE_NAME;
    let mut text = format!(
        "port {port}\nbind 127.0.0.1\ndaemonize no\ndir {dir}\nlogfile {log}\n\
         sentinel monitor {name} 127.0.0.1 {primary} {quorum}\n\
         sentinel down-after-milliseconds {name} {down}\n\
         sentinel failover-timeout {name} {failover}\n\
         sentinel parallel-syncs {name} 1\n",
        dir = dir.display(),
        log = dir.join("sentinel.log").display(),
        primary = primary.port(),
        quorum = opts.quorum,
        down = opts.down_after.as_millis(),
        failover = opts.failover_timeout.as_millis(),
    );
    if let Some(password) = &primary.options().password {
        text.push_str(&format!("sentinel auth-pass {name} {password}\n"));
    }
    text
}

/// Sentinels watching one managed primary and its replicas; all stopped on drop.
pub struct RedisSentinels {
    sentinels: Vec<Sentinel>,
}

impl RedisSentinels {
    /// Starts `opts.count` Sentinels monitoring `primary`, ready once each reports it as a master
    /// with `replicas` replicas and every other Sentinel.
    pub fn start(
        primary: &RedisServer,
        replicas: usize,
        opts: &SentinelOptions,
    ) -> Result<Self, ServerError> {
        if primary.options().tls {
            return Err(ServerError::Unsupported(
                "Sentinels over TLS: ratelab starts its Sentinels without TLS".into(),
            ));
        }
        if opts.quorum == 0 || opts.quorum > opts.count {
            return Err(ServerError::Unsupported(format!(
                "a quorum of {} among {} Sentinels",
                opts.quorum, opts.count
            )));
        }
        let binary = resolve_server_binary(&opts.binary)?;
        // A lost port: the Sentinels already started stop as the attempt's set drops.
        on_free_ports(|| Self::start_on_free_ports(&binary, primary, replicas, opts))
    }

    /// One attempt of [`RedisSentinels::start`]: ports picked, every Sentinel started, agreed.
    fn start_on_free_ports(
        binary: &Path,
        primary: &RedisServer,
        replicas: usize,
        opts: &SentinelOptions,
    ) -> Result<Self, ServerError> {
        let mut started = RedisSentinels {
            sentinels: Vec::new(),
        };
        let peers = (0..opts.count)
            .map(Peer::pick)
            .collect::<Result<Vec<_>, _>>()?;
        for me in &peers {
            let sentinel = Sentinel::start(binary, primary, opts, (me, &peers))?;
            started.sentinels.push(sentinel);
        }
        started.wait_agreed(replicas, opts.start_timeout)?;
        Ok(started)
    }

    /// Waits until every Sentinel sees the primary as a master, `replicas` replicas and the others.
    fn wait_agreed(&mut self, replicas: usize, timeout: Duration) -> Result<(), ServerError> {
        let started = Instant::now();
        let peers = self.sentinels.len() - 1;
        loop {
            self.check_alive()?;
            let states: Vec<String> = self
                .sentinels
                .iter()
                .map(|s| seen(s, replicas, peers))
                .collect();
            if states.iter().all(String::is_empty) {
                return Ok(());
            }
            if started.elapsed() > timeout {
                return Err(ServerError::SentinelsNotReady {
                    waited: timeout,
                    states: states.join("; "),
                    log_tails: self.log_tails(),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The Sentinels' process ids (for signals, and for tests that check they are gone).
    pub fn pids(&self) -> Vec<u32> {
        self.sentinels.iter().map(|s| s.child.id()).collect()
    }

    /// The loopback ports the Sentinels listen on.
    pub fn ports(&self) -> Vec<u16> {
        self.sentinels.iter().map(|s| s.port).collect()
    }

    /// Where the Sentinels say the primary is now (`SENTINEL GET-MASTER-ADDR-BY-NAME`), from the
    /// first that answers.
    pub fn primary_port(&self) -> Result<u16, ServerError> {
        let mut last = None;
        for sentinel in &self.sentinels {
            let asked = admin_connection(&sentinel.url()).and_then(|mut con| {
                let (_host, port): (String, u16) = redis::cmd("SENTINEL")
                    .arg("GET-MASTER-ADDR-BY-NAME")
                    .arg(SERVICE_NAME)
                    .query(&mut con)?;
                Ok(port)
            });
            match asked {
                Ok(port) => return Ok(port),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| ServerError::Unsupported("no Sentinel to ask".into())))
    }

    /// Asks one Sentinel to fail over now (`SENTINEL FAILOVER`, seed 003's drill) and returns the
    /// instant it was asked; the promotion itself happens after, as Sentinel decides.
    pub fn failover(&self) -> Result<Instant, ServerError> {
        let first = self
            .sentinels
            .first()
            .ok_or_else(|| ServerError::Unsupported("no Sentinel".into()))?;
        let mut con = admin_connection(&first.url())?;
        let asked = Instant::now();
        redis::cmd("SENTINEL")
            .arg("FAILOVER")
            .arg(SERVICE_NAME)
            .query::<()>(&mut con)?;
        Ok(asked)
    }

    /// Fails with a Sentinel's log tail if one has exited.
    pub fn check_alive(&mut self) -> Result<(), ServerError> {
        for sentinel in &mut self.sentinels {
            if let Some(status) = sentinel.exited()? {
                return Err(ServerError::SentinelExited {
                    port: sentinel.port,
                    status,
                    log_tail: sentinel.log_tail(20),
                });
            }
        }
        Ok(())
    }

    /// The last lines of every Sentinel's log, for error messages.
    pub fn log_tails(&self) -> String {
        let tails = self
            .sentinels
            .iter()
            .map(|s| format!("-- sentinel {}:\n{}", s.port, s.log_tail(10)));
        tails.collect::<Vec<_>>().join("\n")
    }
}

/// What `sentinel` still lacks of the primary with `replicas` replicas and `peers` other
/// Sentinels, empty once it sees them all.
fn seen(sentinel: &Sentinel, replicas: usize, peers: usize) -> String {
    let state = match sentinel.master_state() {
        Ok(state) => state,
        Err(e) => return format!("sentinel {}: {e}", sentinel.port),
    };
    let field = |name: &str| state.get(name).map(String::as_str).unwrap_or("?");
    let number = |name: &str| field(name).parse::<usize>().ok();
    let is_master = field("flags").split(',').any(|f| f == "master");
    let complete =
        number("num-slaves") == Some(replicas) && number("num-other-sentinels") == Some(peers);
    match is_master && complete {
        true => replicas_usable(sentinel),
        false => format!(
            "sentinel {}: flags {}, {} of {replicas} replicas, {} of {peers} other Sentinels",
            sentinel.port,
            field("flags"),
            field("num-slaves"),
            field("num-other-sentinels")
        ),
    }
}

/// Why a replica `sentinel` lists could not be promoted yet, empty when none: a Sentinel picks
/// only a replica it has read INFO from lately (within 5 s once the primary is down) with its link
/// to the primary up, else SENTINEL FAILOVER answers NOGOODSLAVE; a replica is listed before its
/// first INFO (then info-refresh counts from the epoch).
fn replicas_usable(sentinel: &Sentinel) -> String {
    let states = match sentinel.replica_states() {
        Ok(states) => states,
        Err(e) => return format!("sentinel {}: {e}", sentinel.port),
    };
    let unusable = states.iter().find(|r| {
        let field = |name: &str| r.get(name).map(String::as_str).unwrap_or("?");
        let fresh = field("info-refresh")
            .parse::<u64>()
            .is_ok_and(|ms| ms < 5000);
        field("flags") != "slave" || field("master-link-status") != "ok" || !fresh
    });
    match unusable {
        None => String::new(),
        Some(r) => format!(
            "sentinel {}: a replica not yet usable: {r:?}",
            sentinel.port
        ),
    }
}
