//! One string names a server completely: `redis://user:pass@host:port/db`, or `rediss://` with the
//! TLS files as ratelab's own query parameters (`?tls-ca=FILE&tls-cert=FILE&tls-key=FILE`). Every
//! connection the harness opens (pooled, worker processes, MONITOR, probes, admin) goes through
//! [`client`], so credentials, db and TLS reach all of them; worker processes get the same string.
//! What is printed or written is [`masked`]: the password never leaves the process.

use std::path::{Path, PathBuf};

/// ratelab's query parameters for the TLS files; the redis crate ignores unknown ones.
const TLS_CA: &str = "tls-ca";
const TLS_CERT: &str = "tls-cert";
const TLS_KEY: &str = "tls-key";

/// What stands in for a password wherever a URL is shown.
pub const MASK: &str = "***";

/// A URL that cannot be used, with the reason; the URL in the message is masked.
#[derive(Debug, thiserror::Error)]
#[error("--redis-url {url}: {reason}")]
pub struct UrlError {
    pub url: String,
    pub reason: String,
}

/// The files a TLS client presents and trusts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsFiles {
    /// CA that signed the server's certificate (else the system's roots).
    pub ca: Option<PathBuf>,
    /// Client certificate and key, for a server with `tls-auth-clients yes`.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

impl TlsFiles {
    /// True when no file is named.
    pub fn is_empty(&self) -> bool {
        self.ca.is_none() && self.cert.is_none() && self.key.is_none()
    }
}

/// Checks a user's URL (scheme, host, db number) and folds the TLS files into it; a TLS file on a
/// `redis://` URL, a client certificate without its key or a file that cannot be read is an error
/// now, before any server is touched.
pub fn user_url(url: &str, tls: &TlsFiles) -> Result<String, UrlError> {
    let fail = |reason: String| UrlError {
        url: masked(url),
        reason,
    };
    let mut parsed = url::Url::parse(url).map_err(|e| fail(format!("not a URL ({e})")))?;
    let tls_scheme = match parsed.scheme() {
        "redis" | "valkey" => false,
        "rediss" | "valkeys" => true,
        other => {
            return Err(fail(format!(
                "scheme `{other}`: use redis:// or, for TLS, rediss://"
            )))
        }
    };
    if !tls_scheme && !tls.is_empty() {
        return Err(fail(
            "--tls-ca, --tls-cert and --tls-key need a rediss:// URL".into(),
        ));
    }
    if tls.cert.is_some() != tls.key.is_some() {
        return Err(fail(
            "--tls-cert and --tls-key go together (a client certificate and its key)".into(),
        ));
    }
    for file in [&tls.ca, &tls.cert, &tls.key].into_iter().flatten() {
        std::fs::metadata(file).map_err(|e| fail(format!("{}: {e}", file.display())))?;
    }
    let db = parsed.path().trim_matches('/');
    if !db.is_empty() && db.parse::<u32>().is_err() {
        return Err(fail(format!(
            "`/{db}` is not a database number (redis://host:port/0)"
        )));
    }
    if !tls.is_empty() {
        let mut query = parsed.query_pairs_mut();
        for (name, file) in tls_params(tls) {
            query.append_pair(name, &file.to_string_lossy());
        }
    }
    if parsed.query() == Some("") {
        parsed.set_query(None);
    }
    redis::Client::open(strip_tls_params(&parsed).as_str()).map_err(|e| fail(e.to_string()))?;
    Ok(parsed.into())
}

/// The query parameters that name `tls`'s files.
pub fn tls_params(tls: &TlsFiles) -> impl Iterator<Item = (&'static str, &Path)> {
    [
        (TLS_CA, &tls.ca),
        (TLS_CERT, &tls.cert),
        (TLS_KEY, &tls.key),
    ]
    .into_iter()
    .filter_map(|(name, file)| Some((name, file.as_deref()?)))
}

/// A client for `url`, with the TLS files its query names (PEM) read now.
pub fn client(url: &str) -> Result<redis::Client, redis::RedisError> {
    let parsed = parse(url)?;
    let plain = strip_tls_params(&parsed);
    match certificates(&parsed)? {
        None => redis::Client::open(plain.as_str()),
        Some(certs) => redis::Client::build_with_tls(plain.as_str(), certs),
    }
}

/// `url` as the redis crate's cluster client takes it, and the certificates to give it.
pub fn cluster_node(
    url: &str,
) -> Result<(String, Option<redis::TlsCertificates>), redis::RedisError> {
    let parsed = parse(url)?;
    Ok((strip_tls_params(&parsed), certificates(&parsed)?))
}

