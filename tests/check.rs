//! `ratelab check` from the binary, as a library's CI runs it: exit 0 on an exact limiter with a
//! JUnit report a real JUnit reader parses and claims as claims.json has them; exit 1 naming the
//! claim on a non-atomic library and on a script without a NOSCRIPT fallback; exit 2 on a broken
//! manifest, an unknown check and an adapter that breaks the protocol.

use crate::common;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn manifest(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// `ratelab check ARGS` with its results in `out`.
fn check(out: &Path, args: &[&str]) -> Output {
    Command::new(common::ratelab_exe())
        .arg("check")
        .args(args)
        .arg("--out")
        .arg(out)
        .arg("--quiet")
        .output()
        .expect("ratelab runs")
}

fn text(output: &Output) -> (String, String) {
    let out = String::from_utf8_lossy(&output.stdout).to_string();
    let err = String::from_utf8_lossy(&output.stderr).to_string();
    (out, err)
}

/// The JUnit report as junitparser (PyPI) reads it: per test case its suite, class, name and the
/// kinds of its results (Failure, Skipped). JUNITPARSER_PYTHON names a Python that has it
/// (./run_all.sh --test installs it).
fn junit_cases(path: &Path) -> Vec<serde_json::Value> {
    let python = std::env::var("JUNITPARSER_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = "import json, sys\n\
        from junitparser import JUnitXml\n\
        xml = JUnitXml.fromfile(sys.argv[1])\n\
        print(json.dumps([{'suite': s.name, 'classname': c.classname, 'name': c.name,\n\
            'results': [type(r).__name__ for r in c.result]} for s in xml for c in s]))\n";
    let output = Command::new(&python)
        .args(["-c", script])
        .arg(path)
        .output()
        .unwrap_or_else(|e| panic!("{python} cannot run ({e}): run ./run_all.sh --test"));
    assert!(
        output.status.success(),
        "junitparser could not read the report (run ./run_all.sh --test, which installs it): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice::<Vec<serde_json::Value>>(&output.stdout).unwrap()
}

/// The protocol tests' fixture (a correct fixed window opened by the first hit, on a real Redis)
/// holds every claim of the battery; it has no cluster client, so the cluster check is skipped
/// with why, in the JUnit report too.
#[test]
fn an_exact_adapter_passes_every_check_with_a_junit_report_a_reader_parses() {
    let tmp = tempfile::tempdir().unwrap();
    let (junit, json) = (
        tmp.path().join("report.xml"),
        tmp.path().join("claims.json"),
    );
    let output = check(
        &tmp.path().join("out"),
        &[
            "--limiter",
            manifest("tests/adapters/window.toml").to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let (out, err) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{out}\n{err}");
    assert!(out.contains("SKIP  cluster (cluster)"), "{out}");
    let cases = junit_cases(&junit);
    let claims: Vec<&serde_json::Value> = cases
        .iter()
        .filter(|c| c["classname"] == "ratelab.fixture-window")
        .collect();
    assert!(claims.len() >= 8, "{cases:?}");
    assert!(
        claims
            .iter()
            .all(|c| c["results"].as_array().unwrap().is_empty()),
        "{cases:?}"
    );
    let skipped = cases
        .iter()
        .find(|c| c["name"] == "cluster")
        .expect("the cluster check");
    assert_eq!(skipped["results"], serde_json::json!(["Skipped"]));
    let judged: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(judged.len(), claims.len());
    // Each entry has exactly the fields datapackage.json's schema of claims.json describes.
    let described: Vec<&str> = (ratelab::analysis::claims_json::FIELDS.iter())
        .map(|f| f.0)
        .collect();
    for claim in &judged {
        assert_eq!(claim["verdict"], "holds", "{claim}");
        assert_eq!(claim["seed"], "limiter", "{claim}");
        let fields: Vec<&str> = claim
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(fields.len(), described.len(), "{claim}");
        assert!(fields.iter().all(|f| described.contains(f)), "{claim}");
    }
}

/// rate-limiter-flexible's non-atomic limiter (its own GET then SET) over-admits under
/// concurrency: exit 1, the claim named with its figure.
#[test]
fn a_non_atomic_library_fails_naming_the_claim() {
    let tmp = tempfile::tempdir().unwrap();
    let junit = tmp.path().join("report.xml");
    let rlf = "examples/adapters/rate-limiter-flexible/rlf-non-atomic.toml";
    let output = check(
        &tmp.path().join("out"),
        &[
            "concurrency",
            "--limiter",
            manifest(rlf).to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
        ],
    );
    let (out, err) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{out}\n{err}");
    assert!(
        out.contains("FAIL limiter.rlf-non-atomic.race.matrix-exact: "),
        "{out}"
    );
    assert!(err.contains("limiter claims do not hold"), "{err}");
    let cases = junit_cases(&junit);
    let failed = (cases.iter())
        .find(|c| c["name"] == "limiter.rlf-non-atomic.race.matrix-exact")
        .expect("the claim's test case");
    assert_eq!(failed["results"], serde_json::json!(["Failure"]));
}

/// A script sent by EVALSHA alone never decides again once Redis lost it: exit 1, naming the
/// events.
#[test]
fn a_script_without_a_noscript_fallback_fails_after_it_is_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let output = check(
        &tmp.path().join("out"),
        &[
            "survival",
            "--limiter",
            manifest("examples/limiters/evalsha-no-fallback.toml")
                .to_str()
                .unwrap(),
        ],
    );
    let (out, err) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{out}\n{err}");
    for event in ["restart-no-persistence", "script-flush"] {
        let id = format!("FAIL limiter.evalsha-no-fallback.scripts.{event}-decides-again: ");
        assert!(out.contains(&id), "{event}: {out}");
    }
}

/// What a manifest promises is judged as its documentation states it: a fixture that promises to
/// fail open (it answers errors while Redis is down) fails those claims, each quoting the
/// promise, while the reconnection it promises holds; a script whose documentation disclaims
/// surviving its script's loss is not judged on it, and the check says so with the quote.
#[test]
fn promises_are_judged_with_their_quote_and_a_disclaimed_one_is_not_judged() {
    let tmp = tempfile::tempdir().unwrap();
    let promising = manifest("tests/adapters/promising.toml");
    let output = check(
        &tmp.path().join("out"),
        &["outage", "--limiter", promising.to_str().unwrap()],
    );
    let (out, err) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{out}\n{err}");
    for id in ["fails-open-while-dead", "fails-open-while-hung"] {
        let line = format!("FAIL limiter.fixture-promising.outage.{id}: ");
        assert!(out.contains(&line), "{id}: {out}");
    }
    for id in ["decides-after-restart", "decides-after-hang"] {
        let line = format!("ok   limiter.fixture-promising.outage.{id}: ");
        assert!(out.contains(&line), "{id}: {out}");
    }
    let report = std::fs::read_to_string(tmp.path().join("out/REPORT.md")).unwrap();
    // A run of the user's own limiter opens with its verdicts, before the seeds'.
    let at = |heading: &str| {
        report
            .find(heading)
            .unwrap_or_else(|| panic!("{heading}:\n{report}"))
    };
    assert!(at("## Custom limiters") < at("## Verdicts"), "{report}");
    let quoted = (report.lines())
        .find(|l| l.starts_with("| `limiter.fixture-promising.outage.fails-open-while-dead` |"))
        .unwrap_or_else(|| panic!("its detail row:\n{report}"));
    assert!(
        quoted.contains("“If Redis cannot be reached, every request is allowed.”"),
        "{quoted}"
    );
    let out_dir = tmp.path().join("out");
    assert_eq!(
        common::mutation::every_limiter_claim_can_hold_and_fail(&out_dir),
        5
    );

    let disclaiming = manifest("tests/limiters/reload-is-yours.toml");
    let output = check(
        &tmp.path().join("out2"),
        &["survival", "--limiter", disclaiming.to_str().unwrap()],
    );
    let (out, err) = text(&output);
    assert!(!out.contains("decides-again"), "{out}");
    assert!(
        out.contains("not judged on survives-script-loss (reload-is-yours): its documentation disclaims it: \
             \"After a SCRIPT FLUSH or a restart, call load() again before the next check.\""),
        "{out}"
    );
    assert_eq!(
        output.status.code(),
        Some(2),
        "nothing was judged: {out}\n{err}"
    );
}

/// Bad input stops the check with exit 2 and why, before or instead of any verdict.
#[test]
fn a_broken_manifest_an_unknown_check_and_a_garbling_adapter_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.toml");
    std::fs::write(&bad, "name = \"x\"\n").unwrap();
    let window = manifest("tests/adapters/window.toml");
    let garbage = manifest("tests/adapters/garbage.toml");
    let cases: [(Vec<&str>, &str); 3] = [
        (
            vec!["--limiter", bad.to_str().unwrap()],
            "missing field `algorithm`",
        ),
        (
            vec!["nope", "--limiter", window.to_str().unwrap()],
            "unknown check `nope`",
        ),
        (
            vec!["concurrency", "--limiter", garbage.to_str().unwrap()],
            "not an answer",
        ),
    ];
    for (args, says) in cases {
        let output = check(&tmp.path().join("out"), &args);
        let (out, err) = text(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {out}\n{err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
