//! What the harness may do on any server, its own or a user's: delete its own keys by prefix,
//! and name the server's address for tools that take `host:port`.

use super::{ServerError, Target};

impl Target {
    /// Deletes this run's keys (and only them) by prefix, so a user's server is left as found.
    pub fn delete_keys_with_prefix(&self, prefix: &str) -> Result<u64, ServerError> {
        let mut con = self.connection()?;
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
                .query(&mut con)?;
            if !keys.is_empty() {
                deleted += redis::cmd("UNLINK").arg(&keys).query::<u64>(&mut con)?;
            }
            if next == 0 {
                return Ok(deleted);
            }
            cursor = next;
        }
    }

    /// `host:port` of the server, for MONITOR and redis-benchmark.
    pub fn host_port(&self) -> String {
        host_port(&self.url())
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
