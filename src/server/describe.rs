//! What meta.json says about the server measured: version, mode, build, and the config values
//! that change results, read from the server itself.

use super::{config_snapshot, ServerError, Target};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The server measured.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct RedisMeta {
    /// True when the harness started the server (false for --redis-url).
    pub managed: bool,
    pub url: String,
    pub binary: Option<String>,
    pub version: String,
    pub mode: String,
    /// `INFO server` fields worth keeping (os, arch, allocator, multiplexing api...).
    pub server_info: BTreeMap<String, String>,
    /// CONFIG GET values that change results.
    pub config: BTreeMap<String, String>,
}

impl Target {
    /// Reads the server's version, build and config as found.
    pub fn describe(&self) -> Result<RedisMeta, ServerError> {
        let info = self.info("server")?;
        let mut con = self.connection()?;
        let keep = [
            "redis_version",
            "redis_mode",
            "os",
            "arch_bits",
            "multiplexing_api",
            "gcc_version",
            "executable",
        ];
        let server_info: BTreeMap<String, String> = keep
            .iter()
            .filter_map(|k| info.get(k).map(|v| (k.to_string(), v.to_string())))
            .collect();
        let (managed, binary) = match self {
            Target::Managed(s) => (true, Some(s.binary().display().to_string())),
            Target::External { .. } => (false, None),
        };
        Ok(RedisMeta {
            managed,
            url: self.url(),
            binary,
            version: info.get("redis_version").unwrap_or("unknown").to_string(),
            mode: info.get("redis_mode").unwrap_or("unknown").to_string(),
            server_info,
            config: config_snapshot(&mut con)?.into_iter().collect(),
        })
    }
}
