//! libraries against a real server: the seeds' own middlewares (their adapters on node-redis and
//! ioredis, installed by scripts/adapters.sh) through race's trials and outage's phases beside
//! ratelab's own strategies. The assertions are what the mechanisms guarantee, not the seeds'
//! figures (the report judges those): an atomic script admits exactly its limit; one check at a
//! time the naive bucket is exact; a read-then-write never admits less than its limit; a dead
//! server answers no check, so fail-open answers each one; a stopped server answers none, so each
//! hung check waits its whole budget; seed 001's script on ioredis decides right after the script
//! cache was flushed.

use crate::common;

use ratelab::experiments::outage::{Phase, PhaseRow, PHASES};
use ratelab::experiments::race::{RaceRow, RACE};
use ratelab::limiter::Strategy;

#[test]
fn the_seeds_middlewares_run_on_their_own_clients_beside_ratelabs_emulation() {
    let mark = common::mark_descendants();
    let out = tempfile::tempdir().unwrap();
    let dir = common::run_experiment(
        "libraries",
        out.path(),
        &[
            ("trials", "2"),
            ("configs", r#"["1x1", "1x8"]"#),
            ("checks_per_phase", "8"),
        ],
    );
    let race: Vec<RaceRow> = RACE.read(&dir).unwrap();
    let of = |name: &str, scenario: &str| -> Vec<&RaceRow> {
        (race.iter())
            .filter(|r| r.strategy.to_string() == name && r.scenario == scenario)
            .collect()
    };
    for name in ["naive-bucket", "seed000-naive", "seed000-lua"] {
        assert_eq!(of(name, "matrix").len(), 2 * 2, "{name}: trials x configs");
    }
    // The in-flight configurations again in waves, by both naive buckets: a race only over-admits.
    for name in ["naive-bucket", "seed000-naive"] {
        let waves = of(name, "waves");
        assert_eq!(waves.len(), 2, "{name}: 1x8 in waves per trial");
        for r in waves {
            assert!(
                r.in_flight == 8 && r.admitted >= r.limit && r.errors == 0,
                "{r:?}"
            );
        }
    }
    for name in ["naive-window", "seed001-naive"] {
        assert_eq!(of(name, "seed001").len(), 2, "{name}: one burst per trial");
    }
    // Seed 001's concurrency test, the script cache flushed before each trial: the script is
    // atomic, so a bucket that never refills admits its capacity; one that refills, no less.
    for name in ["lua-bucket", "seed001-lua"] {
        let (moving, still) = (of(name, "take"), of(name, "take-still"));
        assert_eq!(
            (moving.len(), still.len()),
            (2, 2),
            "{name}: one of each per trial"
        );
        for r in still {
            assert_eq!(
                (r.admitted, r.errors),
                (r.limit, 0),
                "{name} decides after a flush: {r:?}"
            );
        }
        for r in moving {
            assert!(r.admitted >= r.limit && r.errors == 0, "{name}: {r:?}");
        }
    }
    let survival: Vec<ratelab::experiments::scripts::CustomSurvivalRow> =
        ratelab::analysis::table::read_typed(&dir.join("survival_custom.csv")).unwrap();
    let events: Vec<String> = survival.iter().map(|r| r.event.name()).collect();
    assert_eq!(
        events,
        ["script-flush", "restart-no-persistence"],
        "{survival:?}"
    );
    assert!(
        survival
            .iter()
            .all(|r| r.strategy.to_string() == "seed001-lua"),
        "{survival:?}"
    );
    for r in of("seed000-lua", "matrix") {
        assert_eq!(r.admitted, r.limit, "the script is atomic: {r:?}");
    }
    for r in of("seed000-naive", "matrix") {
        match r.in_flight {
            1 => assert_eq!(r.admitted, r.limit, "one at a time it is exact: {r:?}"),
            _ => assert!(r.admitted >= r.limit, "a race only over-admits: {r:?}"),
        }
        assert_eq!(r.errors, 0, "{r:?}");
    }

    let phases: Vec<PhaseRow> = PHASES.read(&dir).unwrap();
    let lua = (phases.iter()).find_map(|r| r.limiter.filter(|l| l.is_custom()));
    let lua = lua.expect("the adapter's outage rows");
    assert_eq!(lua.to_string(), "seed000-lua");
    for limiter in [Strategy::LuaBucket, lua] {
        let mine: Vec<&PhaseRow> = (phases.iter())
            .filter(|r| r.limiter == Some(limiter))
            .collect();
        assert_eq!(mine.len(), 5, "{limiter}: five phases, no breaker");
        let off = |phase: Phase| (mine.iter()).find(|r| r.phase == phase && r.breaker == "off");
        let dead = off(Phase::Dead).expect("dead phase");
        assert_eq!(
            dead.degraded_allowed, dead.checks,
            "fail-open answers every dead check: {dead:?}"
        );
        let hung = off(Phase::Hung).expect("hung phase");
        assert_eq!(
            hung.paid_budget, hung.checks,
            "a stopped server answers no check: {hung:?}"
        );
    }
    let queued = |phase: Phase| {
        (phases.iter()).find(|r| {
            r.limiter.is_some_and(|l| l.to_string() == "seed000-queue")
                && r.phase == phase
                && r.breaker == "off"
        })
    };
    let dead = queued(Phase::Dead).expect("the queued adapter's dead phase");
    assert_eq!(
        dead.paid_budget, dead.checks,
        "a queue holds every check of a dead server until its budget ends: {dead:?}"
    );
    // Started by this test's run or its workers, wherever they were re-parented.
    common::assert_marked_gone("adapter.js", &mark);
    let limiters = std::fs::read_to_string(dir.join("limiters.csv")).unwrap();
    for client in ["node-redis", "ioredis"] {
        assert!(
            limiters.contains(client),
            "limiters.csv names {client}:\n{limiters}"
        );
    }
}

#[test]
fn a_manifest_it_cannot_read_stops_the_run_naming_it_with_nothing_written() {
    let out = tempfile::tempdir().unwrap();
    let mut ctx = common::ctx(out.path());
    ctx.sets = common::sets(&[("naive_window", "examples/adapters/no-such/adapter.toml")]);
    let error = ratelab::experiments::find("libraries")
        .expect("registered")
        .run(&ctx)
        .expect_err("a manifest that does not exist");
    let text = format!("{error:#}");
    assert!(
        text.contains("examples/adapters/no-such/adapter.toml") && text.contains("cannot read it"),
        "{text}"
    );
    assert!(!out.path().join("libraries").exists(), "nothing written");
}
