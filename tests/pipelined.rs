//! The lean pipelined client against a real redis-server: requests in flight per connection
//! change how many commands share a write, never what is decided. An exact Lua bucket admits its
//! capacity and refuses the rest at any depth, and Redis's own command counter sees exactly one
//! call per check; MULTI INCR PEXPIRE EXEC pipelines whole, one transaction per check.

use crate::common;

use ratelab::experiments::measure::measure;
use ratelab::limiter::{LimitSpec, Strategy};
use ratelab::load::{pipelined, ClosedLoop, KeyChoice, Stop, WorkerSpec};
use ratelab::server::Target;

fn spec(
    target: &Target,
    strategy: Strategy,
    keys: KeyChoice,
    checks: u64,
    depth: usize,
) -> WorkerSpec {
    let limit = LimitSpec {
        capacity: 100,
        refill_per_sec: 0.0,
        ..LimitSpec::default()
    };
    WorkerSpec {
        url: target.url(),
        connections: 4,
        in_flight: depth,
        pipelined: true,
        ..WorkerSpec::new(strategy, limit, keys, Stop::AfterChecks(checks))
    }
}

#[test]
fn an_exact_bucket_admits_its_capacity_at_every_depth() {
    let target = Target::Managed(common::start_server());
    let exe = common::ratelab_exe();
    for depth in [1, 16, 64] {
        let key = KeyChoice::One(format!("pipe:bucket:{depth}"));
        let template = spec(&target, Strategy::LuaBucket, key, 1_000, depth);
        assert!(
            pipelined::serves(&template),
            "the lean client serves lua-bucket"
        );
        let plan = ClosedLoop {
            exe: &exe,
            cpus: &[],
            processes: 1,
            template,
        };
        let m = measure(&target, &plan, &|| format!("depth {depth}")).expect("run measures");
        assert_eq!(
            (m.tally.admitted, m.tally.denied, m.tally.errors),
            (100, 900, 0),
            "depth {depth}: {:?}",
            m.tally.first_error
        );
        assert_eq!(m.tally.redis_calls, 1_000);
        let evalsha = m.server.commands.get("evalsha").map_or(0, |c| c.0);
        assert_eq!(evalsha, 1_000, "one EVALSHA per check at depth {depth}");
    }
}

#[test]
fn every_get_is_one_call_and_strategies_of_several_commands_keep_redis_rs() {
    let target = Target::Managed(common::start_server());
    let exe = common::ratelab_exe();
    let keys = KeyChoice::Uniform {
        prefix: "pipe:get:".into(),
        count: 1_000,
    };
    let plan = ClosedLoop {
        exe: &exe,
        cpus: &[],
        processes: 2,
        template: spec(&target, Strategy::Get, keys.clone(), 5_000, 16),
    };
    let m = measure(&target, &plan, &|| "get".into()).expect("run measures");
    assert_eq!((m.tally.admitted, m.tally.errors), (5_000, 0));
    assert_eq!(m.server.commands.get("get").map_or(0, |c| c.0), 5_000);
    // A read-then-write strategy needs the first reply before its second command: redis-rs.
    let naive = spec(&target, Strategy::NaiveWindow, keys, 400, 8);
    assert!(!pipelined::serves(&naive));
    let plan = ClosedLoop {
        template: naive,
        ..plan
    };
    let m = measure(&target, &plan, &|| "naive-window".into()).expect("run measures");
    assert_eq!(m.tally.admitted + m.tally.denied, 400);
}

#[test]
fn a_multi_exec_window_pipelined_admits_its_limit_with_one_transaction_per_check() {
    let target = Target::Managed(common::start_server());
    let exe = common::ratelab_exe();
    for depth in [1, 16] {
        let mut template = spec(
            &target,
            Strategy::MultiWindow,
            KeyChoice::One(format!("pipe:multi:{depth}")),
            1_000,
            depth,
        );
        // One window for the whole run: the count is exact, not split at a boundary.
        template.limit.window_ms = 600_000;
        assert!(
            pipelined::serves(&template),
            "the lean client serves MULTI/EXEC"
        );
        let plan = ClosedLoop {
            exe: &exe,
            cpus: &[],
            processes: 1,
            template,
        };
        let m = measure(&target, &plan, &|| format!("multi depth {depth}")).expect("run measures");
        assert_eq!(
            (m.tally.admitted, m.tally.denied, m.tally.errors),
            (100, 900, 0),
            "depth {depth}: {:?}",
            m.tally.first_error
        );
        for command in ["multi", "incrby", "pexpire", "exec"] {
            let calls = m.server.commands.get(command).map_or(0, |c| c.0);
            assert_eq!(calls, 1_000, "{command} once per check at depth {depth}");
        }
    }
}
