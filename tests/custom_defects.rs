//! Custom limiters written the way public libraries write them, each reproducing one way a
//! verdict about a real limiter script went wrong (issue 36), against real redis-servers.

mod common;

use ratelab::experiments::find;
use ratelab::limiter::custom;
use ratelab::limiter::Strategy;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/limiters")
        .join(name)
}

fn load(name: &str) -> Strategy {
    custom::register(custom::load(&fixture(name)).expect("fixture manifest loads"))
}

/// Runs `id` with `limiters` and `sets`; returns its results directory.
fn run(id: &str, out: &Path, limiters: Vec<Strategy>, sets: &[(&str, &str)]) -> PathBuf {
    let mut ctx = common::ctx(out);
    ctx.limiters = limiters;
    ctx.sets = common::sets(sets);
    find(id)
        .unwrap()
        .run(&ctx)
        .unwrap_or_else(|e| panic!("{id}: {e:#}"))
}

#[test]
fn a_two_window_script_counts_its_own_window_once() {
    let tmp = tempfile::tempdir().unwrap();
    let limiter = load("two-window.toml");
    let dir = run(
        "race",
        tmp.path(),
        vec![limiter],
        &[
            ("configs", r#"["1x1", "4x8"]"#),
            ("trials", "1"),
            ("strategies", r#"["lua-swc"]"#),
        ],
    );
    let rows: Vec<ratelab::experiments::race::RaceRow> =
        ratelab::analysis::table::read_typed(&dir.join("race.csv")).unwrap();
    let mine: Vec<_> = (rows.iter())
        .filter(|r| r.scenario == "matrix" && r.strategy == limiter)
        .collect();
    assert_eq!(mine.len(), 2);
    // One trial is one window: the previous window is empty, so exactly the limit passes. With
    // {window-1} naming the current window, each request counted 1 + (time left / window) times.
    for r in mine {
        assert_eq!((r.admitted, r.errors), (r.limit, 0), "{r:?}");
    }
}
