//! ratelab reproduces, against a real redis-server, the measurements published in four write-ups
//! about Redis-backed rate limiters, and writes the raw data, charts and a report beside them.
//!
//! # Layout
//! - [`cli`]: clap types, validated once into a [`context::Ctx`]; nothing else sees clap.
//! - [`app`]: the command-line edge: runs commands, prints where results are.
//! - [`context`]: the options every experiment runs with (profile, output, server, pinning, seed).
//! - [`errors`]: an error and its causes as text, each cause once.
//! - [`server`]: starts, pins, signals and always stops redis-server (standalone, replica, an
//!   N-node Redis Cluster with its slot map and slot moves, Sentinels); the `Topology` an
//!   experiment declares and the frame builds, handing typed `Endpoint`s; INFO parsing; admin commands
//!   (CONFIG, MEMORY USAGE, OBJECT ENCODING); `--redis-url`: one URL per server carrying
//!   credentials, db and TLS files to every connection, masked wherever shown (`endpoint`), the
//!   least-privilege ACL and the pre-flight check of a user's server (`acl`), certificates for
//!   managed TLS servers (`tls`); what meta.json says of a server; deleting this run's keys.
//! - [`limiter`]: who decides (`limiter::decide`: the one interface every load loop and the store
//!   ask, with its registry of kinds: Redis strategies, custom manifests, the in-memory window);
//!   one file per strategy; Lua in `limiter/lua/*.lua`; the single-key scripts also
//!   on any async connection (a cluster client's); `limiter::custom`: a user's Lua limiter from a
//!   TOML manifest (`--limiter`), probed before a run and named in results by its manifest;
//!   `limiter::wire`: a one-command decision as raw RESP and its reply read in place, for the lean
//!   client.
//! - [`store`]: the resilient client of seed 000: per-check budget, fail-open | fail-closed,
//!   degraded answers counted apart, no offline queue, circuit breaker.
//! - [`fault`]: what breaks Redis on purpose (kill, restart, SIGSTOP) and the guard that always
//!   continues a stopped server; a loopback TCP fault proxy (blackhole, refuse, delay, reset).
//! - [`load`]: closed-loop load and open-loop (scheduled) arrivals from worker processes (the
//!   binary re-executed as `worker`); pods that send what they admit to a loopback sink which
//!   counts what arrived; a PING probe that sees how long the server stalls; `load::pipelined`, the
//!   lean closed loop that keeps N requests in flight per connection; `load::drill`, the one engine
//!   for timed drills (a schedule, faults fired at planned instants, every request recorded with
//!   its intended start, one binning routine) that chaos, failover, outage and scripts run on.
//! - [`record`]: CSV sinks flushed per row, atomic result directories, a run's meta.json, the
//!   CSV schema read from the row types (columns, types, units, doc comments), the machine from
//!   sysinfo, MONITOR.
//! - [`experiments`]: one module per experiment, each a `Definition` (id, TOML, Params,
//!   precondition, row types, body, charts, summary) listed once in `experiments::registry`;
//!   `experiments::describe`: every parameter with its type, values, unit and meaning (`params`);
//!   the frame every body runs in (`Session`); `experiments::limiters`: the custom limiters a
//!   run recorded and the verdict table REPORT.md gives them.
//! - [`charts`]: SVG and PNG charts drawn from the CSVs alone; knows chart kinds, not experiments.
//! - [`analysis`]: summary tables, claims judged and REPORT.md from the CSVs alone; knows
//!   judgements, not experiments (the caller hands it one `Section` per experiment); the time
//!   budget (`analysis/budget.toml`) and the Time table.
//! - [`check`]: `ratelab check`, the failure-mode battery a limiter library runs in its CI: each
//!   check an experiment of the quick profile sized by `check/battery.toml`, judged by the limiter
//!   claims it generates; an exit code, JUnit XML and claims.json.
//! - [`publish`]: a results directory as one verifiable dataset (datapackage.json, SHA256SUMS,
//!   CITATION.cff, README.md, a .tar.gz) and `verify`, which re-checks and redraws a copy.

pub mod analysis;
pub mod app;
pub mod charts;
pub mod check;
pub mod cli;
pub mod context;
pub mod errors;
pub mod experiments;
pub mod fault;
pub mod limiter;
pub mod load;
pub mod progress;
pub mod publish;
pub mod record;
pub mod scoreboard;
pub mod server;
pub mod store;
