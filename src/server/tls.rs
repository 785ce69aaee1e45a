//! Certificates for a managed server started with TLS: a CA made for this one server, a server
//! certificate for 127.0.0.1 signed by it, and a client certificate (the server asks for one, as
//! `tls-auth-clients yes` servers do), all written to the server's own temporary directory.

use super::endpoint::TlsFiles;
use super::ServerError;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use std::path::{Path, PathBuf};

/// The files of a managed TLS server.
#[derive(Debug, Clone)]
pub struct ServerCerts {
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

impl ServerCerts {
    /// Where the files of the server whose directory is `dir` are (made by [`make_certs`]).
    pub fn in_dir(dir: &Path) -> Self {
        ServerCerts {
            ca: dir.join("ca.crt"),
            server_cert: dir.join("server.crt"),
            server_key: dir.join("server.key"),
            client_cert: dir.join("client.crt"),
            client_key: dir.join("client.key"),
        }
    }

    /// What a client of this server presents and trusts.
    pub fn client_files(&self) -> TlsFiles {
        TlsFiles {
            ca: Some(self.ca.clone()),
            cert: Some(self.client_cert.clone()),
            key: Some(self.client_key.clone()),
        }
    }

    /// redis-server's TLS arguments: TLS only (the plain port is closed), clients must present a
    /// certificate signed by the CA, replication and the cluster bus over TLS too.
    pub fn server_args(&self, port: u16) -> Vec<String> {
        let path = |p: &Path| p.display().to_string();
        [
            ("port", "0".to_string()),
            ("tls-port", port.to_string()),
            ("tls-cert-file", path(&self.server_cert)),
            ("tls-key-file", path(&self.server_key)),
            ("tls-ca-cert-file", path(&self.ca)),
            ("tls-auth-clients", "yes".to_string()),
            ("tls-replication", "yes".to_string()),
            ("tls-cluster", "yes".to_string()),
        ]
        .into_iter()
        .flat_map(|(name, value)| [format!("--{name}"), value])
        .collect()
    }
}

/// Makes the CA, server and client certificates in `dir` (kept if already there: a restarted
/// server keeps its certificates, so clients that trusted it still do).
pub fn make_certs(dir: &Path) -> Result<ServerCerts, ServerError> {
    let certs = ServerCerts::in_dir(dir);
    if certs.client_key.exists() {
        return Ok(certs);
    }
    let fail = |e: rcgen::Error| ServerError::Tls(e.to_string());
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(fail)?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "ratelab test CA");
    let ca_key = KeyPair::generate().map_err(fail)?;
    let ca_cert = ca_params.self_signed(&ca_key).map_err(fail)?;
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf = |names: Vec<String>| -> Result<(String, String), ServerError> {
        let params = CertificateParams::new(names).map_err(fail)?;
        let key = KeyPair::generate().map_err(fail)?;
        let cert = params.signed_by(&key, &issuer).map_err(fail)?;
        Ok((cert.pem(), key.serialize_pem()))
    };
    let (server_cert, server_key) = leaf(vec!["127.0.0.1".into(), "localhost".into()])?;
    let (client_cert, client_key) = leaf(vec!["ratelab-client".into()])?;
    std::fs::write(&certs.ca, ca_cert.pem())?;
    std::fs::write(&certs.server_cert, server_cert)?;
    std::fs::write(&certs.server_key, server_key)?;
    std::fs::write(&certs.client_cert, client_cert)?;
    std::fs::write(&certs.client_key, client_key)?;
    Ok(certs)
}
