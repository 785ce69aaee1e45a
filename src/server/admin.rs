//! Admin commands on a server the harness owns or inspects: CONFIG, INFO fields, what one key
//! costs (MEMORY USAGE, OBJECT ENCODING), and waiting until other clients have gone, so a memory
//! reading does not count their buffers.

use super::{Info, ServerError};
use std::time::{Duration, Instant};

/// The value of one config parameter; a parameter this server does not know is an error.
pub fn config_get(con: &mut redis::Connection, name: &str) -> Result<String, ServerError> {
    let pairs: std::collections::BTreeMap<String, String> =
        redis::cmd("CONFIG").arg("GET").arg(name).query(con)?;
    pairs
        .get(name)
        .cloned()
        .ok_or_else(|| ServerError::Unsupported(format!("the server has no config `{name}`")))
}

/// Sets a config parameter and returns the value the server then reports (it may normalise it).
pub fn config_set(
    con: &mut redis::Connection,
    name: &str,
    value: &str,
) -> Result<String, ServerError> {
    redis::cmd("CONFIG")
        .arg("SET")
        .arg(name)
        .arg(value)
        .query::<()>(con)?;
    config_get(con, name)
}

/// Parsed `INFO <section>` on this connection (a new connection would itself be a client).
pub fn info(con: &mut redis::Connection, section: &str) -> Result<Info, ServerError> {
    let text: String = redis::cmd("INFO").arg(section).query(con)?;
    Ok(Info::parse(&text))
}

/// A numeric INFO field; missing or non-numeric is an error naming the field.
pub fn info_u64(
    con: &mut redis::Connection,
    section: &str,
    field: &str,
) -> Result<u64, ServerError> {
    info(con, section)?
        .get(field)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| ServerError::Unsupported(format!("INFO {section} has no numeric {field}")))
}

/// Bytes the allocator has handed out to Redis (`used_memory`): exact, unlike RSS.
pub fn used_memory(con: &mut redis::Connection) -> Result<u64, ServerError> {
    info_u64(con, "memory", "used_memory")
}

/// Waits until at most `clients` are connected (the caller's own included), so clients that
/// just disconnected are freed before memory is read; returns how many were left at the end.
pub fn wait_for_clients(
    con: &mut redis::Connection,
    clients: u64,
    timeout: Duration,
) -> Result<u64, ServerError> {
    let started = Instant::now();
    loop {
        let connected = info_u64(con, "clients", "connected_clients")?;
        if connected <= clients || started.elapsed() > timeout {
            return Ok(connected);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What one key costs, counted exactly (`SAMPLES 0` reads every element of a collection);
/// None when the key does not exist.
pub fn memory_usage(con: &mut redis::Connection, key: &str) -> Result<Option<u64>, ServerError> {
    Ok(redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(key)
        .arg("SAMPLES")
        .arg(0)
        .query(con)?)
}

/// How Redis stores a key (`listpack`, `skiplist`, `hashtable`, `int`, `embstr`...); None when
/// the key does not exist.
pub fn object_encoding(
    con: &mut redis::Connection,
    key: &str,
) -> Result<Option<String>, ServerError> {
    Ok(redis::cmd("OBJECT").arg("ENCODING").arg(key).query(con)?)
}

/// Deletes every key of every database, freeing it before replying (never lazily), so the next
/// memory reading starts from what the server itself holds.
pub fn flush_all_sync(con: &mut redis::Connection) -> Result<(), ServerError> {
    redis::cmd("FLUSHALL").arg("SYNC").query::<()>(con)?;
    Ok(())
}
