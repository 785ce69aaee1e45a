//! Custom limiters written the way public libraries write them, each reproducing one way a
//! verdict about a real limiter script went wrong (issue 36), against real redis-servers.

use crate::common;

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

fn run(id: &str, out: &Path, limiters: Vec<Strategy>, sets: &[(&str, &str)]) -> PathBuf {
    common::run_with_limiters(id, out, limiters, sets)
}

#[test]
fn a_two_window_script_counts_its_own_window_once() {
    let tmp = tempfile::tempdir().unwrap();
    // The example a user reads is the script under test: two window keys named by the caller.
    let manifest =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/limiters/sliding-two-keys.toml");
    let limiter = custom::register(custom::load(&manifest).expect("example manifest loads"));
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

#[test]
fn a_bucket_that_divides_by_its_refill_is_probed_with_a_real_refill_and_told_when_it_gets_zero() {
    let tmp = tempfile::tempdir().unwrap();
    let limiter = load("divide-by-refill.toml");
    // latency refills its buckets: the probe and the run both hand the script a real rate.
    let dir = run(
        "latency",
        tmp.path(),
        vec![limiter],
        &[
            ("runs", "1"),
            ("requests", "50"),
            ("warmup", "5"),
            ("strategies", r#"["lua-bucket"]"#),
        ],
    );
    let meta = std::fs::read_to_string(dir.join("meta.json")).unwrap();
    assert!(
        meta.contains("custom limiter divide-by-refill") && meta.contains("admitted 5 of 6"),
        "{meta}"
    );
    // race means a bucket that never refills: the script cannot run it, and the error says why.
    let mut ctx = common::ctx(&tmp.path().join("race-out"));
    ctx.limiters = vec![limiter];
    ctx.sets = common::sets(&[("configs", r#"["1x1"]"#), ("trials", "1")]);
    let err = ratelab::errors::one_line(&find("race").unwrap().run(&ctx).unwrap_err());
    assert!(
        err.contains("not an integer or out of range")
            && err.contains("ratelab passed {rate_per_s} = 0"),
        "{err}"
    );
}

#[test]
fn a_library_key_layout_is_written_under_the_run_prefix_and_a_stray_key_is_refused() {
    let server = common::start_server();
    let limiter = load("outside-prefix.toml");
    let spec = ratelab::limiter::LimitSpec {
        capacity: 3,
        window_ms: 600_000,
        ..Default::default()
    };
    let checker = ratelab::limiter::Limiter::new(limiter, spec);
    let prefix = "ratelab:race:abc:42:";
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let admitted = runtime.block_on(async {
        let client = redis::Client::open(server.url()).unwrap();
        let mut con = client.get_multiplexed_async_connection().await.unwrap();
        let probe = custom::probe(&mut con, limiter, &format!("{prefix}probe"))
            .await
            .expect("the probe passes");
        assert_eq!(probe.admitted, probe.limit);
        let mut admitted = 0;
        for _ in 0..5 {
            let d = checker
                .check(&mut con, &format!("{prefix}user:1"))
                .await
                .unwrap();
            admitted += u64::from(d.allowed);
        }
        admitted
    });
    assert_eq!(admitted, 3);
    let mut con = server.connection().unwrap();
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut con).unwrap();
    keys.sort();
    assert_eq!(
        keys,
        [
            "ratelab:race:abc:42:global:requests",
            "ratelab:race:abc:42:rate:ratelab:race:abc:42:probe",
            "ratelab:race:abc:42:rate:ratelab:race:abc:42:user:1",
        ],
        "every key under the run's prefix, the empty one never written"
    );

    // A literal key nobody declared is refused, naming the way to declare it.
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("outside-prefix.toml")).unwrap();
    std::fs::copy(
        fixture("outside_prefix.lua"),
        tmp.path().join("outside_prefix.lua"),
    )
    .unwrap();
    let path = tmp.path().join("m.toml");
    std::fs::write(
        &path,
        text.replace("shared_keys = [\"global:requests\", \"\"]\n", ""),
    )
    .unwrap();
    let err = custom::load(&path).unwrap_err().to_string();
    assert!(
        err.contains("m.toml line 7") && err.contains("shared_keys = [\"global:requests\"]"),
        "{err}"
    );
}

#[test]
fn a_limiter_that_admits_half_its_limit_is_flagged_as_under_admitting() {
    let tmp = tempfile::tempdir().unwrap();
    let limiter = load("double-charge.toml");
    run(
        "race",
        tmp.path(),
        vec![limiter],
        &[
            ("configs", r#"["1x1", "1x8"]"#),
            ("trials", "1"),
            ("strategies", r#"["lua-bucket"]"#),
        ],
    );
    let (verdict, measured) =
        common::limiter_claim(tmp.path(), "limiter.double-charge.race.matrix-exact");
    assert_eq!(verdict, "DIFFERS", "{measured}");
    assert!(measured.contains("max 50 (n = 2)"), "{measured}");
    common::mutation::every_limiter_claim_can_hold_and_fail(tmp.path());
}

#[test]
fn the_survival_verdict_reads_what_each_invocation_mode_does() {
    let tmp = tempfile::tempdir().unwrap();
    let limiters = ["no-fallback", "eval-every-call", "load-and-retry"]
        .map(|name| load(&format!("{name}.toml")))
        .to_vec();
    run(
        "scripts",
        tmp.path(),
        limiters,
        &[
            ("modes", r#"["evalsha-eval"]"#),
            ("runs", "1"),
            ("run_seconds", "0.2"),
            ("warmup_seconds", "0.1"),
            ("flush_modes", r#"["evalsha-eval"]"#),
            ("flush_before_ms", "100"),
            ("flush_after_ms", "200"),
            ("reload_after_ms", "100"),
            ("survival_modes", r#"["evalsha"]"#),
            (
                "events",
                r#"["restart-no-persistence", "restart-rdb", "script-flush", "function-flush"]"#,
            ),
        ],
    );
    let lost = "restart-no-persistence, restart-rdb, script-flush";
    let survival = |name| common::custom_limiter_cell(tmp.path(), name, "NOSCRIPT survival");
    // EVALSHA alone was read as EVALSHA with an EVAL fallback: "survives 4 of 4".
    assert_eq!(
        survival("no-fallback"),
        format!("evalsha: survives 1 of 4 events; fails after {lost}")
    );
    assert_eq!(survival("eval-every-call"), "eval: survives 4 of 4 events");
    assert_eq!(
        survival("load-and-retry"),
        format!("evalsha-load: survives 4 of 4 events; reloaded after {lost}")
    );
    // The same, as claims: a script without a fallback never decides again after losing it.
    let claim = |name: &str, event: &str| {
        let id = format!("limiter.{name}.scripts.{event}-decides-again");
        common::limiter_claim(tmp.path(), &id).0
    };
    for event in ["restart-no-persistence", "restart-rdb", "script-flush"] {
        assert_eq!(claim("no-fallback", event), "DIFFERS", "{event}");
        assert_eq!(claim("load-and-retry", event), "holds", "{event}");
    }
    assert_eq!(claim("no-fallback", "function-flush"), "holds");
    assert_eq!(claim("eval-every-call", "script-flush"), "holds");
    let checked = common::mutation::every_limiter_claim_can_hold_and_fail(tmp.path());
    assert_eq!(checked, 12, "three limiters through four events");
}

#[test]
fn a_window_opened_by_the_first_hit_is_burst_at_its_own_edge() {
    let tmp = tempfile::tempdir().unwrap();
    let limiters = vec![load("first-hit.toml"), load("first-hit-unsaid.toml")];
    let dir = run(
        "window-edge",
        tmp.path(),
        limiters,
        &[("trials", "1"), ("strategies", r#"["lua-bucket"]"#)],
    );
    let rows: Vec<ratelab::experiments::window_edge::WindowEdgeRow> =
        ratelab::analysis::table::read_typed(&dir.join("window-edge.csv")).unwrap();
    let of = |name: &str| rows.iter().find(|r| r.strategy.name() == name).unwrap();
    // At its own edge a fixed window takes L - 1 + L inside one second (less what a loaded
    // machine sends late across the edge); bursts on the clock's edge fall in one of its windows.
    let own = of("first-hit");
    assert!(own.max_per_limit > 1.5, "{own:?}");
    let clock = of("first-hit-unsaid");
    assert!(clock.max_admitted_in_1s <= clock.limit + 1, "{clock:?}");
    let cell = common::custom_limiter_cell(tmp.path(), "first-hit", "window edge: most");
    assert!(
        cell.contains("burst at the edge") && cell.contains("edge: first hit + window"),
        "{cell}"
    );
    // A fixed window does not refill: no edge burst is not "bounded by refill".
    let cell = common::custom_limiter_cell(tmp.path(), "first-hit-unsaid", "window edge: most");
    assert!(
        cell.starts_with("1.00 (no burst at this edge") && cell.contains("epoch-aligned"),
        "{cell}"
    );
    // That false "no burst" is what its manifest's default anchor gave it: the run says so, from
    // its key's expiry after the probe; the manifest that says first-hit gets no warning.
    let meta = std::fs::read_to_string(dir.join("meta.json")).unwrap();
    let warned = |name: &str| {
        meta.contains(&format!(
            "WARNING: custom limiter {name}: its manifest says anchor"
        ))
    };
    assert!(warned("first-hit-unsaid"), "{meta}");
    assert!(
        !warned("first-hit") && meta.contains("a whole window left"),
        "{meta}"
    );
    common::mutation::every_limiter_claim_can_hold_and_fail(tmp.path());
}

#[test]
fn a_multi_token_request_is_charged_its_cost_and_judged_against_limit_over_cost() {
    let tmp = tempfile::tempdir().unwrap();
    let limiters = vec![load("multi-token.toml"), load("cost-ignored.toml")];
    let dir = run(
        "race",
        tmp.path(),
        limiters.clone(),
        &[
            ("configs", r#"["1x1", "4x8"]"#),
            ("trials", "1"),
            ("cost", "5"),
            ("strategies", "[]"),
            ("seed001_strategies", "[]"),
        ],
    );
    let rows: Vec<ratelab::experiments::race::RaceRow> =
        ratelab::analysis::table::read_typed(&dir.join("race.csv")).unwrap();
    let taken = |l: Strategy| {
        (rows.iter())
            .filter(|r| r.scenario == "matrix" && r.strategy == l)
            .map(|r| (r.admitted, r.cost))
            .collect::<Vec<_>>()
    };
    // 100 tokens, 5 a request: 20 requests pass at any concurrency.
    assert_eq!(taken(limiters[0]), [(20, 5), (20, 5)]);
    let claim = |name: &str| format!("limiter.{name}.race.matrix-exact");
    let (verdict, measured) = common::limiter_claim(tmp.path(), &claim("multi-token"));
    assert_eq!(verdict, "holds", "{measured}");
    // Charged one token a request, it passes the bucket's 100: five times what cost 5 allows.
    let (verdict, measured) = common::limiter_claim(tmp.path(), &claim("cost-ignored"));
    assert_eq!(verdict, "DIFFERS", "{measured}");
    assert!(measured.contains("max 100 (n = 2)"), "{measured}");

    // atomic asks the same cost, at a capacity above the checks' tokens and one below.
    run(
        "atomic",
        &tmp.path().join("atomic"),
        limiters.clone(),
        &[
            ("configs", r#"["1x1", "4x8"]"#),
            ("cost", "5"),
            ("strategies", "[]"),
        ],
    );
    let atomic = tmp.path().join("atomic");
    // 500 checks of 5 tokens: a capacity of 1000 takes 200 of them, one of 100 takes 20.
    for (capacity, admitted) in [(1000, 500), (100, 100)] {
        let id = format!("limiter.cost-ignored.atomic.exact-limit-{capacity}-cost-5-checks-500");
        let (verdict, measured) = common::limiter_claim(&atomic, &id);
        assert_eq!(verdict, "DIFFERS", "{measured}");
        assert!(
            measured.contains(&format!("max {admitted} (n = 4)")),
            "{measured}"
        );
    }
    common::mutation::every_limiter_claim_can_hold_and_fail(&atomic);

    // The built-in strategies take one token a request: a cost is refused for them, saying how
    // to run the custom limiters alone.
    let mut ctx = common::ctx(&tmp.path().join("builtins"));
    ctx.limiters = limiters;
    ctx.sets = common::sets(&[("cost", "5")]);
    let err = ratelab::errors::one_line(&find("race").unwrap().run(&ctx).unwrap_err());
    assert!(
        err.contains("cost = 5: the built-in strategies (naive-bucket, lua-bucket")
            && err.contains("--set strategies=[]"),
        "{err}"
    );
}

#[test]
fn a_key_that_expires_before_its_window_ends_is_flagged() {
    let tmp = tempfile::tempdir().unwrap();
    // Beside it, a first-hit window whose key lives the whole window: not flagged.
    let limiters = vec![load("minute-ttl.toml"), load("first-hit.toml")];
    run(
        "race",
        tmp.path(),
        limiters,
        &[
            ("configs", r#"["1x1"]"#),
            ("trials", "1"),
            ("strategies", "[]"),
            ("seed001_strategies", "[]"),
        ],
    );
    // The trial is seconds long: the count never lapsed, so admission alone reads exact.
    let race = common::limiter_claim(tmp.path(), "limiter.minute-ttl.race.matrix-exact");
    assert_eq!(race.0, "holds", "{}", race.1);
    let keys = common::custom_limiter_cell(tmp.path(), "minute-ttl", "keys left");
    // The trial starts at its window's start, so almost all of the 600 s window remained when the
    // key was written: 600.0 once rounded, when the write followed the start within 50 ms.
    let remained = (keys.split(" s left when ").nth(1))
        .and_then(|rest| rest.split(" s of its window").next())
        .and_then(|s| s.parse::<f64>().ok());
    assert!(
        keys.contains("1 of 1 expire before their window ends (shortest: ")
            && remained.is_some_and(|s| (590.0..=600.0).contains(&s)),
        "{keys}"
    );
    let keys = common::custom_limiter_cell(tmp.path(), "first-hit", "keys left");
    assert!(
        keys.starts_with("1 (string); all expire") && !keys.contains("before"),
        "{keys}"
    );
}

#[test]
fn a_decision_read_from_two_reply_elements_or_an_arrays_length_is_judged_like_any_other() {
    let tmp = tempfile::tempdir().unwrap();
    let limiters = vec![load("count-and-limit.toml"), load("log-members.toml")];
    run(
        "race",
        tmp.path(),
        limiters,
        &[
            ("configs", r#"["1x1", "4x8"]"#),
            ("trials", "1"),
            ("strategies", "[]"),
            ("seed001_strategies", "[]"),
        ],
    );
    for name in ["count-and-limit", "log-members"] {
        let id = format!("limiter.{name}.race.matrix-exact");
        let (verdict, measured) = common::limiter_claim(tmp.path(), &id);
        assert_eq!(verdict, "holds", "{name}: {measured}");
    }
}

#[test]
fn a_wait_answered_in_seconds_is_read_as_ms() {
    let server = common::start_server();
    let limiter = load("retry-seconds.toml");
    let spec = ratelab::limiter::LimitSpec {
        capacity: 2,
        window_ms: 600_000,
        ..Default::default()
    };
    let checker = ratelab::limiter::Limiter::new(limiter, spec);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let decisions = runtime.block_on(async {
        let client = redis::Client::open(server.url()).unwrap();
        let mut con = client.get_multiplexed_async_connection().await.unwrap();
        let mut decisions = Vec::new();
        for _ in 0..3 {
            let d = checker.check(&mut con, "ratelab:t:1:1:user").await.unwrap();
            decisions.push((d.allowed, d.retry_ms));
        }
        decisions
    });
    // The script answers 600 (seconds, rounded up); the window has 600,000 ms left at most.
    let (allowed, retry_ms) = decisions[2];
    assert!(!allowed, "{decisions:?}");
    assert_eq!(retry_ms, 600_000, "{decisions:?}");
}
