//! Why an experiment did not complete, with the phase it was in.

use super::params::ParamError;
use crate::load::LoadError;
use crate::record::RecordError;
use crate::server::ServerError;

/// Why an experiment did not complete.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    #[error("unknown experiment `{id}`; valid: {valid}")]
    Unknown { id: String, valid: String },
    #[error(transparent)]
    Params(#[from] ParamError),
    #[error(
        "experiment `{id}` must own the server ({why}); it refuses to run against --redis-url"
    )]
    MustOwnServer { id: &'static str, why: &'static str },
    #[error(
        "experiment `{id}` runs on {topology} that ratelab starts; it refuses to run against --redis-url"
    )]
    NeedsOwnTopology { id: &'static str, topology: String },
    #[error("experiment `{id}` does not run with --tls: {why}")]
    NoManagedTls { id: &'static str, why: &'static str },
    #[error("{phase}")]
    Failed { phase: String, source: PhaseError },
    #[error("recording results")]
    Record(#[from] RecordError),
    #[error("experiment `{id}` does not take --limiter; these do: {takers}")]
    NoCustomLimiters { id: &'static str, takers: String },
    #[error(
        "experiment `{id}` runs limiter processes only (a library's adapter), not the script of {name}; \
         these run scripts: {takers}"
    )]
    NoLimiterScripts {
        id: &'static str,
        name: String,
        takers: String,
    },
    #[error(
        "experiment `{id}` asks limiters on its own Redis connections and cannot run limiter process {name} \
         (a library's adapter); these can: {takers}"
    )]
    NoLimiterProcesses {
        id: &'static str,
        name: String,
        takers: String,
    },
    #[error(transparent)]
    Manifest(#[from] crate::limiter::custom::ManifestError),
}

/// The cause of a failed phase.
#[derive(Debug, thiserror::Error)]
pub enum PhaseError {
    #[error(transparent)]
    Server(#[from] ServerError),
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error(transparent)]
    Redis(#[from] redis::RedisError),
    #[error(transparent)]
    Limiter(#[from] crate::limiter::LimiterError),
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Attaches the phase ("starting redis", "trial 3 of naive-bucket 1x2") to an error.
pub trait Phase<T> {
    /// Names what was being done when the error happened.
    fn phase(self, what: impl FnOnce() -> String) -> Result<T, ExperimentError>;
}

impl<T, E: Into<PhaseError>> Phase<T> for Result<T, E> {
    fn phase(self, what: impl FnOnce() -> String) -> Result<T, ExperimentError> {
        self.map_err(|e| ExperimentError::Failed {
            phase: what(),
            source: e.into(),
        })
    }
}
