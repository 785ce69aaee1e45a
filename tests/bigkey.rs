//! The big-key experiment against a real redis-server, small: the trim removes every entry in one
//! command, the expiry deletes the key under both lazyfree settings, and the CSV has the columns
//! the report and chart read. How long a stall lasts is not asserted (the machine is shared and
//! noisy); what the probe's schedule and the server's own clocks guarantee is.

use crate::common;

use ratelab::analysis::table::{number, read_rows};

#[test]
fn trims_remove_every_entry_and_rows_carry_the_columns() {
    let out = tempfile::tempdir().unwrap();
    let dir = common::run_experiment(
        "bigkey",
        out.path(),
        &[
            ("entries", "[2000, 20000]"),
            ("repeats", "1"),
            ("baseline_ms", "20"),
            ("expire_after_ms", "50"),
            ("probe_period_us", "1000"),
        ],
    );
    let rows = read_rows(&dir.join("bigkey.csv")).unwrap();
    // 2 sizes x 2 lazyfree settings x (trim, expire), then the SCHED_IDLE variation's lazy
    // expiries of both sizes (quick: one repeat; unpinned here, so no `apart` rows).
    assert_eq!(rows.len(), 10);
    let idle = rows.iter().filter(|r| r["bio"] == "idle").count();
    assert_eq!(idle, 2, "{rows:?}");
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
    let period_ms = 1.0; // probe_period_us above
    let mut long_expiries = 0;
    for r in &rows {
        let num = |column: &str| number(r, column).unwrap_or_else(|| panic!("no {column}: {r:?}"));
        // trim: ZREMRANGEBYSCORE's own reply; expire: ZCARD just before PEXPIRE, and the row
        // exists only once the key had gone (DBSIZE 0), so the whole set went with it.
        assert_eq!(num("removed"), num("entries"), "{r:?}");
        // The probe sends one PING at a time, each at least a period after the previous one: no
        // more than span / period + 2 (one in flight at the start) can overlap the span.
        let (span, pings) = (num("span_ms"), num("probe_pings"));
        assert!(
            pings <= span / period_ms + 2.0,
            "{pings} PINGs in {span} ms: {r:?}"
        );
        // The stall is the slowest of those PINGs: there is one exactly when a PING overlapped.
        assert_eq!(num("probe_max_stall_ms") > 0.0, pings > 0.0, "{r:?}");
        match r["operation"].as_str() {
            "trim" => {
                // Two clocks on one command: the server's own time for it (SLOWLOG in µs, and
                // LATENCY's `command` event in whole ms, both from the server's clock) cannot
                // exceed the round trip the harness timed around it on its own clock.
                let command = num("command_ms");
                assert!(
                    num("slowlog_ms") <= command,
                    "SLOWLOG longer than the round trip: {r:?}"
                );
                assert!(
                    num("server_blocked_ms") <= command,
                    "LATENCY's command event longer than the round trip: {r:?}"
                );
                assert_eq!(r["background_free_ms"], "", "no background free for a trim");
                // A third clock: the kernel's. The command's time by Redis's clock is time its
                // main thread ran or waited for a CPU (it never sleeps inside a command), so it
                // cannot exceed the two by schedstat over a window around it (SLOWLOG rounds
                // down to whole µs).
                let kernel = num("main_cpu_ms") + num("main_run_queue_ms");
                assert!(
                    num("slowlog_ms") <= kernel + 0.001,
                    "SLOWLOG longer than the main thread ran or waited: {r:?}"
                );
            }
            "expire" => {
                assert_eq!(r["command_ms"], "", "no command times an expiry");
                assert_eq!(r["slowlog_ms"], "", "no command times an expiry");
                // Who freed the log: the lazy-free thread ran only when the expiry was handed
                // to it (a skiplist of these sizes is far above Redis's 64-allocation cut).
                let freed_in_background = num("lazy_free_cpu_ms") > 0.0;
                assert_eq!(freed_in_background, r["lazyfree"] == "yes", "{r:?}");
                // The span starts at the deadline or the key's disappearance, whichever came first,
                // and ends once it was freed: the background free is inside it.
                assert!(span >= num("background_free_ms"), "{r:?}");
                // So is the deletion the server timed itself (LATENCY's expire events, whole ms of
                // its ms clock: each end may round by up to 1 ms against the harness's clock).
                assert!(
                    num("server_blocked_ms") <= span + 2.0,
                    "LATENCY's expiry longer than the span around it: {r:?}"
                );
                // Redis's active expiry finds the key up to a cycle (100 ms at hz 10) after its
                // deadline; a probe pinging through it cannot miss ten periods of it.
                if span >= 10.0 * period_ms {
                    long_expiries += 1;
                    assert!(pings > 0.0, "no PING during a {span} ms expiry: {r:?}");
                }
            }
            other => panic!("unexpected operation {other}"),
        }
    }
    assert!(
        long_expiries > 0,
        "no expiry lasted 10 probe periods: {rows:?}"
    );
    // MEMORY USAGE grows with the log: ten times the entries, several times the bytes.
    for lazy in ["no", "yes"] {
        let bytes = |entries: &str| {
            (rows.iter())
                .find(|r| {
                    r["lazyfree"] == lazy && r["entries"] == entries && r["operation"] == "trim"
                })
                .and_then(|r| number(r, "key_bytes"))
                .expect("a trim row per size")
        };
        assert!(bytes("20000") > 5.0 * bytes("2000"), "{rows:?}");
    }
    let lazy: std::collections::BTreeSet<&str> =
        rows.iter().map(|r| r["lazyfree"].as_str()).collect();
    assert_eq!(lazy, ["no", "yes"].into());
    assert!(dir.join("meta.json").exists());
}
