//! Eviction of limiter keys against real redis-servers under maxmemory: what each policy deletes
//! and what the limiter then admits. Counts only, no timing: a deleted bucket is a full bucket,
//! and a kept one is exact.

use crate::common;

use assert_cmd::Command;
use ratelab::analysis::table::{number, read_rows, Row};

/// One small run of the matrix the claims need; its rows per user and per cell.
fn run() -> (Vec<Row>, Vec<Row>) {
    let out = tempfile::tempdir().unwrap();
    let sets = [
        "users=200",
        "new_users=40",
        "headroom_bytes=1048576",
        "idle_ms=1200",
        "layouts=[\"shared\", \"dedicated\"]",
        "policies=[\"unlimited\", \"noeviction\", \"allkeys-lru\", \"volatile-ttl\"]",
    ];
    let mut cmd = Command::new(common::ratelab_exe());
    cmd.args(["run", "eviction", "--profile", "quick", "--quiet", "--out"])
        .arg(out.path());
    for s in sets {
        cmd.args(["--set", s]);
    }
    let output = cmd.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let dir = out.path().join("eviction");
    (
        read_rows(&dir.join("eviction.csv")).unwrap(),
        read_rows(&dir.join("keys.csv")).unwrap(),
    )
}

fn of<'a>(rows: &'a [Row], layout: &str, policy: &str) -> Vec<&'a Row> {
    let found: Vec<&Row> = (rows.iter())
        .filter(|r| r["layout"] == layout && r["policy"] == policy)
        .collect();
    assert!(!found.is_empty(), "no rows for {layout} {policy}");
    found
}

fn n(row: &Row, column: &str) -> f64 {
    number(row, column).unwrap_or_else(|| panic!("{column} missing in {row:?}"))
}

#[test]
fn policies_delete_or_keep_buckets_and_the_limiter_admits_accordingly() {
    let (users, cells) = run();

    // The control and the dedicated store: every bucket kept, every user exact.
    for (layout, policy) in [
        ("shared", "unlimited"),
        ("dedicated", "volatile-ttl"),
        ("dedicated", "allkeys-lru"),
    ] {
        let cell = of(&cells, layout, policy)[0];
        assert_eq!(
            n(cell, "limiter_survived"),
            n(cell, "limiter_keys"),
            "{layout} {policy}"
        );
        for u in of(&users, layout, policy) {
            assert_eq!(n(u, "over_admitted"), 0.0, "{layout} {policy}: {u:?}");
        }
    }
    // The dedicated store was under pressure too: its cache's server evicted.
    assert!(
        n(
            of(&cells, "dedicated", "allkeys-lru")[0],
            "evicted_on_cache_server"
        ) > 0.0
    );

    // allkeys-lru on a shared store deletes idle buckets, and each deleted one comes back full.
    let lru = of(&cells, "shared", "allkeys-lru")[0];
    assert!(
        n(lru, "limiter_survived") < n(lru, "limiter_keys"),
        "{lru:?}"
    );
    let lost: Vec<&Row> = (of(&users, "shared", "allkeys-lru").into_iter())
        .filter(|u| u["class"] == "emptied" && u["key_survived"] == "0")
        .collect();
    assert!(!lost.is_empty());
    for u in lost {
        assert_eq!(
            n(u, "admitted_after") - n(u, "ideal_after"),
            n(u, "capacity"),
            "{u:?}"
        );
    }

    // noeviction keeps every bucket but refuses the writes that need memory: an emptied bucket
    // still denies, while a new user's first check is refused and the store fails open.
    let full = of(&cells, "shared", "noeviction")[0];
    assert_eq!(n(full, "limiter_survived"), n(full, "limiter_keys"));
    assert_eq!(n(full, "limiter_oom"), 1.0, "{full:?}");
    for u in of(&users, "shared", "noeviction") {
        match u["class"].as_str() {
            "emptied" => assert_eq!(n(u, "over_admitted"), 0.0, "{u:?}"),
            _ => assert_eq!(
                n(u, "degraded_allowed_after"),
                n(u, "checks_after"),
                "{u:?}"
            ),
        }
    }
}
