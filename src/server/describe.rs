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
    /// The server's URL with its password masked.
    pub url: String,
    /// True when the harness talked to it over TLS (it changes latency and CPU per decision).
    #[serde(default)]
    pub tls: bool,
    pub binary: Option<String>,
    pub version: String,
    pub mode: String,
    /// `INFO server` fields worth keeping (os, arch, allocator, multiplexing api...).
    pub server_info: BTreeMap<String, String>,
    /// CONFIG GET values that change results.
    pub config: BTreeMap<String, String>,
    /// Why `config` is empty: a user's server whose ACL (rightly) denies CONFIG.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_unreadable: Option<String>,
}

impl Target {
    /// Reads the server's version, build and config as found.
    pub fn describe(&self) -> Result<RedisMeta, ServerError> {
        let info = self.info("server")?;
        let mut con = self.connection()?;
        let keep = [
            "redis_version",
            "valkey_version",
            "server_name",
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
            Target::External { .. } | Target::NoServer => (false, None),
        };
        let (config, config_unreadable) = match config_snapshot(&mut con) {
            Ok(config) => (config.into_iter().collect(), None),
            Err(ServerError::Redis(e)) if !managed && e.code() == Some("NOPERM") => (
                BTreeMap::new(),
                Some(format!("CONFIG GET denied by the user's ACL: {e}")),
            ),
            Err(e) => return Err(e),
        };
        Ok(RedisMeta {
            managed,
            url: super::endpoint::masked(&self.url()),
            tls: super::endpoint::is_tls(&self.url()),
            binary,
            version: server_version(&info),
            mode: info.get("redis_mode").unwrap_or("unknown").to_string(),
            server_info,
            config,
            config_unreadable,
        })
    }
}

/// The version a server reports of itself: Valkey also answers `redis_version` (7.2.4, the Redis
/// it is compatible with), so its own `valkey_version` comes first, named.
fn server_version(info: &super::Info) -> String {
    match (info.get("valkey_version"), info.get("redis_version")) {
        (Some(valkey), _) => format!("valkey {valkey}"),
        (None, Some(redis)) => redis.to_string(),
        (None, None) => "unknown".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valkey_is_named_by_its_own_version() {
        let valkey = super::super::Info::parse(
            "# Server\r\nredis_version:7.2.4\r\nvalkey_version:8.0.1\r\n",
        );
        assert_eq!(server_version(&valkey), "valkey 8.0.1");
        let redis = super::super::Info::parse("# Server\r\nredis_version:7.0.15\r\n");
        assert_eq!(server_version(&redis), "7.0.15");
    }
}
