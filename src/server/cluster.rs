//! A Redis Cluster the harness owns: N primaries, no replicas, each a managed redis-server (its
//! own port below 55535, directory and `nodes.conf`, registered for cleanup like every server, so
//! success, error, panic, SIGINT, SIGTERM and the harness's SIGKILL all take every node down),
//! joined by `redis-cli --cluster create` and ready once every node says `cluster_state:ok`,
//! knows every other node, and reports the same slot map. How long each step took is kept.

use super::slots::{SlotMap, SLOTS};
use super::spawn::{resolve_binary, resolve_server_binary};
use super::{admin, cleanup, RedisServer, ServerError, ServerOptions};
use serde::Serialize;
use std::io::{Read, Seek};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How to start a cluster.
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    /// Primaries (redis-cli creates a cluster of 3 or more).
    pub nodes: usize,
    /// How each node is started (binary, pinning, start timeout); `cluster_node` is forced on.
    pub server: ServerOptions,
    /// `redis-cli --cluster create` attempts before giving up (it can race a node's start-up).
    pub create_attempts: u32,
    /// How long the nodes may take to agree once created (and after a reshard).
    pub ready_timeout: Duration,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            nodes: 3,
            server: ServerOptions::default(),
            create_attempts: 3,
            ready_timeout: Duration::from_secs(30),
        }
    }
}

/// How long setting the cluster up took, step by step.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct ClusterSetup {
    /// Starting every node until each answered PING.
    pub start_nodes: Duration,
    /// `redis-cli --cluster create`, every attempt included.
    pub create: Duration,
    /// From redis-cli's exit until every node agreed.
    pub converge: Duration,
    /// redis-cli attempts it took.
    pub attempts: u32,
}

impl ClusterSetup {
    /// The whole set-up.
    pub fn total(&self) -> Duration {
        self.start_nodes + self.create + self.converge
    }
}

/// A running cluster; dropped means every node killed and reaped.
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
    setup: ClusterSetup,
    ready_timeout: Duration,
}

/// How long one redis-cli run may take (it waits for the nodes to join).
const CREATE_TIMEOUT: Duration = Duration::from_secs(60);

impl RedisCluster {
    /// Starts `opts.nodes` nodes, creates the cluster, and waits until every node agrees.
    pub fn start(opts: &ClusterOptions) -> Result<RedisCluster, ServerError> {
        if opts.nodes < 3 {
            let why = format!(
                "{} nodes: redis-cli creates clusters of 3 or more",
                opts.nodes
            );
            return Err(ServerError::Unsupported(why));
        }
        let server = resolve_server_binary(&opts.server.binary)?;
        let cli = cli_for(&server)?;
        let node_opts = ServerOptions {
            cluster_node: true,
            ..opts.server.clone()
        };
        let started = Instant::now();
        // A node that fails to start drops (kills) the ones before it.
        let nodes = (0..opts.nodes)
            .map(|_| RedisServer::start(&node_opts))
            .collect::<Result<Vec<_>, _>>()?;
        let start_nodes = started.elapsed();
        let mut cluster = RedisCluster {
            nodes,
            setup: ClusterSetup {
                start_nodes,
                create: Duration::ZERO,
                converge: Duration::ZERO,
                attempts: 0,
            },
            ready_timeout: opts.ready_timeout,
        };
        let creating = Instant::now();
        cluster.setup.attempts = cluster.create(&cli, opts.create_attempts.max(1))?;
        cluster.setup.create = creating.elapsed();
        let converging = Instant::now();
        cluster.wait_agreed()?;
        cluster.setup.converge = converging.elapsed();
        Ok(cluster)
    }

    /// Runs redis-cli until it succeeds; between attempts every node is reset to an empty,
    /// unjoined node (an attempt that failed half-way leaves slots assigned).
    fn create(&self, cli: &Path, attempts: u32) -> Result<u32, ServerError> {
        let mut last_output = String::new();
        for attempt in 1..=attempts {
            let (ok, output) = run_cli(cli, &self.addresses())?;
            if ok {
                return Ok(attempt);
            }
            last_output = output;
            for node in &self.nodes {
                let mut con = node.connection()?;
                admin::flush_all_sync(&mut con)?;
                redis::cmd("CLUSTER")
                    .arg("RESET")
                    .arg("HARD")
                    .query::<()>(&mut con)?;
            }
        }
        Err(ServerError::ClusterCreate {
            attempts,
            output: last_lines(&last_output, 20),
            log_tails: self.log_tails(),
        })
    }

