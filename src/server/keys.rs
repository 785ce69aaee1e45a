//! What the harness may do on any server, its own or a user's: delete its own keys by prefix,
//! and name the server's address for tools that take `host:port`.

use super::{ServerError, SlotMap, Target};

impl Target {
    /// Deletes this run's keys (and only them) by prefix, so a user's server is left as found.
    /// On a node of a user's cluster, on every primary: a cluster client (a library's adapter, or
    /// the cluster experiment's own) puts keys on whichever node owns their slot, and one node's
    /// SCAN sees its own keys only.
    pub fn delete_keys_with_prefix(&self, prefix: &str) -> Result<u64, ServerError> {
        let mut con = self.connection()?;
        if !self.is_users_cluster_node()? {
            return delete_on(&mut con, prefix);
        }
        let endpoint = self.endpoint()?;
        let map = SlotMap::read(&mut con, &endpoint.host)?;
        let mut deleted = 0;
        for node in map.nodes() {
            deleted += delete_on(&mut endpoint.at_node(&node).connection()?, prefix)?;
        }
        Ok(deleted)
    }

    /// `host:port` of the server, for MONITOR and redis-benchmark.
    pub fn host_port(&self) -> String {
        host_port(&self.url())
    }
}

/// Deletes the keys matching `prefix*` on the server `con` talks to. One UNLINK per key, in a
/// pipeline per SCAN batch: a cluster node refuses one UNLINK of keys in several slots.
fn delete_on(con: &mut redis::Connection, prefix: &str) -> Result<u64, ServerError> {
    let pattern = format!("{prefix}*");
    let mut cursor: u64 = 0;
    let mut deleted = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(1000)
            .query(con)?;
        if !keys.is_empty() {
            let mut pipe = redis::pipe();
            for key in &keys {
                pipe.cmd("UNLINK").arg(key);
            }
            deleted += pipe.query::<Vec<u64>>(con)?.iter().sum::<u64>();
        }
        if next == 0 {
            return Ok(deleted);
        }
        cursor = next;
    }
}

/// `redis://host:port/db` -> `host:port`.
pub fn host_port(url: &str) -> String {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let rest = rest.rsplit_once('@').map(|(_, r)| r).unwrap_or(rest);
    rest.split('/').next().unwrap_or(rest).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port_strips_scheme_auth_and_db() {
        assert_eq!(host_port("redis://127.0.0.1:6400/"), "127.0.0.1:6400");
        assert_eq!(host_port("redis://:pw@10.0.0.1:6379/2"), "10.0.0.1:6379");
    }
}
