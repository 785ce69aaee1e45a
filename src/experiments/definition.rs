//! What one experiment is ([`Definition`]), in its own module: the types an experiment, the frame
//! that runs it and the registry that lists it all share, below all three.

use super::error::ExperimentError;
use super::limiters::{self, Verdicts};
use super::session::Session;
use crate::analysis::AnalysisError;
use crate::charts::ChartError;
use crate::record::Table;
use crate::server::Topology;
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};

/// Parameters that can say what is wrong with them before anything starts.
pub trait Validate {
    /// A sentence naming the bad parameters, or Ok.
    fn validate(&self) -> Result<(), String>;
}

/// Everything about one experiment, in its own module.
pub trait Definition: Sync + 'static {
    /// The id on the command line and the results subdirectory.
    const ID: &'static str;
    /// `experiments/<id>.toml`, embedded: seeds, summary, notes, the quick and full profiles.
    const TOML: &'static str;
    /// Why it must own the server (it signals, restarts, flushes or reconfigures it), if it must.
    const MUST_OWN_SERVER: Option<&'static str> = None;
    /// Whether it runs custom limiters (`--limiter`) beside its built-in strategies.
    const TAKES_LIMITERS: bool = false;
    /// Whether custom limiters that are processes (a library's adapter) run in it: only where
    /// every check goes through the one decider, never a script on the experiment's connection.
    const TAKES_PROCESSES: bool = false;
    /// What its results say about each custom limiter, for REPORT.md's verdict table.
    const VERDICTS: Verdicts = limiters::none;
    /// What its results let each custom limiter be judged on: claims its algorithm and manifest
    /// imply, judged as the seeds' are.
    const LIMITER_CLAIMS: limiters::Claims = limiters::no_claims;
    /// Why `--tls` cannot apply to every server it starts (replicas and cluster nodes are started
    /// without TLS), if it cannot.
    const NO_MANAGED_TLS: Option<&'static str> = None;
    /// Runs against a cluster node named by `--redis-url` (every other experiment refuses one).
    const ON_CLUSTER_NODE: bool = false;
    /// The permissions beyond every run's that it needs on a `--redis-url` server.
    const PERMISSIONS: &'static [crate::server::acl::Extra] = &[];
    /// What its results say about the machine, for REPORT.md's machine-dependent figures.
    const MACHINE_FACT: Option<crate::analysis::MachineFact> = None;
    /// The servers the frame builds before the body (`--redis-url` stands in for a standalone
    /// one); a body that needs fresh servers per trial builds them through the session.
    const TOPOLOGY: Topology = Topology::Standalone;
    /// Its parameters.
    type Params: DeserializeOwned + Validate;
    /// What must hold on this machine before anything starts (a tool it runs), or why not.
    fn precondition() -> Result<(), ExperimentError> {
        Ok(())
    }
    /// Limiter manifests its own parameters name (paths from where ratelab runs, as `--limiter`'s):
    /// the frame loads, probes and records them as it does `--limiter`'s, and the body finds them
    /// in its context's limiters.
    fn own_limiters(_params: &Self::Params) -> Vec<PathBuf> {
        Vec::new()
    }
    /// The measurement, in the frame.
    const BODY: Body<Self::Params>;
    /// Its charts, drawn from its CSVs in `dir`.
    const CHARTS: Render;
    /// Its summary table(s) for REPORT.md, from its CSVs in `dir`.
    const SUMMARY: Summarize;
    /// Every CSV it writes, with the row type's columns.
    fn tables() -> Vec<Table>;
}

/// An experiment's measurement: rows into the session's sinks.
pub type Body<P> = fn(&mut Session, &P) -> Result<(), ExperimentError>;
/// Draws an experiment's charts from its results directory.
pub type Render = fn(&Path) -> Result<Vec<PathBuf>, ChartError>;
/// Writes an experiment's summary for REPORT.md from its results directory.
pub type Summarize = fn(&Path) -> Result<String, AnalysisError>;