    /// Waits until every node says `cluster_state:ok`, knows all nodes, sees every slot served,
    /// and reports the same slot map as the others; returns that map.
    pub fn wait_agreed(&self) -> Result<SlotMap, ServerError> {
        let started = Instant::now();
        loop {
            let states = self.states()?;
            let agreed = states
                .iter()
                .all(|s| s.ok(self.nodes.len()) && s.map == states[0].map);
            if agreed {
                return Ok(states[0].map.clone());
            }
            if started.elapsed() > self.ready_timeout {
                let seen: Vec<String> = states.iter().map(NodeState::describe).collect();
                return Err(ServerError::ClusterNotReady {
                    waited: self.ready_timeout,
                    states: seen.join("; "),
                    log_tails: self.log_tails(),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn states(&self) -> Result<Vec<NodeState>, ServerError> {
        let mut states = Vec::with_capacity(self.nodes.len());
        for node in &self.nodes {
            node.check_alive().map_err(|e| self.with_tails(e))?;
            let mut con = node.connection()?;
            let info: String = redis::cmd("CLUSTER").arg("INFO").query(&mut con)?;
            let info = super::Info::parse(&info);
            let field = |name: &str| info.get(name).unwrap_or("?").to_string();
            states.push(NodeState {
                port: node.port(),
                state: field("cluster_state"),
                known: field("cluster_known_nodes").parse().unwrap_or(0),
                map: SlotMap::read(&mut con, "127.0.0.1")?,
            });
        }
        Ok(states)
    }

    /// A node's death reported with every node's log, not only its own.
    fn with_tails(&self, e: ServerError) -> ServerError {
        match e {
            ServerError::Crashed { .. } => ServerError::ClusterNotReady {
                waited: self.ready_timeout,
                states: e.to_string(),
                log_tails: self.log_tails(),
            },
            other => other,
        }
    }

    /// The nodes, in the order they were started.
    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }

    /// The node listening on `port`.
    pub fn node_on(&self, port: u16) -> Option<&RedisServer> {
        self.nodes.iter().find(|n| n.port() == port)
    }

    /// How long set-up took.
    pub fn setup(&self) -> ClusterSetup {
        self.setup
    }

    /// `host:port` of every node, in start order.
    pub fn addresses(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect()
    }

    /// Every node's last log lines, labelled by port.
    pub fn log_tails(&self) -> String {
        let tail =
            |n: &RedisServer| format!("--- node on port {} ---\n{}", n.port(), n.log_tail(12));
        self.nodes.iter().map(tail).collect::<Vec<_>>().join("\n")
    }

    /// Fails with every node's log tail if any node has died.
    pub fn check_alive(&self) -> Result<(), ServerError> {
        for node in &self.nodes {
            node.check_alive().map_err(|e| self.with_tails(e))?;
        }
        Ok(())
    }
}

/// What one node said of the cluster.
struct NodeState {
    port: u16,
    state: String,
    known: usize,
    map: SlotMap,
}

impl NodeState {
    fn ok(&self, nodes: usize) -> bool {
        self.state == "ok" && self.known == nodes && self.map.covered() == u32::from(SLOTS)
    }

    fn describe(&self) -> String {
        format!(
            "port {}: cluster_state:{}, {} nodes known, {} slots served in {} ranges",
            self.port,
            self.state,
            self.known,
            self.map.covered(),
            self.map.ranges.len()
        )
    }
}

/// redis-cli next to the server binary (the same build), else on PATH.
fn cli_for(server: &Path) -> Result<PathBuf, ServerError> {
    let sibling = server.with_file_name("redis-cli");
    if sibling.is_file() {
        return Ok(sibling);
    }
    resolve_binary(Path::new("redis-cli")).map_err(|_| ServerError::CliNotFound(sibling))
}

/// One `redis-cli --cluster create` run: whether it succeeded, and what it printed.
fn run_cli(cli: &Path, addresses: &[String]) -> Result<(bool, String), ServerError> {
    // Into a file, not a pipe: a pipe nobody reads until the exit could fill and stall it.
    let mut log = tempfile::tempfile()?;
    let mut cmd = Command::new(cli);
    cmd.args(["--cluster", "create"])
        .args(addresses)
        .args(["--cluster-replicas", "0", "--cluster-yes"])
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log.try_clone()?);
    cleanup::set_parent_death_signal(&mut cmd);
    let mut child = cmd.spawn().map_err(|source| ServerError::Spawn {
        binary: cli.to_path_buf(),
        source,
    })?;
    cleanup::register(child.id());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if started.elapsed() > CREATE_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    cleanup::unregister(child.id());
    let mut output = String::new();
    log.seek(std::io::SeekFrom::Start(0))?;
    // Unreadable (not UTF-8) output is only lost from the error message.
    let _ = log.read_to_string(&mut output);
    match status {
        Some(status) => Ok((status.success(), strip_colours(&output))),
        None => Ok((
            false,
            format!("redis-cli still running after {CREATE_TIMEOUT:?}"),
        )),
    }
}

/// redis-cli colours its output with ANSI escapes even into a pipe.
fn strip_colours(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for e in chars.by_ref() {
                if e.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_cli_colours_are_stripped() {
        let coloured = "\u{1b}[32;1m[OK] All 16384 slots covered.\n\u{1b}[0m";
        assert_eq!(strip_colours(coloured), "[OK] All 16384 slots covered.\n");
        assert_eq!(last_lines("a\nb\nc", 2), "b\nc");
    }
}
