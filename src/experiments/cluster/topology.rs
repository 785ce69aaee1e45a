//! Where the calls of one phase go: one server, or the primaries of a cluster by the slot map it
//! reported; a blocking connection per node with the run's client timeouts; and deleting this
//! run's keys on every node (a plain connection's SCAN sees one node only, and UNLINK of keys in
//! several slots is refused on a cluster).

use crate::load::ClientTimeouts;
use crate::server::{host_port, key_slot, ServerError, SlotMap};
use std::collections::BTreeMap;
use std::time::Duration;

/// The servers of one phase.
pub(super) struct Topology {
    /// None: a single server without cluster mode.
    pub map: Option<SlotMap>,
    /// The single server's `host:port` (one-redis).
    single: String,
    /// The URL of the server named first, other nodes reached with its credentials and db.
    base_url: String,
    timeouts: ClientTimeouts,
    cons: BTreeMap<String, redis::Connection>,
}

impl Topology {
    /// One server without cluster mode.
    pub fn single(url: &str, timeouts: ClientTimeouts) -> Topology {
        Topology {
            map: None,
            single: host_port(url),
            base_url: url.to_string(),
            timeouts,
            cons: BTreeMap::new(),
        }
    }

    /// The cluster whose node `url` names, by the slot map that node reports now.
    pub fn cluster(url: &str, timeouts: ClientTimeouts) -> Result<Topology, ServerError> {
        let mut topology = Topology::single(url, timeouts);
        let host = host_port(url)
            .rsplit_once(':')
            .map(|(h, _)| h.to_string())
            .unwrap_or_default();
        let map = SlotMap::read(topology.con(&host_port(url))?, &host)?;
        topology.map = Some(map);
        Ok(topology)
    }

    /// Primaries serving slots (1 for a single server).
    pub fn nodes(&self) -> u32 {
        self.map.as_ref().map_or(1, |m| m.nodes().len() as u32)
    }

    /// Every node's `host:port`.
    pub fn addresses(&self) -> Vec<String> {
        match &self.map {
            Some(map) => map.nodes(),
            None => vec![self.single.clone()],
        }
    }

    /// A key's slot and the `host:port` of the node holding it; an unserved slot is empty.
    pub fn place(&self, key: &str) -> (u16, String) {
        let slot = key_slot(key.as_bytes());
        let node = match &self.map {
            Some(map) => map.owner(slot).map(|r| r.node()).unwrap_or_default(),
            None => self.single.clone(),
        };
        (slot, node)
    }

    /// The connection to `node` (`host:port`), opened on first use.
    pub fn con(&mut self, node: &str) -> Result<&mut redis::Connection, redis::RedisError> {
        if !self.cons.contains_key(node) {
            let con = connect(&node_url(&self.base_url, node), self.timeouts)?;
            self.cons.insert(node.to_string(), con);
        }
        Ok(self.cons.get_mut(node).expect("inserted above"))
    }

    /// The URL of `node` with the credentials and database of the URL the run was given.
    pub fn url_of(&self, node: &str) -> String {
        node_url(&self.base_url, node)
    }

    /// Deletes every key starting with `prefix` on every node, one UNLINK per key.
    pub fn delete_keys(&mut self, prefix: &str) -> Result<u64, redis::RedisError> {
        let mut deleted = 0;
        for node in self.addresses() {
            let con = self.con(&node)?;
            let mut cursor: u64 = 0;
            loop {
                let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(format!("{prefix}*"))
                    .arg("COUNT")
                    .arg(1000)
                    .query(con)?;
                let mut pipe = redis::pipe();
                for key in &keys {
                    pipe.cmd("UNLINK").arg(key);
                }
                if !keys.is_empty() {
                    deleted += pipe.query::<Vec<u64>>(con)?.iter().sum::<u64>();
                }
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        Ok(deleted)
    }

    /// Fails when the server's CLUSTER KEYSLOT disagrees with the harness's slot of any key.
    pub fn check_slots(&mut self, keys: &[String]) -> Result<(), String> {
        let Some(node) = self
            .addresses()
            .first()
            .cloned()
            .filter(|_| self.map.is_some())
        else {
            return Ok(());
        };
        let con = self.con(&node).map_err(|e| e.to_string())?;
        let mut pipe = redis::pipe();
        for key in keys {
            pipe.cmd("CLUSTER").arg("KEYSLOT").arg(key);
        }
        let slots: Vec<u16> = pipe.query(con).map_err(|e| e.to_string())?;
        match keys
            .iter()
            .zip(&slots)
            .find(|(k, s)| key_slot(k.as_bytes()) != **s)
        {
            Some((key, slot)) => Err(format!(
                "CLUSTER KEYSLOT {key} is {slot}, the harness computed {}",
                key_slot(key.as_bytes())
            )),
            None => Ok(()),
        }
    }
}

/// A blocking connection with the run's connect and response timeouts.
fn connect(url: &str, timeouts: ClientTimeouts) -> Result<redis::Connection, redis::RedisError> {
    let client = crate::server::endpoint::client(url)?;
    let con = client.get_connection_with_timeout(Duration::from_millis(timeouts.connect_ms))?;
    let response = Some(Duration::from_millis(timeouts.response_ms));
    con.set_read_timeout(response)?;
    con.set_write_timeout(response)?;
    Ok(con)
}

/// `redis://user:pw@host:port/db` with `host:port` replaced by `node`.
pub(super) fn node_url(url: &str, node: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("redis", url));
    let (auth, rest) = match rest.rsplit_once('@') {
        Some((auth, rest)) => (format!("{auth}@"), rest),
        None => (String::new(), rest),
    };
    let path = rest.find('/').map_or("/", |i| &rest[i..]);
    format!("{scheme}://{auth}{node}{path}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_urls_keep_scheme_credentials_and_db() {
        assert_eq!(
            node_url("redis://127.0.0.1:7000/", "127.0.0.1:7001"),
            "redis://127.0.0.1:7001/"
        );
        assert_eq!(
            node_url("redis://:pw@10.0.0.1:7000/2", "10.0.0.2:7003"),
            "redis://:pw@10.0.0.2:7003/2"
        );
        assert_eq!(node_url("rediss://h:1", "g:2"), "rediss://g:2/");
    }
}
