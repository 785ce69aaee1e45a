//! What an experiment runs against, declared once ([`Topology`]) and built by the frame before
//! its body, or per trial or setting through the session: no server, one server, a primary with
//! caught-up replicas, or an N-node cluster. Every process of a [`Deployment`] is a managed
//! server, registered for cleanup when spawned (`cleanup.rs`: SIGINT, SIGTERM, the harness's
//! SIGKILL) and killed and reaped on drop (success, error, panic). A new shape (Sentinels) is a
//! variant here, one in [`Deployment`], and its builder in a file of its own, like `cluster.rs`.

use super::address::Endpoint;
use super::{ClusterOptions, Persistence, RedisCluster, RedisServer, ServerError, ServerOptions};
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
    /// A cluster.
    Cluster(RedisCluster),
}

/// A primary and its replicas, ready: every replica's link up and caught up with the primary.
pub struct Replicated {
    pub primary: RedisServer,
    pub replicas: Vec<RedisServer>,
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
            Topology::Cluster { nodes, .. } => format!("a {nodes}-node cluster"),
        }
    }
}

impl Replicated {
    /// Starts the primary, then each replica of it.
    pub fn start(server: &ServerOptions, replicas: usize) -> Result<Self, ServerError> {
        let primary = RedisServer::start(server)?;
        let replica_opts = ServerOptions {
            persistence: Persistence::None,
            ..server.clone()
        };
        let replicas = (0..replicas)
            .map(|_| RedisServer::start_replica_of(&primary, &replica_opts))
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
            Deployment::Cluster(cluster) => cluster.nodes().first(),
        }
    }

    /// Every server process, the writable one first.
    pub fn servers(&self) -> Vec<&RedisServer> {
        match self {
            Deployment::None => Vec::new(),
            Deployment::Standalone(server) => vec![server],
            Deployment::Replicated(set) => {
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
