//! scripts's measurement: cost, then flush under load, then the survival matrix (what the three
//! share is in `bucket.rs`).

use super::{cost, flush, survival, Params};
use crate::experiments::{ExperimentError, Phase, Session};

pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(crate::server::ServerError::from)
        .phase(|| "building the async runtime".into())?;
    cost::run(s, p)?;
    flush::run(s, p, &rt)?;
    survival::run(s, p, &rt)
}
