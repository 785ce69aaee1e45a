//! What an experiment runs against, declared once ([`Topology`]) and built by the frame before
//! its body, or per trial or setting through the session: no server, one server, a primary with
//! caught-up replicas, the same watched by Sentinels, or an N-node cluster. Every process of a
//! [`Deployment`] is registered for cleanup when spawned (`cleanup.rs`: SIGINT, SIGTERM, the
//! harness's SIGKILL) and killed and reaped on drop (success, error, panic). A new shape is a
//! variant here, one in [`Deployment`], and its builder in a file of its own, like `cluster.rs`
//! and `sentinel.rs`.

use super::address::Endpoint;
use super::{
    ClusterOptions, Persistence, RedisCluster, RedisSentinels, RedisServer, SentinelOptions,
    ServerError, ServerOptions,
};
use std::time::Duration;

/// The servers an experiment needs.
#[derive(Debug, Clone, PartialEq)]
pub enum Topology {
    /// None while the body runs: it builds its own per trial through the session.
    None,
    /// One server: the default, and what `--redis-url` names.
    Standalone,
    /// A primary and `replicas` replicas of it, each linked and caught up.
    Replicated { replicas: usize },
    /// A primary and `replicas` replicas watched by `sentinels` Sentinels, every Sentinel
    /// seeing the primary, its replicas and the other Sentinels (seed 003's failover drill).
    Sentinel {
        replicas: usize,
        sentinels: usize,
        /// Sentinels that must agree the primary is down.
        quorum: usize,
        /// `down-after-milliseconds`.
        down_after: Duration,
        /// `failover-timeout`.
        failover_timeout: Duration,
    },
    /// A Redis Cluster of `nodes` primaries, every node agreeing on the slot map.
    Cluster {
        nodes: usize,
        /// `redis-cli --cluster create` attempts before giving up.
        create_attempts: u32,
        /// How long the nodes may take to agree.
        ready_timeout: Duration,
    },
}

/// A built topology; dropped means every process killed and reaped.
pub enum Deployment {
    /// No server.
    None,
    /// One server.
    Standalone(RedisServer),
    /// A primary and its replicas.
    Replicated(Replicated),
    /// A primary and its replicas, and the Sentinels watching them.
    Sentinel(Watched),
    /// A cluster.
    Cluster(RedisCluster),
}

/// A primary and its replicas, ready: every replica's link up and caught up with the primary.
pub struct Replicated {
    pub primary: RedisServer,
    pub replicas: Vec<RedisServer>,
}

/// A primary and its replicas under Sentinels. After a failover the primary is whichever
/// server the Sentinels name ([`Deployment::writable`] asks them).
pub struct Watched {
    pub set: Replicated,
    pub sentinels: RedisSentinels,
}

impl Topology {
    /// Starts every server, each with `server`'s binary, pinning, TLS and persistence (replicas
    /// persist nothing: their data is the primary's); a failure part-way stops what was started.
    pub fn build(&self, server: &ServerOptions) -> Result<Deployment, ServerError> {
        Ok(match self {
            Topology::None => Deployment::None,
            Topology::Standalone => Deployment::Standalone(RedisServer::start(server)?),
            Topology::Replicated { replicas } => {
                Deployment::Replicated(Replicated::start(server, *replicas)?)
            }
            Topology::Sentinel { replicas, .. } => {
                let set = Replicated::start(server, *replicas)?;
                let sentinels =
                    RedisSentinels::start(&set.primary, *replicas, &self.sentinel_options(server))?;
                Deployment::Sentinel(Watched { set, sentinels })
            }
            Topology::Cluster {
                nodes,
                create_attempts,
                ready_timeout,
            } => Deployment::Cluster(RedisCluster::start(&ClusterOptions {
                nodes: *nodes,
                server: server.clone(),
                create_attempts: *create_attempts,
                ready_timeout: *ready_timeout,
            })?),
        })
    }

    /// What it is, for errors and notes: "a primary and 1 replica(s)".
    pub fn describe(&self) -> String {
        match self {
            Topology::None => "no server".into(),
            Topology::Standalone => "one server".into(),
            Topology::Replicated { replicas } => format!("a primary and {replicas} replica(s)"),
            Topology::Sentinel {
                replicas,
                sentinels,
                ..
            } => format!("a primary and {replicas} replica(s) watched by {sentinels} Sentinels"),
            Topology::Cluster { nodes, .. } => format!("a {nodes}-node cluster"),
        }
    }

