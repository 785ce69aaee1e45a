//! Moving slots between the nodes of a managed cluster, the way `redis-cli --cluster reshard`
//! does it, slot by slot: the target IMPORTING, the source MIGRATING, every key MIGRATEd, then
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
        let mut keys = 0;
        for slot in first..=last {
            setslot(&mut on_target, slot, "IMPORTING", &source_id)?;
            setslot(&mut on_source, slot, "MIGRATING", &target_id)?;
            loop {
                let batch: Vec<String> = redis::cmd("CLUSTER")
                    .arg("GETKEYSINSLOT")
                    .arg(slot)
                    .arg(BATCH)
                    .query(&mut on_source)?;
                if batch.is_empty() {
                    break;
                }
                redis::cmd("MIGRATE")
                    .arg("127.0.0.1")
                    .arg(to)
                    .arg("")
                    .arg(0)
                    .arg(ADMIN_TIMEOUT.as_millis() as u64)
                    .arg("KEYS")
                    .arg(&batch)
                    .query::<()>(&mut on_source)?;
                keys += batch.len() as u64;
            }
            // The target first, so the slot is never without an owner that knows it.
            for con in [&mut on_target, &mut on_source]
                .into_iter()
                .chain(others.iter_mut())
            {
                setslot(con, slot, "NODE", &target_id)?;
            }
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

fn setslot(
    con: &mut redis::Connection,
    slot: u16,
    state: &str,
    node: &str,
) -> Result<(), ServerError> {
    redis::cmd("CLUSTER")
        .arg("SETSLOT")
        .arg(slot)
        .arg(state)
        .arg(node)
        .query::<()>(con)?;
    Ok(())
}
