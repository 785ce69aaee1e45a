//! Moving slots between the nodes of a managed cluster, the way `redis-cli --cluster reshard`
//! does it for each slot: the target IMPORTING, the source MIGRATING, every key MIGRATEd, then
//! every node told the slot's new owner (SETSLOT NODE), so no node keeps redirecting to the old one.

use super::{RedisCluster, ServerError, ADMIN_TIMEOUT};
use std::time::{Duration, Instant};

/// What a move did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlotMove {
    /// Slots moved.
    pub slots: u32,
    /// Keys MIGRATEd with them.
    pub keys: u64,
    /// From the first SETSLOT to the last.
    pub moved: Duration,
    /// From then until every node reported the same map again.
    pub converge: Duration,
}

/// Keys fetched and migrated per MIGRATE.
const BATCH: usize = 100;

impl RedisCluster {
    /// Moves slots `first..=last` from the node on port `from` to the node on port `to`, with
    /// their keys, and waits until every node agrees on the new map.
    pub fn move_slots(
        &self,
        first: u16,
        last: u16,
        from: u16,
        to: u16,
    ) -> Result<SlotMove, ServerError> {
        let missing = |port| ServerError::Unsupported(format!("no cluster node on port {port}"));
        let source = self.node_on(from).ok_or_else(|| missing(from))?;
        let target = self.node_on(to).ok_or_else(|| missing(to))?;
        let mut on_source = source.connection()?;
        let mut on_target = target.connection()?;
        let mut others = Vec::new();
        for node in self
            .nodes()
            .iter()
            .filter(|n| n.port() != from && n.port() != to)
        {
            others.push(node.connection()?);
        }
        let source_id = my_id(&mut on_source)?;
        let target_id = my_id(&mut on_target)?;
        let started = Instant::now();
        let slots: Vec<u16> = (first..=last).collect();
        // Each step for every slot in one pipeline: the order per slot is redis-cli's, and no
        // step of a slot starts before the previous step of every slot is done.
        setslots(&mut on_target, &slots, "IMPORTING", &source_id)?;
        setslots(&mut on_source, &slots, "MIGRATING", &target_id)?;
        let mut keys = 0;
        loop {
            let mut fetch = redis::pipe();
            for &slot in &slots {
                fetch
                    .cmd("CLUSTER")
                    .arg("GETKEYSINSLOT")
                    .arg(slot)
                    .arg(BATCH);
            }
            let batches: Vec<Vec<String>> = fetch.query(&mut on_source)?;
            let batches: Vec<&Vec<String>> = batches.iter().filter(|b| !b.is_empty()).collect();
            if batches.is_empty() {
                break;
            }
            // One MIGRATE per slot: keys of several slots in one command would be refused.
            let mut migrate = redis::pipe();
            for batch in &batches {
                migrate
                    .cmd("MIGRATE")
                    .arg("127.0.0.1")
                    .arg(to)
                    .arg("")
                    .arg(0)
                    .arg(ADMIN_TIMEOUT.as_millis() as u64)
                    .arg("KEYS")
                    .arg(*batch)
                    .ignore();
                keys += batch.len() as u64;
            }
            migrate.query::<()>(&mut on_source)?;
        }
        // The target first, so the slot is never without an owner that knows it.
        for con in [&mut on_target, &mut on_source]
            .into_iter()
            .chain(others.iter_mut())
        {
            setslots(con, &slots, "NODE", &target_id)?;
        }
        let moved = started.elapsed();
        let converging = Instant::now();
        self.wait_agreed()?;
        Ok(SlotMove {
            slots: u32::from(last) - u32::from(first) + 1,
            keys,
            moved,
            converge: converging.elapsed(),
        })
    }
}

fn my_id(con: &mut redis::Connection) -> Result<String, ServerError> {
    Ok(redis::cmd("CLUSTER").arg("MYID").query(con)?)
}

/// CLUSTER SETSLOT <slot> <state> <node> for every slot, in one pipeline.
fn setslots(
    con: &mut redis::Connection,
    slots: &[u16],
    state: &str,
    node: &str,
) -> Result<(), ServerError> {
    let mut pipe = redis::pipe();
    for &slot in slots {
        pipe.cmd("CLUSTER")
            .arg("SETSLOT")
            .arg(slot)
            .arg(state)
            .arg(node)
            .ignore();
    }
    pipe.query::<()>(con)?;
    Ok(())
}
