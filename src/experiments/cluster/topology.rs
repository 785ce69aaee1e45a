//! Where the calls of one phase go: one server, or the primaries of a cluster by the slot map it
//! reported, and a blocking connection per node with the run's client timeouts (the frame deletes
//! the run's keys on every node: `Target::delete_keys_with_prefix`).

use crate::load::ClientTimeouts;
use crate::server::{key_slot, Endpoint, ServerError, SlotMap};
use std::collections::BTreeMap;
use std::time::Duration;

/// The servers of one phase.
pub(super) struct Topology {
    /// None: a single server without cluster mode.
    pub map: Option<SlotMap>,
    /// The single server's `host:port` (one-redis).
    single: String,
    /// The server named first; other nodes are reached with its credentials, db and TLS.
    base: Endpoint,
    timeouts: ClientTimeouts,
    cons: BTreeMap<String, redis::Connection>,
}

impl Topology {
    /// One server without cluster mode.
    pub fn single(endpoint: &Endpoint, timeouts: ClientTimeouts) -> Topology {
        Topology {
            map: None,
            single: endpoint.host_port(),
            base: endpoint.clone(),
            timeouts,
            cons: BTreeMap::new(),
        }
    }

    /// The cluster whose node `endpoint` names, by the slot map that node reports now.
    pub fn cluster(endpoint: &Endpoint, timeouts: ClientTimeouts) -> Result<Topology, ServerError> {
        let mut topology = Topology::single(endpoint, timeouts);
        let map = SlotMap::read(topology.con(&endpoint.host_port())?, &endpoint.host)?;
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
            let con = connect(&self.endpoint_of(node), self.timeouts)?;
            self.cons.insert(node.to_string(), con);
        }
        Ok(self.cons.get_mut(node).expect("inserted above"))
    }

    /// `node` (`host:port`) with the credentials, database and TLS of the server named first.
    pub fn endpoint_of(&self, node: &str) -> Endpoint {
        self.base.at_node(node)
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
fn connect(
    endpoint: &Endpoint,
    timeouts: ClientTimeouts,
) -> Result<redis::Connection, redis::RedisError> {
    let client = endpoint.client()?;
    let con = client.get_connection_with_timeout(Duration::from_millis(timeouts.connect_ms))?;
    let response = Some(Duration::from_millis(timeouts.response_ms));
    con.set_read_timeout(response)?;
    con.set_write_timeout(response)?;
    Ok(con)
}
