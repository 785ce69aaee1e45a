//! The Redis servers an experiment runs against: ones the harness starts and owns, or one the user
//! names with `--redis-url`, which the harness may use but never stops, flushes or reconfigures.

pub mod acl;
mod address;
pub mod admin;
mod cleanup;
mod cluster;
mod describe;
pub mod endpoint;
mod info;
mod keys;
mod managed;
mod persistence;
pub mod pin;
mod replica;
mod reshard;
pub(crate) mod sched;
mod sentinel;
mod slots;
pub mod slowlog;
mod spawn;
mod stats;
pub mod tls;
mod topology;

pub use address::{Credentials, Endpoint};
pub use cleanup::{
    install_interrupt_handler, interrupted, kill_all, kill_group, register, register_group,
    registered, set_parent_death_signal, spawn_lasting, unregister, unregister_group,
};
pub use cluster::{ClusterOptions, ClusterSetup, RedisCluster};
pub use describe::RedisMeta;
pub use info::Info;
pub use keys::host_port;
pub use managed::{RedisServer, ServerOptions};
pub use persistence::Persistence;
pub use replica::wait_caught_up;
pub use reshard::SlotMove;
pub use sched::{steal_ns_by_cpu, SchedCost, SchedSample};
pub use sentinel::{RedisSentinels, SentinelOptions, SERVICE_NAME as SENTINEL_SERVICE};
pub use slots::{key_slot, SlotMap, SlotRange, SLOTS};
pub use stats::{command_stats, main_thread_cpu_us, ServerCost, ServerSample};
pub use topology::{Deployment, Link, Replicated, Topology, Watched};

use std::path::PathBuf;
use std::time::Duration;

