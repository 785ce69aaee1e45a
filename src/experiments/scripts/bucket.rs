//! What scripts's three parts share: the bucket limiter invoked one way, loading its script and
//! the library as a deploy does, and reading back what the server still has.

use super::Params;
use crate::experiments::PhaseError;
use crate::limiter::{library, Invocation, Limiter, LIBRARY_NAME};
use redis::RedisResult;

/// The token bucket invoked as `mode`.
pub(super) fn bucket(p: &Params, mode: Invocation) -> Result<Limiter, PhaseError> {
    Limiter::with_invocation(p.strategy, p.limit(), mode)
        .map_err(|e| PhaseError::Invalid(e.to_string()))
}

/// The bucket script's source and SHA-1.
pub(super) fn bucket_script(p: &Params) -> (&'static str, String) {
    let limiter = Limiter::new(p.strategy, p.limit());
    let (source, hash) = limiter.script().unwrap_or_default();
    (source, hash.to_string())
}

/// Caches the bucket script and loads (replacing) the library, as a deploy does before traffic:
/// every mode then starts with what it needs.
pub(super) fn load_scripts(con: &mut redis::Connection, source: &str) -> RedisResult<()> {
    redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(source)
        .query::<String>(con)?;
    load_library(con)
}

/// FUNCTION LOAD REPLACE of the `ratelab` library.
pub(super) fn load_library(con: &mut redis::Connection) -> RedisResult<()> {
    (redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("REPLACE")
        .arg(library()))
    .query::<String>(con)?;
    Ok(())
}

/// SCRIPT EXISTS of one script: 1 when the server has it cached, else 0.
pub(super) fn script_exists(con: &mut redis::Connection, hash: &str) -> RedisResult<u8> {
    let exists: Vec<u8> = redis::cmd("SCRIPT").arg("EXISTS").arg(hash).query(con)?;
    Ok(exists.first().copied().unwrap_or(0))
}

/// How many libraries FUNCTION LIST names `ratelab` (it matches names by pattern: one or none).
pub(super) fn libraries(con: &mut redis::Connection) -> RedisResult<u32> {
    let listed: Vec<redis::Value> = (redis::cmd("FUNCTION").arg("LIST"))
        .arg("LIBRARYNAME")
        .arg(LIBRARY_NAME)
        .query(con)?;
    Ok(listed.len() as u32)
}
