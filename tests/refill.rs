//! refill on a real server: a client hammering one bucket gets no more than the rate allows from
//! the seed's bucket, and more from the bucket without each of its two details.

use crate::common;
use ratelab::experiments::refill::RefillRow;

#[test]
fn the_seeds_two_details_keep_the_rate_and_each_missing_one_breaks_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = common::run_experiment("refill", tmp.path(), &[]);
    let rows: Vec<RefillRow> =
        ratelab::analysis::table::read_typed(&dir.join("refill.csv")).unwrap();
    let of =
        |drill: &str, script: &str, clock: &str, callers: &str, expiry: &str| -> Vec<&RefillRow> {
            (rows.iter())
                .filter(|r| {
                    (r.drill.as_str(), r.script.as_str(), r.clock.as_str())
                        == (drill, script, clock)
                })
                .filter(|r| r.callers == callers && r.expiry == expiry)
                .collect()
        };
    let trials = 2;
    // Redis's clock runs inside the harness's span: a bucket that keeps its rate cannot exceed it.
    let kept = [
        of("expiry", "refresh", "redis", "one", "short"),
        of("expiry", "refresh", "redis", "one", "full-refill"),
        of("expiry", "no-refresh", "redis", "one", "full-refill"),
        of("clock", "seed", "redis", "skewed", "full-refill"),
        of("clock", "seed", "caller", "same-clock", "full-refill"),
    ];
    for config in kept {
        assert_eq!(config.len(), trials, "{rows:?}");
        for r in config {
            assert!(r.admitted <= r.limit_admits, "{r:?}");
            // Hammered past its capacity, it gave at least the capacity.
            assert!(r.admitted >= r.capacity && r.calls > r.admitted, "{r:?}");
        }
    }
    // The expiry lapses between admissions: each lapse a fresh bucket of `capacity`.
    for r in of("expiry", "no-refresh", "redis", "one", "short") {
        assert!(r.admitted > r.limit_admits && r.found_full >= 1, "{r:?}");
        assert!(
            r.admitted >= 2 * r.capacity,
            "at least one fresh bucket: {r:?}"
        );
    }
    for r in of("clock", "seed", "caller", "skewed", "full-refill") {
        assert!(r.admitted > r.limit_admits, "{r:?}");
    }
}
