//! Redis CPU per decision, measured by Redis's own main-thread CPU counters (not wall time, so
//! a noisy machine slows both alike): a Lua decision must cost more than a plain GET.

mod common;

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
    assert!(
        lua > 1.5 * get,
        "lua-bucket {lua:.2} µs vs get {get:.2} µs per decision"
    );
}