fn parse(url: &str) -> Result<url::Url, redis::RedisError> {
    url::Url::parse(url).map_err(|e| invalid(format!("not a URL ({e})")))
}

/// The certificates the URL's TLS files hold, read now; None when it names none.
fn certificates(url: &url::Url) -> Result<Option<redis::TlsCertificates>, redis::RedisError> {
    let tls = tls_files(url);
    if tls.is_empty() {
        return Ok(None);
    }
    let read =
        |path: &Path| std::fs::read(path).map_err(|e| invalid(format!("{}: {e}", path.display())));
    let client_tls = match (&tls.cert, &tls.key) {
        (Some(cert), Some(key)) => Some(redis::ClientTlsConfig {
            client_cert: read(cert)?,
            client_key: read(key)?,
        }),
        _ => None,
    };
    let root_cert = tls.ca.as_deref().map(read).transpose()?;
    Ok(Some(redis::TlsCertificates {
        client_tls,
        root_cert,
    }))
}

pub(super) fn invalid(detail: String) -> redis::RedisError {
    redis::RedisError::from((
        redis::ErrorKind::InvalidClientConfig,
        "bad server URL",
        detail,
    ))
}

/// The TLS files a URL names.
pub(super) fn tls_files(url: &url::Url) -> TlsFiles {
    let mut files = TlsFiles::default();
    for (name, value) in url.query_pairs() {
        let slot = match name.as_ref() {
            TLS_CA => &mut files.ca,
            TLS_CERT => &mut files.cert,
            TLS_KEY => &mut files.key,
            _ => continue,
        };
        *slot = Some(PathBuf::from(value.as_ref()));
    }
    files
}

/// A URL for a library in another language (a limiter process): the URL without ratelab's own
/// TLS query parameters, and the files they named.
pub fn for_library(url: &str) -> Result<(String, TlsFiles), redis::RedisError> {
    let parsed = parse(url)?;
    Ok((strip_tls_params(&parsed), tls_files(&parsed)))
}

/// True for the query parameters that name TLS files (ratelab's own, not the redis crate's).
pub(super) fn is_tls_param(name: &str) -> bool {
    [TLS_CA, TLS_CERT, TLS_KEY].contains(&name)
}

/// The URL without ratelab's own query parameters, as the redis crate takes it.
fn strip_tls_params(url: &url::Url) -> String {
    let mut plain = url.clone();
    let kept: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(name, _)| !is_tls_param(name))
        .map(|(n, v)| (n.into_owned(), v.into_owned()))
        .collect();
    plain.set_query(None);
    if !kept.is_empty() {
        plain.query_pairs_mut().extend_pairs(kept);
    }
    plain.into()
}

/// The same server for redis-benchmark and redis-cli: `-h -p`, `--user -a`, `--dbnum`, and
/// `--tls --cacert --cert --key`. (The password is on their command line, as those tools take it.)
pub fn tool_args(url: &str) -> Result<Vec<String>, redis::RedisError> {
    let parsed = parse(url)?;
    let host = parsed
        .host_str()
        .unwrap_or("127.0.0.1")
        .trim_matches(['[', ']']);
    let port = parsed.port().unwrap_or(6379);
    let mut args = vec!["-h".into(), host.into(), "-p".into(), port.to_string()];
    if let Some(password) = parsed.password() {
        // The URL keeps userinfo percent-encoded; the tools want it as typed.
        let plain = percent_decode(password);
        if !parsed.username().is_empty() {
            args.extend(["--user".into(), percent_decode(parsed.username())]);
        }
        args.extend(["-a".into(), plain]);
    }
    let db = parsed.path().trim_matches('/');
    if !db.is_empty() {
        args.extend(["--dbnum".into(), db.to_string()]);
    }
    if is_tls(url) {
        args.push("--tls".into());
        let tls = tls_files(&parsed);
        for (flag, file) in [
            ("--cacert", &tls.ca),
            ("--cert", &tls.cert),
            ("--key", &tls.key),
        ] {
            if let Some(file) = file {
                args.extend([flag.to_string(), file.display().to_string()]);
            }
        }
    }
    Ok(args)
}

/// `%XX` escapes of a URL's userinfo back to the bytes they stand for.
pub(super) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = || std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok();
        match (bytes[i], hex().and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The URL with its password replaced by [`MASK`]: what meta.json, logs and errors show.
/// Something that is not a URL with a host is masked by its shape (`masked_by_shape`), the
/// rest shown as typed so the user sees what is wrong with it.
pub fn masked(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.has_host() => {
            if parsed.password().is_some() {
                // Cannot fail: a URL with a password has a host.
                let _ = parsed.set_password(Some(MASK));
            }
            parsed.into()
        }
        _ => masked_by_shape(url),
    }
}

