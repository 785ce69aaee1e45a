//! Redis CPU per decision, measured by Redis's own main-thread CPU counters (not wall time, so
//! a noisy machine slows both alike): a Lua decision must cost more than a plain GET. And the
//! sliding log's variants run on logs at their limit: full before and after, and denying; each
//! row names its client and who set its rate.

use crate::common;

use ratelab::analysis::table::read_typed;
use ratelab::experiments::cost::CostRow;
use ratelab::experiments::measure::measure;
use ratelab::limiter::{LimitSpec, Strategy};
use ratelab::load::{ClosedLoop, KeyChoice, Stop, WorkerSpec};
use ratelab::server::Target;

fn cpu_per_decision(target: &Target, strategy: Strategy) -> f64 {
    let exe = common::ratelab_exe();
    let spec = WorkerSpec {
        keys: KeyChoice::Uniform {
            prefix: format!("cost:{strategy}:"),
            count: 10_000,
        },
        stop: Stop::AfterChecks(20_000),
        connections: 16,
        // 16 in flight per connection on the lean client: Redis reads them in batches, so its
        // per-command event-loop and wake-up cost (on a loaded VM, ~140 µs per lone command,
        // dwarfing either command and noisier than the script's work) is shared by the batch.
        in_flight: 16,
        pipelined: true,
        url: target.url(),
        ..WorkerSpec::one_key(
            strategy,
            LimitSpec {
                capacity: 1_000_000,
                refill_per_sec: 1_000_000.0,
                ..LimitSpec::default()
            },
            "unused",
            0,
            1,
        )
    };
    let plan = ClosedLoop {
        exe: &exe,
        cpus: &[],
        processes: 1,
        template: spec,
    };
    let m = measure(target, &plan, &|| format!("{strategy}")).expect("run measures");
    assert_eq!(m.tally.admitted, 20_000);
    m.cpu_us_per_decision()
}

#[test]
fn a_lua_decision_costs_redis_more_cpu_than_a_get() {
    let target = Target::Managed(common::start_server());
    // Warm both (key creation, script cache), then measure.
    cpu_per_decision(&target, Strategy::Get);
    cpu_per_decision(&target, Strategy::LuaBucket);
    let get = cpu_per_decision(&target, Strategy::Get);
    let lua = cpu_per_decision(&target, Strategy::LuaBucket);
    assert!(get > 0.0, "GET cost no CPU?");
    // Both pay the same event-loop and socket work per batch; the script's work comes on top.
    assert!(
        lua > get,
        "lua-bucket {lua:.2} µs vs get {get:.2} µs per decision"
    );
}

#[test]
fn the_sliding_log_variants_run_on_full_logs_and_deny() {
    let out = tempfile::tempdir().unwrap();
    let dir = common::run_experiment(
        "cost",
        out.path(),
        &[
            ("runs", "1"),
            ("run_seconds", "0.5"),
            ("warmup_seconds", "0.2"),
            ("strategies", r#"["lua-log"]"#),
            ("hot_key_strategies", "[]"),
            ("depth_strategies", "[]"),
            ("log_limits", "[100, 10000]"),
            ("log_entries", "20000"),
            ("log_window_ms", "120000"),
            ("redis_bound_idle_pct", "5"),
        ],
    );
    let rows: Vec<CostRow> = read_typed(&dir.join("cost.csv")).unwrap();
    let variants: Vec<&str> = rows.iter().map(|r| r.variant.as_str()).collect();
    assert_eq!(variants, ["L=100", "L=10000"]);
    for r in &rows {
        // 20,000 entries in all: 200 logs of 100, 2 of 10,000.
        assert_eq!(r.keys * r.limit, 20_000, "{r:?}");
        // Filled to the limit before the run, and a log never holds more than its limit; each
        // decision trims what left the window before it counts, so a key may end an entry short.
        let mean = r
            .log_entries_per_key
            .expect("a log variant counts its logs");
        let min = r.log_entries_min.expect("a log variant counts its logs");
        assert!(
            mean <= r.limit as f64 && mean >= 0.95 * r.limit as f64,
            "{r:?}"
        );
        assert!(
            min <= r.limit && min as f64 >= 0.9 * r.limit as f64,
            "{r:?}"
        );
        // Full logs admit only what leaves the window (20,000 per 120 s in all, ~170/s) and deny
        // the rest of what 16 clients send flat out.
        assert!(r.denied > r.allowed, "{r:?}");
        assert_eq!(r.errors, 0, "{r:?}");
        assert!(r.cpu_us_per_decision > 0.0, "{r:?}");
        // One request at a time, on the lean client (it serves a script); who set the rate
        // follows the row's own idle share and the run's bar, never the other way round.
        assert_eq!((r.depth, r.client.as_str()), (1, "lean"), "{r:?}");
        let idle = r
            .redis_idle_pct
            .expect("a managed server's idle share is measured");
        let bar = 5.0;
        let by = if idle <= bar { "redis" } else { "client" };
        assert_eq!(r.rate_set_by, by, "{r:?}");
    }
}
