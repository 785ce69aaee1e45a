//! [`Endpoint`]: everything a client needs to reach one server (address, credentials, database,
//! TLS), as typed fields instead of a URL string. Experiments get endpoints from the topology the
//! frame built; the `redis://` URL is derived only where a string must cross a process boundary
//! (a worker's arguments, redis-cli) or reach the redis crate ([`Endpoint::client`]).

use super::endpoint::{self, TlsFiles};

/// One server as a client reaches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Host name or address (loopback for the servers ratelab starts).
    pub host: String,
    pub port: u16,
    /// `AUTH` with these, when the server wants it.
    pub credentials: Option<Credentials>,
    /// `SELECT` of this database, when named.
    pub db: Option<u32>,
    /// TLS with these files (none named: the system's roots), or a plain connection.
    pub tls: Option<TlsFiles>,
    // What else a user's URL carried for the redis crate (`valkey` scheme, other query pairs, a
    // `#insecure` fragment), kept so the derived URL means what the user's did.
    extra: Extra,
}

/// A user name (empty: the default user) and its password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    pub username: String,
    pub password: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Extra {
    valkey_scheme: bool,
    query: Vec<(String, String)>,
    fragment: Option<String>,
}

impl Endpoint {
    /// A server on loopback `port`, no password, no TLS: what ratelab starts by default.
    pub fn loopback(port: u16) -> Self {
        Endpoint {
            host: "127.0.0.1".into(),
            port,
            credentials: None,
            db: None,
            tls: None,
            extra: Extra::default(),
        }
    }

    /// The endpoint a URL names (a `--redis-url` after [`endpoint::user_url`] checked it).
    pub fn from_url(url: &str) -> Result<Self, redis::RedisError> {
        let parsed =
            url::Url::parse(url).map_err(|e| endpoint::invalid(format!("not a URL ({e})")))?;
        let tls = endpoint::is_tls(url).then(|| endpoint::tls_files(&parsed));
        let username = endpoint::percent_decode(parsed.username());
        let password = parsed.password().map(endpoint::percent_decode);
        let credentials = (!username.is_empty() || password.is_some())
            .then_some(Credentials { username, password });
        let db = parsed.path().trim_matches('/');
        let db = match db.is_empty() {
            true => None,
            false => Some(
                db.parse()
                    .map_err(|_| endpoint::invalid(format!("`/{db}` is not a database")))?,
            ),
        };
        let query = (parsed.query_pairs())
            .filter(|(name, _)| !endpoint::is_tls_param(name))
            .map(|(n, v)| (n.into_owned(), v.into_owned()))
            .collect();
        Ok(Endpoint {
            host: parsed.host_str().unwrap_or("127.0.0.1").to_string(),
            port: parsed.port().unwrap_or(6379),
            credentials,
            db,
            tls,
            extra: Extra {
                valkey_scheme: parsed.scheme().starts_with("valkey"),
                query,
                fragment: parsed.fragment().map(str::to_string),
            },
        })
    }

    /// The same server description at another address: a node of the same cluster, or a proxy in
    /// front of the server.
    pub fn at(&self, host: &str, port: u16) -> Self {
        Endpoint {
            host: host.to_string(),
            port,
            ..self.clone()
        }
    }

    /// The same server description at `node` (`host:port`, as CLUSTER SLOTS and MONITOR name
    /// nodes); a node that is not an address stays this one, and the connection error then names
    /// where it went.
    pub fn at_node(&self, node: &str) -> Self {
        let parsed = node
            .rsplit_once(':')
            .and_then(|(host, port)| Some((host, port.parse().ok()?)));
        match parsed {
            Some((host, port)) => self.at(host.trim_matches(['[', ']']), port),
            None => self.clone(),
        }
    }