/// What went wrong starting, reaching or stopping a server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(
        "redis-server not found at `{0}`; install it with `apt-get install -y redis-server redis-tools` \
         (as root) or pass --redis-server PATH"
    )]
    BinaryNotFound(PathBuf),
    /// A path the user named (`--redis-server PATH`) with no file there.
    #[error("no file at `{0}`, the redis-server you named with --redis-server: check the path")]
    NamedBinaryMissing(PathBuf),
    #[error(
        "`{}` is not a redis-server: `--version` printed {said} (pass --redis-server PATH to a \
         redis-server or valkey-server binary)",
        binary.display()
    )]
    NotRedis { binary: PathBuf, said: String },
    #[error("could not start `{binary}`")]
    Spawn {
        binary: PathBuf,
        source: std::io::Error,
    },
    #[error("redis-server exited during start-up ({status}); last lines of its log:\n{log_tail}")]
    ExitedAtStart { status: String, log_tail: String },
    #[error("redis-server on port {port} did not answer PING within {waited:?}; last lines of its log:\n{log_tail}")]
    NotReady {
        port: u16,
        waited: Duration,
        log_tail: String,
    },
    #[error("no free loopback port after {0} attempts (each port was taken before redis-server bound it)")]
    NoFreePort(usize),
    #[error("redis-server (pid {pid}, port {port}) died mid-run ({status}); last lines of its log:\n{log_tail}")]
    Crashed {
        pid: u32,
        port: u16,
        status: String,
        log_tail: String,
    },
    #[error("{0}")]
    Permission(Box<acl::Denied>),
    #[error("{0}")]
    Unreachable(Box<acl::Unreachable>),
    #[error(
        "--redis-url {url} names a replica (of {primary}): ratelab writes its limiters' keys, which a \
         replica refuses (READONLY); give the primary's URL"
    )]
    NotPrimary { url: String, primary: String },
    #[error(
        "--redis-url {url} names a Redis Cluster node: {experiment} runs on one Redis without cluster mode \
         (its keys would be refused with MOVED); give a standalone server, or run `cluster` against this node"
    )]
    ClusterNode { url: String, experiment: String },
    #[error("making TLS certificates: {0}")]
    Tls(String),
    #[error("temporary directory: {0}")]
    TempDir(std::io::Error),
    #[error(transparent)]
    Redis(#[from] redis::RedisError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(
        "this experiment must control the server ({0}); it refuses to run against --redis-url"
    )]
    NotManaged(String),
    #[error(
        "this experiment declared no server for its body (it builds its own per trial), yet asked for one"
    )]
    NoServer,
    #[error("unsupported server: {0}")]
    Unsupported(String),
    #[error(
        "redis-server on port {port} refused SHUTDOWN: {reply}; last lines of its log:\n{log_tail}"
    )]
    ShutdownRefused {
        port: u16,
        reply: String,
        log_tail: String,
    },
    #[error(
        "redis-server (pid {pid}, port {port}) did not exit within {waited:?} of SHUTDOWN; \
         last lines of its log:\n{log_tail}"
    )]
    DidNotExit {
        pid: u32,
        port: u16,
        waited: Duration,
        log_tail: String,
    },
    #[error(
        "redis-server on port {port}: AOF not settled after {waited:?} ({unsettled}); \
         last lines of its log:\n{log_tail}"
    )]
    AofNotSynced {
        port: u16,
        waited: Duration,
        unsettled: String,
        log_tail: String,
    },
    #[error("replica on port {port} has no link to its primary on port {primary_port} after {waited:?} \
             (master_link_status:{link_status}); last lines of its log:\n{log_tail}")]
    ReplicaLinkDown {
        port: u16,
        primary_port: u16,
        waited: Duration,
        link_status: String,
        log_tail: String,
    },
    #[error("replica on port {replica_port} did not catch up within {waited:?}: its offset is {replica_offset}, \
             the primary's (port {primary_port}) was {primary_offset}")]
    NotCaughtUp {
        primary_port: u16,
        replica_port: u16,
        primary_offset: u64,
        replica_offset: String,
        waited: Duration,
    },
    #[error(
        "redis-cli not found at `{}` nor on PATH; install it with `apt-get install -y redis-tools`",
        .0.display()
    )]
    CliNotFound(PathBuf),
    #[error(
        "redis-cli --cluster create failed {attempts} time(s); its last output:\n{output}\n\
             last lines of every node's log:\n{log_tails}"
    )]
    ClusterCreate {
        attempts: u32,
        output: String,
        log_tails: String,
    },
    #[error("the cluster's nodes did not agree within {waited:?} ({states}); last lines of every node's log:\n\
             {log_tails}")]
    ClusterNotReady {
        waited: Duration,
        states: String,
        log_tails: String,
    },
    #[error("the Sentinels did not agree on the primary within {waited:?} ({states}); last lines of every \
             Sentinel's log:\n{log_tails}")]
    SentinelsNotReady {
        waited: Duration,
        states: String,
        log_tails: String,
    },
    #[error("Sentinel on port {port} exited ({status}); last lines of its log:\n{log_tail}")]
    SentinelExited {
        port: u16,
        status: String,
        log_tail: String,
    },
    #[error("server on port {port} still reports role:{role} {waited:?} after REPLICAOF NO ONE")]
    NotPromoted {
        port: u16,
        waited: Duration,
        role: String,
    },
}

/// How the harness talks to a server, for timeouts it sets explicitly (never library defaults).
pub const ADMIN_TIMEOUT: Duration = Duration::from_secs(10);

/// The server an experiment's clients write to: owned (started, stopped, pinned by us), external
/// (only used), or none (a body that builds its own servers per trial, `Topology::None`).
pub enum Target {
    /// Started by the harness; dropped means killed and reaped.
    Managed(RedisServer),
    /// Named by the user; never stopped, flushed or reconfigured.
    External { endpoint: Endpoint },
    /// No server while the body runs; every use is an error that says so.
    NoServer,
}

