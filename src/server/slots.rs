//! Where keys live in a Redis Cluster: a key's hash slot (CRC16 of the key or of its hash tag,
//! mod 16384, as every node computes it) and the slot map a node reports (CLUSTER SLOTS), for any
//! cluster, the harness's own or one the user runs.

use super::ServerError;
use redis::Value;

/// Hash slots in a Redis Cluster.
pub const SLOTS: u16 = 16384;

/// The slot of `key`: CRC16 (XMODEM) of its hash tag (the text between the first `{` and the
/// next `}`, when not empty) or of the whole key, mod 16384 — the function every node applies.
pub fn key_slot(key: &[u8]) -> u16 {
    crc16_xmodem(hash_tag(key).unwrap_or(key)) % SLOTS
}

fn hash_tag(key: &[u8]) -> Option<&[u8]> {
    let open = key.iter().position(|&b| b == b'{')?;
    let len = key[open + 1..].iter().position(|&b| b == b'}')?;
    let tag = &key[open + 1..open + 1 + len];
    (!tag.is_empty()).then_some(tag)
}

fn crc16_xmodem(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in bytes {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// One range of slots and the primary serving it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SlotRange {
    pub first: u16,
    pub last: u16,
    pub host: String,
    pub port: u16,
    /// The node's cluster id (CLUSTER MYID).
    pub id: String,
}

impl SlotRange {
    /// `host:port` of the primary.
    pub fn node(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// The slot map as one node sees it, ranges in slot order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SlotMap {
    pub ranges: Vec<SlotRange>,
}

impl SlotMap {
    /// CLUSTER SLOTS on `con` (primaries only; replicas are ignored); a node that does not know
    /// its own address names it `""`, which is `host`, the address `con` was opened to.
    pub fn read(con: &mut redis::Connection, host: &str) -> Result<SlotMap, ServerError> {
        let reply: Value = redis::cmd("CLUSTER").arg("SLOTS").query(con)?;
        SlotMap::parse(&reply, host)
    }

    /// Parses a CLUSTER SLOTS reply; an empty host (`""`, a node that does not know its own
    /// address) is `default_host`.
    pub fn parse(reply: &Value, default_host: &str) -> Result<SlotMap, ServerError> {
        let bad = |what: &str| ServerError::Unsupported(format!("CLUSTER SLOTS reply: {what}"));
        let Value::Array(entries) = reply else {
            return Err(bad("not an array"));
        };
        let mut ranges = Vec::with_capacity(entries.len());
        for entry in entries {
            let Value::Array(fields) = entry else {
                return Err(bad("an entry is not an array"));
            };
            let (Some(first), Some(last), Some(Value::Array(primary))) =
                (fields.first(), fields.get(1), fields.get(2))
            else {
                return Err(bad("an entry lacks its range or primary"));
            };
            let host = match primary.first().map(text) {
                Some(h) if !h.is_empty() => h,
                _ => default_host.to_string(),
            };
            ranges.push(SlotRange {
                first: int(first).ok_or_else(|| bad("range start"))? as u16,
                last: int(last).ok_or_else(|| bad("range end"))? as u16,
                host,
                port: primary.get(1).and_then(int).ok_or_else(|| bad("port"))? as u16,
                id: primary.get(2).map(text).unwrap_or_default(),
            });
        }
        ranges.sort();
        Ok(SlotMap { ranges })
    }

    /// The range holding `slot`, if any node serves it.
    pub fn owner(&self, slot: u16) -> Option<&SlotRange> {
        self.ranges
            .iter()
            .find(|r| r.first <= slot && slot <= r.last)
    }

    /// Slots some node serves (16384 when the map covers them all).
    pub fn covered(&self) -> u32 {
        let span = |r: &SlotRange| u32::from(r.last) - u32::from(r.first) + 1;
        self.ranges.iter().map(span).sum()
    }

    /// Every primary's `host:port`, each once, in port order.
    pub fn nodes(&self) -> Vec<String> {
        let mut ports: Vec<(u16, String)> =
            self.ranges.iter().map(|r| (r.port, r.node())).collect();
        ports.sort();
        ports.dedup();
        ports.into_iter().map(|(_, node)| node).collect()
    }
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        _ => None,
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_follow_crc16_and_hash_tags() {
        // CRC16/XMODEM's check value, and slots CLUSTER KEYSLOT gave on Redis 7.0.15.
        assert_eq!(crc16_xmodem(b"123456789"), 0x31C3);
        assert_eq!(key_slot(b"user:1"), 10778);
        assert_eq!(key_slot(b"user:1:7"), 15216);
        assert_eq!(key_slot(b"a:{user:1}:w9"), key_slot(b"user:1"));
        // An empty tag or an unclosed brace hashes the whole key.
        assert_eq!(key_slot(b"{}x"), crc16_xmodem(b"{}x") % SLOTS);
        assert_eq!(key_slot(b"{user"), crc16_xmodem(b"{user") % SLOTS);
    }

    #[test]
    fn parses_cluster_slots_and_finds_owners() {
        let node = |port: i64, id: &str| {
            Value::Array(vec![
                Value::BulkString(b"127.0.0.1".to_vec()),
                Value::Int(port),
                Value::BulkString(id.as_bytes().to_vec()),
            ])
        };
        let reply = Value::Array(vec![
            Value::Array(vec![Value::Int(5461), Value::Int(16383), node(7001, "b")]),
            Value::Array(vec![Value::Int(0), Value::Int(5460), node(7000, "a")]),
        ]);
        let map = SlotMap::parse(&reply, "127.0.0.1").unwrap();
        assert_eq!(map.ranges[0].first, 0);
        assert_eq!(map.owner(5460).unwrap().id, "a");
        assert_eq!(map.owner(5461).unwrap().node(), "127.0.0.1:7001");
        assert_eq!(map.covered(), 16384);
        assert_eq!(map.nodes(), ["127.0.0.1:7000", "127.0.0.1:7001"]);
        assert!(SlotMap::parse(&Value::Int(1), "h").is_err());
    }
}
