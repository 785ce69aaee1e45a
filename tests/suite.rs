//! The integration tests, one binary: each file beside this one is a module (`race`, `cli`, ...),
//! with `common`'s helpers. One binary links once where 37 took most of a clean build's last
//! minute; cargo-nextest still runs every test in a process of its own
//! (`cargo nextest run -E 'test(/^race::/)'` runs one file's).

mod adapters;
mod auth;
mod bad_input;
mod bigkey;
mod calibrate;
mod chaos;
mod check;
mod cli;
mod cluster;
mod common;
mod cost;
mod custom_defects;
mod custom_limiters;
mod drill;
mod eviction;
mod failover;
mod golden;
mod layers;
mod libraries;
#[path = "limiter/main.rs"]
mod limiter;
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
mod readme;
mod refill;
mod replica;
mod scoreboard;
mod scripts;
mod seed_code;
mod sentinel;
mod stalls;
mod topology;

/// With `autotests` off, a test file this binary does not name would never run: every file in
/// tests/ must be a module here.
#[test]
fn every_test_file_is_a_module_of_the_suite() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests");
    let root = std::fs::read_to_string(format!("{dir}/suite.rs")).unwrap();
    let files = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path());
    for path in files.filter(|p| p.extension().is_some_and(|e| e == "rs")) {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if name != "suite" {
            assert!(
                root.contains(&format!("\nmod {name};\n")),
                "tests/{name}.rs is not in tests/suite.rs"
            );
        }
    }
}
