//! The big-key experiment against a real redis-server, small: the trim removes every entry in one
//! command, the expiry deletes the key under both lazyfree settings, and the CSV has the columns
//! the report and chart read. Stall times are not asserted: the machine is shared and noisy.

mod common;

use ratelab::analysis::table::{number, read_rows};

#[test]
fn trims_remove_every_entry_and_rows_carry_the_columns() {
    let out = tempfile::tempdir().unwrap();
    let mut ctx = common::ctx(out.path());
    ctx.sets = [
        ("entries", "[2000, 20000]"),
        ("repeats", "1"),
        ("baseline_ms", "20"),
        ("expire_after_ms", "50"),
    ]
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .to_vec();
    let dir = ratelab::experiments::find("bigkey")
        .expect("registered")
        .run(&ctx)
        .expect("bigkey runs");
    let rows = read_rows(&dir.join("bigkey.csv")).unwrap();
    // 2 sizes x 2 lazyfree settings x (trim, expire).
    assert_eq!(rows.len(), 8);
    for column in [
        "operation",
        "entries",
        "lazyfree",
        "command_ms",
        "probe_max_stall_ms",
        "slowlog_ms",
        "server_blocked_ms",
        "probe_baseline_max_ms",
    ] {
        assert!(rows[0].contains_key(column), "no column {column}");
    }
    for r in &rows {
        assert_eq!(number(r, "removed"), number(r, "entries"), "{r:?}");
        // A PING every ms may miss a sub-ms trim entirely (0 PINGs overlapping, stall 0): only
        // that the figures are there is asserted.
        assert!(
            number(r, "probe_max_stall_ms").is_some_and(|ms| ms >= 0.0),
            "{r:?}"
        );
        assert!(number(r, "probe_pings").is_some(), "{r:?}");
        match r["operation"].as_str() {
            "trim" => {
                assert!(number(r, "command_ms").is_some(), "{r:?}");
                assert!(
                    number(r, "slowlog_ms").is_some(),
                    "SLOWLOG saw the trim: {r:?}"
                );
            }
            "expire" => assert_eq!(r["command_ms"], "", "no command times an expiry"),
            other => panic!("unexpected operation {other}"),
        }
    }
    let lazy: std::collections::BTreeSet<&str> =
        rows.iter().map(|r| r["lazyfree"].as_str()).collect();
    assert_eq!(lazy, ["no", "yes"].into());
    assert!(dir.join("meta.json").exists());
}