/// `user:password@` by its shape: whatever lies between the first `:` after the scheme and the
/// last `@` is masked (over-masking an odd string is safe, showing a password is not).
fn masked_by_shape(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (&url[..scheme.len() + 3], rest),
        None => ("", url),
    };
    let Some(at) = rest.rfind('@') else {
        return url.to_string();
    };
    match rest[..at].split_once(':') {
        Some((user, _)) => format!("{scheme}{user}:{MASK}{}", &rest[at..]),
        None => url.to_string(),
    }
}

/// True for `rediss://` (and `valkeys://`).
pub fn is_tls(url: &str) -> bool {
    url.starts_with("rediss://") || url.starts_with("valkeys://")
}

/// The same server description (credentials, db, TLS) at another address: a node of the same
/// cluster, or a proxy in front of the server.
pub fn at_address(url: &str, host: &str, port: u16) -> Result<String, redis::RedisError> {
    let mut parsed = parse(url)?;
    parsed
        .set_host(Some(host))
        .map_err(|e| invalid(format!("host {host}: {e}")))?;
    parsed
        .set_port(Some(port))
        .map_err(|()| invalid(format!("port {port}")))?;
    Ok(parsed.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_is_masked_and_everything_else_kept() {
        let url = "redis://ratelab:s3cret@10.0.0.1:6380/2";
        assert_eq!(masked(url), "redis://ratelab:***@10.0.0.1:6380/2");
        assert_eq!(masked("redis://:pw@h:1/"), "redis://:***@h:1/");
        assert_eq!(masked("redis://127.0.0.1:6379/"), "redis://127.0.0.1:6379/");
        assert_eq!(masked("redis//:pw@h"), "redis//:***@h");
        // Not a URL: shown as typed, but for a password by its shape.
        assert_eq!(masked("notaurl"), "notaurl");
        assert_eq!(masked("redis://h:port/"), "redis://h:port/");
        assert_eq!(masked("redis://u:pw@"), "redis://u:***@");
        assert_eq!(masked("redis://:p@w@h:x/"), "redis://:***@h:x/");
        // A scheme-less `user:pw@host:port` parses as a URL of scheme `user`, with no host.
        assert_eq!(masked("u:pw@h:6379"), "u:***@h:6379");
    }

    #[test]
    fn tls_files_ride_in_the_url_and_are_stripped_for_the_redis_crate() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.crt");
        std::fs::write(&ca, "x").unwrap();
        let tls = TlsFiles {
            ca: Some(ca.clone()),
            ..TlsFiles::default()
        };
        let url = user_url("rediss://u:p@127.0.0.1:6390/1", &tls).unwrap();
        let parsed = url::Url::parse(&url).unwrap();
        assert_eq!(tls_files(&parsed), tls);
        assert_eq!(strip_tls_params(&parsed), "rediss://u:p@127.0.0.1:6390/1");
        let moved = at_address(&url, "127.0.0.1", 7000).unwrap();
        assert_eq!(tls_files(&url::Url::parse(&moved).unwrap()), tls);
        assert!(moved.starts_with("rediss://u:p@127.0.0.1:7000/1?"));
    }

    #[test]
    fn tools_get_the_same_server_user_password_db_and_tls_files() {
        let args = tool_args("rediss://u:a%40b@10.0.0.1:6390/2?tls-ca=%2Fx%2Fca.crt").unwrap();
        let want = "-h 10.0.0.1 -p 6390 --user u -a a@b --dbnum 2 --tls --cacert /x/ca.crt";
        assert_eq!(args.join(" "), want);
        assert_eq!(
            tool_args("redis://127.0.0.1:7000/").unwrap().join(" "),
            "-h 127.0.0.1 -p 7000"
        );
    }

    #[test]
    fn bad_urls_are_refused_with_the_password_masked() {
        let none = TlsFiles::default();
        let ca = TlsFiles {
            ca: Some("/nonexistent/ca.crt".into()),
            ..TlsFiles::default()
        };
        let cases = [
            ("http://:pw@h:1/", &none, "scheme `http`"),
            ("redis://:pw@h:1/x", &none, "not a database number"),
            ("redis://:pw@h:1/", &ca, "need a rediss:// URL"),
            ("rediss://:pw@h:1/", &ca, "/nonexistent/ca.crt"),
        ];
        for (url, tls, want) in cases {
            let err = user_url(url, tls).unwrap_err().to_string();
            assert!(err.contains(want) && !err.contains("pw"), "{url}: {err}");
        }
    }
}
