//! The integration tests, one binary: each file beside this one is a module (`race`, `cli`, ...),
//! with `common`'s helpers. One binary links once where 37 took most of a clean build's last
//! minute; cargo-nextest still runs every test in a process of its own
//! (`cargo nextest run -E 'test(/^race::/)'` runs one file's).

mod common;
#[path = "limiter/main.rs"]
mod limiter;
mod adapters;
mod auth;
mod bad_input;
mod bigkey;
mod chaos;
mod cli;
mod cluster;
mod cost;
mod custom_defects;
mod custom_limiters;
mod drill;
mod eviction;
mod failover;
mod golden;
mod layers;
mod memory;
mod mutations;
mod openloop;
mod outage;
mod params;
mod pipelined;
mod pods;
mod process;
mod provenance;
mod proxy;
mod publish;
mod quick_profiles;
mod race;
mod replica;
mod scripts;
mod sentinel;
mod stalls;
mod topology;