    /// The Sentinels' options: `server`'s binary and pinning, this topology's settings.
    fn sentinel_options(&self, server: &ServerOptions) -> SentinelOptions {
        let defaults = SentinelOptions {
            binary: server.binary.clone(),
            cpus: server.cpus.clone(),
            ..SentinelOptions::default()
        };
        match self {
            Topology::Sentinel {
                sentinels,
                quorum,
                down_after,
                failover_timeout,
                ..
            } => SentinelOptions {
                count: *sentinels,
                quorum: *quorum,
                down_after: *down_after,
                failover_timeout: *failover_timeout,
                ..defaults
            },
            _ => defaults,
        }
    }
}

/// Where each replica dials its primary: given the primary (started, no replica yet), the
/// loopback port of a hop the caller runs in front of it (failover's fault proxy, so the
/// replication link itself can be cut). A hook, so server/ needs nothing from fault/.
pub type Link<'a> = &'a mut dyn FnMut(&RedisServer) -> Result<u16, ServerError>;

impl Replicated {
    /// Starts the primary, then each replica of it.
    pub fn start(server: &ServerOptions, replicas: usize) -> Result<Self, ServerError> {
        Self::start_each(server, replicas, RedisServer::start_replica_of)
    }

    /// As [`Replicated::start`], each replica dialling the port `link` names for the primary,
    /// ready once the primary streams to it through that hop.
    pub fn start_via(
        server: &ServerOptions,
        replicas: usize,
        link: Link<'_>,
    ) -> Result<Self, ServerError> {
        Self::start_each(server, replicas, |primary, opts| {
            RedisServer::start_replica_via(primary, link(primary)?, opts)
        })
    }

    /// Starts the primary, then `replicas` replicas of it by `replica` (replicas persist nothing:
    /// their data is the primary's).
    fn start_each(
        server: &ServerOptions,
        replicas: usize,
        mut replica: impl FnMut(&RedisServer, &ServerOptions) -> Result<RedisServer, ServerError>,
    ) -> Result<Self, ServerError> {
        let primary = RedisServer::start(server)?;
        let replica_opts = ServerOptions {
            persistence: Persistence::None,
            ..server.clone()
        };
        let replicas = (0..replicas)
            .map(|_| replica(&primary, &replica_opts))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Replicated { primary, replicas })
    }
}

impl Deployment {
    /// Where clients write: the standalone server, the primary, or a cluster's first node (a
    /// cluster client finds the others); none without a server.
    pub fn endpoint(&self) -> Option<Endpoint> {
        self.writable().map(RedisServer::endpoint)
    }

    /// The server clients write to, as [`Deployment::endpoint`].
    pub fn writable(&self) -> Option<&RedisServer> {
        match self {
            Deployment::None => None,
            Deployment::Standalone(server) => Some(server),
            Deployment::Replicated(set) => Some(&set.primary),
            Deployment::Sentinel(watched) => Some(watched.primary_now()),
            Deployment::Cluster(cluster) => cluster.nodes().first(),
        }
    }

    /// Every server process, the writable one first.
    pub fn servers(&self) -> Vec<&RedisServer> {
        match self {
            Deployment::None => Vec::new(),
            Deployment::Standalone(server) => vec![server],
            Deployment::Replicated(set) | Deployment::Sentinel(Watched { set, .. }) => {
                std::iter::once(&set.primary).chain(&set.replicas).collect()
            }
            Deployment::Cluster(cluster) => cluster.nodes().iter().collect(),
        }
    }

    /// Fails with the log tail of the first server that has died.
    pub fn check_alive(&self) -> Result<(), ServerError> {
        match self {
            Deployment::Cluster(cluster) => cluster.check_alive(),
            other => other.servers().iter().try_for_each(|s| s.check_alive()),
        }
    }
}

impl Watched {
    /// The server the Sentinels name as the primary now; the first primary if none answers (a
    /// caller writing there learns from its error, as a client of a failing Sentinel would).
    pub fn primary_now(&self) -> &RedisServer {
        let named = self.sentinels.primary_port().ok();
        std::iter::once(&self.set.primary)
            .chain(&self.set.replicas)
            .find(|s| Some(s.port()) == named)
            .unwrap_or(&self.set.primary)
    }
}