    /// The URL for a process boundary or the redis crate: `redis://` or `rediss://`, the password
    /// in it and the TLS files as ratelab's query parameters (see [`endpoint`]).
    pub fn url(&self) -> String {
        let scheme = match (self.extra.valkey_scheme, self.tls.is_some()) {
            (false, false) => "redis",
            (false, true) => "rediss",
            (true, false) => "valkey",
            (true, true) => "valkeys",
        };
        let host = match self.host.contains(':') && !self.host.starts_with('[') {
            true => format!("[{}]", self.host),
            false => self.host.clone(),
        };
        let db = self.db.map(|d| d.to_string()).unwrap_or_default();
        let plain = format!("{scheme}://{host}:{}/{db}", self.port);
        let Ok(mut url) = url::Url::parse(&plain) else {
            return plain;
        };
        if let Some(c) = &self.credentials {
            // Cannot fail: the URL has a host.
            let _ = url.set_username(&c.username);
            let _ = url.set_password(c.password.as_deref());
        }
        let files = self.tls.clone().unwrap_or_default();
        if !files.is_empty() || !self.extra.query.is_empty() {
            let mut query = url.query_pairs_mut();
            for (name, file) in endpoint::tls_params(&files) {
                query.append_pair(name, &file.to_string_lossy());
            }
            query.extend_pairs(&self.extra.query);
        }
        url.set_fragment(self.extra.fragment.as_deref());
        url.into()
    }

    /// The URL with the password masked: what meta.json, logs and errors show.
    pub fn masked(&self) -> String {
        endpoint::masked(&self.url())
    }

    /// `host:port`, as MONITOR names a connection and tools take an address.
    pub fn host_port(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// A client with explicit TLS files read now.
    pub fn client(&self) -> Result<redis::Client, redis::RedisError> {
        endpoint::client(&self.url())
    }

    /// A blocking admin connection with explicit timeouts.
    pub fn connection(&self) -> Result<redis::Connection, super::ServerError> {
        super::admin_connection(&self.url())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn nodes_keep_scheme_credentials_db_and_tls() {
        let at = |url: &str, node: &str| Endpoint::from_url(url).unwrap().at_node(node).url();
        assert_eq!(
            at("redis://127.0.0.1:7000/", "127.0.0.1:7001"),
            "redis://127.0.0.1:7001/"
        );
        assert_eq!(
            at("redis://:pw@10.0.0.1:7000/2", "10.0.0.2:7003"),
            "redis://:pw@10.0.0.2:7003/2"
        );
        assert_eq!(
            at("rediss://h:1/?tls-ca=%2Fca", "g:2"),
            "rediss://g:2/?tls-ca=%2Fca"
        );
        assert_eq!(
            at("redis://127.0.0.1:7000/", "[::1]:7002"),
            "redis://[::1]:7002/"
        );
    }

    use super::*;

    #[test]
    fn a_url_and_its_endpoint_say_the_same() {
        for url in [
            "redis://127.0.0.1:6379/",
            "redis://:s3cret@127.0.0.1:41209/",
            "redis://ratelab:a%40b@10.0.0.1:6380/2",
            "rediss://u:p@127.0.0.1:6390/1?tls-ca=%2Fx%2Fca.crt&tls-cert=%2Fx%2Fc.crt&tls-key=%2Fx%2Fc.key",
            "rediss://h.example:6390/#insecure",
            "valkey://127.0.0.1:7000/?protocol=resp3",
        ] {
            assert_eq!(Endpoint::from_url(url).unwrap().url(), url);
        }
        let e = Endpoint::from_url("redis://ratelab:a%40b@10.0.0.1:6380/2").unwrap();
        let c = e.credentials.clone().unwrap();
        assert_eq!(
            (c.username.as_str(), c.password.as_deref()),
            ("ratelab", Some("a@b"))
        );
        assert_eq!(
            (e.host_port(), e.db),
            ("10.0.0.1:6380".to_string(), Some(2))
        );
        assert_eq!(e.masked(), "redis://ratelab:***@10.0.0.1:6380/2");
        assert_eq!(
            e.at("127.0.0.1", 7001).url(),
            "redis://ratelab:a%40b@127.0.0.1:7001/2"
        );
        assert_eq!(Endpoint::loopback(6400).url(), "redis://127.0.0.1:6400/");
    }
}
