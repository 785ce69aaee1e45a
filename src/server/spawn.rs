//! Starting a redis-server process: its arguments (port, directory, log, persistence, replica
//! of), cleanup registration and pinning; the binary resolved and a port found beforehand.

use super::tls::ServerCerts;
use super::{cleanup, pin, ServerError, ServerOptions};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// Spawns redis-server on `port` with its files in `dir`, registered for cleanup.
pub(super) fn spawn(
    binary: &Path,
    port: u16,
    dir: &Path,
    opts: &ServerOptions,
    certs: Option<&ServerCerts>,
    replica_of: Option<u16>,
) -> Result<Child, ServerError> {
    let log = dir.join("redis.log");
    let mut cmd = Command::new(binary);
    match certs {
        Some(certs) => cmd.args(certs.server_args(port)),
        None => cmd.arg("--port").arg(port.to_string()),
    };
    cmd.args(["--bind", "127.0.0.1"])
        .args(opts.persistence.server_args())
        .args(["--daemonize", "no", "--protected-mode", "yes"])
        .arg("--dir")
        .arg(dir)
        .arg("--logfile")
        .arg(&log);
    if let Some(primary_port) = replica_of {
        cmd.args(["--replicaof", "127.0.0.1"])
            .arg(primary_port.to_string());
    }
    if opts.cluster_node {
        cmd.args(["--cluster-enabled", "yes"])
            .arg("--cluster-config-file")
            .arg(dir.join("nodes.conf"));
    }
    if let Some(password) = &opts.password {
        cmd.arg("--requirepass").arg(password);
    }
    for (name, value) in &opts.extra_args {
        cmd.arg(format!("--{name}")).arg(value);
    }
    spawn_owned(cmd, binary, &opts.cpus)
}

/// Spawns `cmd` (a redis-server or Sentinel from `binary`) silent, pinned to `cpus`, dying with
/// the harness and registered for cleanup.
pub(super) fn spawn_owned(
    mut cmd: Command,
    binary: &Path,
    cpus: &[usize],
) -> Result<Child, ServerError> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cleanup::set_parent_death_signal(&mut cmd);
    pin::pin_command(&mut cmd, cpus);
    let child = cmd.spawn().map_err(|source| ServerError::Spawn {
        binary: binary.to_path_buf(),
        source,
    })?;
    cleanup::register(child.id());
    Ok(child)
}

/// Resolves a server binary like [`resolve_binary`] and checks that it is a redis-server (or
/// Valkey's): `--version` must say so, or a wrong `--redis-server` fails with an empty log.
pub(super) fn resolve_server_binary(binary: &Path) -> Result<PathBuf, ServerError> {
    let path = resolve_binary(binary)?;
    let output = Command::new(&path)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|source| ServerError::Spawn {
            binary: path.clone(),
            source,
        })?;
    let said = String::from_utf8_lossy(&output.stdout);
    let said = said.trim();
    if said.starts_with("Redis server v=") || said.starts_with("Valkey server v=") {
        return Ok(path);
    }
    Err(ServerError::NotRedis {
        binary: path,
        said: match said.is_empty() {
            true => format!("nothing ({})", output.status),
            false => format!("{:?}", said.lines().next().unwrap_or_default()),
        },
    })
}

/// Resolves a bare name through PATH so a missing binary is reported before spawning.
pub(super) fn resolve_binary(binary: &Path) -> Result<PathBuf, ServerError> {
    if binary.components().count() > 1 {
        return if binary.is_file() {
            Ok(binary.to_path_buf())
        } else {
            Err(ServerError::NamedBinaryMissing(binary.to_path_buf()))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(binary))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| ServerError::BinaryNotFound(binary.to_path_buf()))
}

/// A loopback port that was free a moment ago (the OS picks it when binding port 0).
pub(super) fn free_port() -> Result<u16, ServerError> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// Free ports tried before giving up: another process may bind one between our probe and the
/// server's own bind.
const PORT_ATTEMPTS: usize = 5;

/// Runs `start` (which picks free ports itself) again while a process it started exited because
/// another process took its port between our probe and its bind; gives up after `PORT_ATTEMPTS`.
pub(super) fn on_free_ports<T>(
    mut start: impl FnMut() -> Result<T, ServerError>,
) -> Result<T, ServerError> {
    for _ in 0..PORT_ATTEMPTS {
        match start() {
            Err(ServerError::ExitedAtStart { log_tail, .. })
            | Err(ServerError::SentinelExited { log_tail, .. })
                if log_tail.contains("Address already in use") => {}
            other => return other,
        }
    }
    Err(ServerError::NoFreePort(PORT_ATTEMPTS))
}

/// The bus of a cluster node listens on its port + 10000, so a node's port must stay below this.
pub(super) const CLUSTER_PORT_LIMIT: u16 = 55535;

/// A free loopback port below [`CLUSTER_PORT_LIMIT`] whose bus port (+10000) was free too.
pub(super) fn free_cluster_port() -> Result<u16, ServerError> {
    const ATTEMPTS: usize = 200;
    for _ in 0..ATTEMPTS {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        if port < CLUSTER_PORT_LIMIT && TcpListener::bind(("127.0.0.1", port + 10000)).is_ok() {
            return Ok(port);
        }
    }
    Err(ServerError::NoFreePort(ATTEMPTS))
}