impl Target {
    /// What a client needs to reach the server.
    pub fn endpoint(&self) -> Result<Endpoint, ServerError> {
        match self {
            Target::Managed(server) => Ok(server.endpoint()),
            Target::External { endpoint } => Ok(endpoint.clone()),
            Target::NoServer => Err(ServerError::NoServer),
        }
    }

    /// The `redis://` URL derived from [`Target::endpoint`], for a worker's arguments or a tool;
    /// empty without a server (a worker given it fails, naming the URL).
    pub fn url(&self) -> String {
        self.endpoint().map(|e| e.url()).unwrap_or_default()
    }

    /// True when the harness owns the server and may break or reconfigure it.
    pub fn is_managed(&self) -> bool {
        matches!(self, Target::Managed(_))
    }

    /// The owned server, or a clear refusal naming why the experiment needs one.
    pub fn managed(&mut self, why: &str) -> Result<&mut RedisServer, ServerError> {
        match self {
            Target::Managed(server) => Ok(server),
            Target::External { .. } => Err(ServerError::NotManaged(why.to_string())),
            Target::NoServer => Err(ServerError::NoServer),
        }
    }

    /// The owned server, shared, or a clear refusal naming why the experiment needs one.
    pub fn owned(&self, why: &str) -> Result<&RedisServer, ServerError> {
        match self {
            Target::Managed(server) => Ok(server),
            Target::External { .. } => Err(ServerError::NotManaged(why.to_string())),
            Target::NoServer => Err(ServerError::NoServer),
        }
    }

    /// Whether the server is a node of a user's Redis Cluster (`--redis-url` naming one, INFO
    /// cluster saying `cluster_enabled:1`): a run's keys may live on every node, and a plain
    /// client meets MOVED for another node's.
    pub fn is_users_cluster_node(&self) -> Result<bool, ServerError> {
        if !matches!(self, Target::External { .. }) {
            return Ok(false);
        }
        Ok(self.info("cluster")?.get("cluster_enabled") == Some("1"))
    }

    /// A blocking admin connection with explicit timeouts.
    pub fn connection(&self) -> Result<redis::Connection, ServerError> {
        self.endpoint()?.connection()
    }

    /// Parsed `INFO <section>`.
    pub fn info(&self, section: &str) -> Result<Info, ServerError> {
        let mut con = self.connection()?;
        let text: String = redis::cmd("INFO").arg(section).query(&mut con)?;
        Ok(Info::parse(&text))
    }

    /// Fails with the server's log tail if a managed server has died.
    pub fn check_alive(&self) -> Result<(), ServerError> {
        match self {
            Target::Managed(server) => server.check_alive(),
            Target::External { .. } | Target::NoServer => Ok(()),
        }
    }
}

/// Opens a blocking connection with explicit connect and response timeouts.
pub fn admin_connection(url: &str) -> Result<redis::Connection, ServerError> {
    let client = endpoint::client(url)?;
    let con = client.get_connection_with_timeout(ADMIN_TIMEOUT)?;
    con.set_read_timeout(Some(ADMIN_TIMEOUT))?;
    con.set_write_timeout(Some(ADMIN_TIMEOUT))?;
    Ok(con)
}

/// Reads the config values that change what an experiment measures, for meta.json.
pub fn config_snapshot(con: &mut redis::Connection) -> Result<Vec<(String, String)>, ServerError> {
    const KEYS: &[&str] = &[
        "save",
        "appendonly",
        "maxmemory",
        "maxmemory-policy",
        "io-threads",
        "hz",
        "zset-max-listpack-entries",
        "lazyfree-lazy-expire",
        "lazyfree-lazy-user-del",
        "latency-monitor-threshold",
        "slowlog-log-slower-than",
    ];
    let mut out = Vec::new();
    for key in KEYS {
        // A key the server does not know (another version) yields an empty reply: skip it.
        let pairs: std::collections::BTreeMap<String, String> =
            redis::cmd("CONFIG").arg("GET").arg(*key).query(con)?;
        out.extend(pairs);
    }
    Ok(out)
}
