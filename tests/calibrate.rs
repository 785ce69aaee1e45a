//! calibrate measures every client the experiments use: at depth 1 the lean client, the redis-rs
//! path and redis-benchmark in every pair (redis-rs between the other two), deeper only the lean
//! client and redis-benchmark; each run says how busy its client was.

use crate::common;

use ratelab::analysis::table::read_typed;
use ratelab::experiments::calibrate::CalibrateRow;

#[test]
fn every_pair_at_depth_one_measures_the_redis_rs_path_too() {
    let out = tempfile::tempdir().unwrap();
    let dir = common::run_experiment(
        "calibrate",
        out.path(),
        &[
            ("pairs", "2"),
            ("seconds", "0.2"),
            ("warmup_seconds", "0"),
            ("commands", r#"["GET"]"#),
            ("depths", "[1, 4]"),
        ],
    );
    let rows: Vec<CalibrateRow> = read_typed(&dir.join("calibrate.csv")).unwrap();
    let order = |depth: usize, pair: u32| -> Vec<&str> {
        (rows.iter())
            .filter(|r| r.depth == depth && r.pair == pair)
            .map(|r| r.tool.as_str())
            .collect()
    };
    assert_eq!(order(1, 0), ["ratelab", "redis-rs", "redis-benchmark"]);
    assert_eq!(order(1, 1), ["redis-benchmark", "redis-rs", "ratelab"]);
    assert_eq!(order(4, 0), ["ratelab", "redis-benchmark"]);
    for r in &rows {
        assert!(r.ops > 0 && r.client_cpu_us_per_op > 0.0, "{r:?}");
        let cpu = r
            .client_cpu_pct
            .expect("every run measures its client's CPU");
        assert!(cpu > 0.0, "{r:?}");
        // The test's harness is not pinned: no CPUs of its own to read steal from.
        assert_eq!(r.harness_steal_pct, None, "{r:?}");
    }
}
