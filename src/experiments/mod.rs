//! One module per experiment, each defined in one place (a [`Definition`]: id, embedded TOML,
//! Params, precondition, row types, body, charts, summary) and listed once in [`registry::ALL`].

pub mod atomic;
pub mod bigkey;
pub mod calibrate;
pub mod chaos;
pub mod cluster;
mod concurrency;
pub mod cost;
pub mod definition;
pub mod describe;
mod error;
pub mod eviction;
pub mod failover;
pub mod frame;
pub mod latency;
pub mod libraries;
pub mod limiters;
pub mod measure;
pub mod memory;
pub mod outage;
pub mod params;
pub mod pods;
pub mod race;
pub mod refill;
pub mod registry;
pub mod replication;
pub mod scripts;
pub mod session;
pub mod tsmember;
pub mod window_edge;

pub use concurrency::Concurrency;
pub use definition::{Body, Definition, Render, Summarize, Validate};
pub use error::{ExperimentError, Phase, PhaseError};
pub use registry::{custom_limiters, draw_all, find, write_report, Experiment, ALL};
pub use session::Session;
