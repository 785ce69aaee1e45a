//! Bad input, each case a real run of the binary: a clear message naming what is wrong and what to
//! do, a non-zero exit, and nothing lost (earlier results and the user's files untouched, no
//! results directory for a run that did not happen). Cases elsewhere, not repeated here:
//! tests/cli.rs (`--out` naming a file, a missing redis-server, a server that dies mid-run,
//! SIGTERM and SIGKILL of the harness, `report` of a missing directory, an unknown parameter or
//! experiment) and tests/auth.rs (a missing ACL permission, TLS without the CA or the client
//! certificate).

use crate::common;

use ratelab::server::{RedisServer, ServerOptions};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn ratelab(args: &[&str]) -> Output {
    Command::new(common::ratelab_exe())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Runs the quick race into `out` with `args`, expects failure, returns stderr.
fn race_fails(out: &Path, args: &[&str]) -> String {
    let mut all = vec!["run", "race", "--profile", "quick", "--quiet"];
    all.extend(args);
    all.extend(["--out", out.to_str().unwrap()]);
    let output = ratelab(&all);
    assert!(!output.status.success(), "{args:?} succeeded");
    assert!(!out.join("race").exists(), "{args:?} left results behind");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A results directory with the reference race in it, for the cases that must not lose it.
fn with_reference_race() -> tempfile::TempDir {
    let out = tempfile::tempdir().unwrap();
    let race = out.path().join("race");
    std::fs::create_dir(&race).unwrap();
    let reference = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/reference/race");
    for name in ["race.csv", "trace.csv", "meta.json"] {
        std::fs::copy(reference.join(name), race.join(name)).unwrap();
    }
    out
}

#[test]
fn an_out_dir_that_is_not_writable_is_refused_before_any_server_starts() {
    let dir = tempfile::tempdir().unwrap();
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    // Root writes through permission bits: then sysfs, where nobody may create a file, stands in.
    let writable = tempfile::tempfile_in(&locked).is_ok();
    let out = if writable { Path::new("/sys") } else { &locked };
    let output = ratelab(&[
        "run",
        "race",
        "--profile",
        "quick",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!output.status.success());
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains(&format!("--out {} is not writable", out.display())),
        "{err}"
    );
    assert!(!err.contains("redis-server"), "a server was started: {err}");
}

#[test]
fn report_and_chart_of_a_directory_without_results_say_so_and_write_nothing() {
    let empty = tempfile::tempdir().unwrap();
    let dir = empty.path().to_str().unwrap();
    for command in ["report", "chart"] {
        let output = ratelab(&[command, dir]);
        assert!(!output.status.success(), "{command}");
        let err = String::from_utf8_lossy(&output.stderr);
        let said = match command {
            "report" => format!("{dir} has no results"),
            _ => format!("no CSVs with charts found under {dir}"),
        };
        assert!(err.contains(&said), "{command}: {err}");
    }
    assert_eq!(std::fs::read_dir(empty.path()).unwrap().count(), 0);
}

/// A directory that does not exist is named as missing; a comparison whose --out is a directory
/// is refused before any run is read, naming a file to give instead.
#[test]
fn report_of_a_missing_directory_and_a_comparison_into_a_directory_say_what_to_give() {
    let empty = tempfile::tempdir().unwrap();
    let missing = empty.path().join("nope");
    let output = ratelab(&["report", missing.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && err.contains("does not exist"),
        "{err}"
    );
    let reference = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/reference");
    let runs = [reference.to_str().unwrap(), reference.to_str().unwrap()];
    let output = ratelab(&[
        "report",
        runs[0],
        runs[1],
        "--out",
        empty.path().to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && err.contains("is a directory: name the comparison's file"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(empty.path()).unwrap().count(), 0);
}

#[test]
fn a_truncated_csv_is_named_with_its_line_by_chart_and_report_and_kept() {
    let out = with_reference_race();
    let csv = out.path().join("race/race.csv");
    let text = std::fs::read_to_string(&csv).unwrap();
    // Cut in the middle of the 11th row (line 12 of the file), as a full disk or a kill would.
    let cut: usize = text.lines().take(11).map(|l| l.len() + 1).sum::<usize>() + 7;
    std::fs::write(&csv, &text[..cut]).unwrap();
    let dir = out.path().to_str().unwrap();
    for command in ["chart", "report"] {
        let output = ratelab(&[command, dir]);
        assert!(!output.status.success(), "{command}");
        let err = String::from_utf8_lossy(&output.stderr);
        assert!(
            err.contains(&csv.display().to_string()) && err.contains("line: 12"),
            "{command}: {err}"
        );
    }
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), text[..cut]);
}

#[test]
fn a_server_binary_that_is_not_redis_server_is_named() {
    let out = with_reference_race();
    let before = std::fs::read(out.path().join("race/race.csv")).unwrap();
    let output = ratelab(&[
        "run",
        "race",
        "--profile",
        "quick",
        "--redis-server",
        "/bin/echo",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert!(!output.status.success());
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains("`/bin/echo` is not a redis-server: `--version` printed \"echo"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(out.path().join("race/race.csv")).unwrap(),
        before
    );
}

/// Each cause of an error once: a message that displays its cause and also hands it on as the
/// next cause printed it two or three times ("could not start `x`: Permission denied" above
/// "Permission denied").
#[test]
fn every_cause_of_an_error_is_printed_once() {
    let tmp = tempfile::tempdir().unwrap();
    let not_gzip = tmp.path().join("results.tar.gz");
    std::fs::write(&not_gzip, "plain text, not a gzip stream\n").unwrap();
    let output = ratelab(&["verify", not_gzip.to_str().unwrap()]);
    assert!(!output.status.success());
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains("is truncated or not a .tar.gz archive"),
        "{err}"
    );
    assert_eq!(err.matches("invalid gzip header").count(), 1, "{err}");

    // A redis-server that cannot be executed: the spawn's own error is the innermost cause.
    let not_executable = tmp.path().join("redis-server");
    std::fs::write(&not_executable, "#!/bin/sh\n").unwrap();
    let out = tmp.path().join("out");
    let err = race_fails(&out, &["--redis-server", not_executable.to_str().unwrap()]);
    let spawn = format!("could not start `{}`", not_executable.display());
    assert_eq!(err.matches(&spawn).count(), 1, "{err}");
    assert_eq!(err.matches("Permission denied").count(), 1, "{err}");
    let lines: Vec<&str> = err.lines().collect();
    let mut distinct = lines.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), lines.len(), "a line printed twice: {err}");
}

#[test]
fn a_port_held_by_something_that_is_not_redis_is_named_as_such() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // An HTTP server, say: it answers every connection with an HTTP error and hangs up.
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let out = tempfile::tempdir().unwrap();
    let url = format!("redis://127.0.0.1:{port}/");
    let err = race_fails(out.path(), &["--redis-url", &url]);
    assert!(
        err.contains(&format!(
            "cannot use --redis-url {url}: the server did not answer as Redis does"
        )),
        "{err}"
    );
}

#[test]
fn a_closed_port_is_named_with_what_to_check() {
    // A port just freed: nothing listens on it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = tempfile::tempdir().unwrap();
    let url = format!("redis://127.0.0.1:{port}/");
    let err = race_fails(out.path(), &["--redis-url", &url]);
    assert!(
        err.contains(&format!(
            "cannot use --redis-url {url}: nothing accepts connections there"
        )),
        "{err}"
    );
}

#[test]
fn a_wrong_password_and_a_missing_one_are_told_apart_and_never_printed() {
    let server = RedisServer::start(&ServerOptions {
        password: Some("right-Pw9".into()),
        ..ServerOptions::default()
    })
    .unwrap();
    let port = server.port();
    let out = tempfile::tempdir().unwrap();
    let wrong = format!("redis://:wrong-Pw9@127.0.0.1:{port}/");
    let err = race_fails(out.path(), &["--redis-url", &wrong]);
    assert!(
        err.contains(&format!(
            "--redis-url redis://:***@127.0.0.1:{port}/: the server refused the user or password"
        )),
        "{err}"
    );
    assert!(!err.contains("wrong-Pw9"), "{err}");
    let none = format!("redis://127.0.0.1:{port}/");
    let err = race_fails(out.path(), &["--redis-url", &none]);
    assert!(
        err.contains("the server asks for a password: put it in the URL"),
        "{err}"
    );
}

#[test]
fn a_replica_is_refused_before_a_write_fails_readonly() {
    let primary = common::start_server();
    let replica = RedisServer::start_replica_of(&primary, &ServerOptions::default()).unwrap();
    let out = tempfile::tempdir().unwrap();
    let err = race_fails(out.path(), &["--redis-url", &replica.url()]);
    assert!(
        err.contains(&format!(
            "names a replica (of 127.0.0.1:{}): ratelab writes its limiters' keys, which a replica refuses (READONLY)",
            primary.port()
        )),
        "{err}"
    );
}

#[test]
fn a_cluster_node_given_to_a_standalone_experiment_is_refused() {
    let node = RedisServer::start(&ServerOptions {
        cluster_node: true,
        ..ServerOptions::default()
    })
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let err = race_fails(out.path(), &["--redis-url", &node.url()]);
    assert!(
        err.contains("names a Redis Cluster node: race runs on one Redis without cluster mode"),
        "{err}"
    );
}

#[test]
fn urls_and_tls_flags_that_cannot_work_are_refused_before_anything_starts() {
    let out = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["--redis-url", "http://:pw-Ht1@127.0.0.1:6379/"],
            "scheme `http`",
        ),
        (
            &["--redis-url", "redis://:pw-Ht1@127.0.0.1:6379/x"],
            "`/x` is not a database number",
        ),
        (
            &[
                "--redis-url",
                "redis://:pw-Ht1@127.0.0.1:6379/",
                "--tls-ca",
                "/etc/hostname",
            ],
            "need a rediss:// URL",
        ),
        (
            &[
                "--redis-url",
                "rediss://:pw-Ht1@127.0.0.1:6379/",
                "--tls-ca",
                "/nonexistent/ca.crt",
            ],
            "/nonexistent/ca.crt",
        ),
        (&["--tls-ca", "/etc/hostname"], "give --redis-url rediss://"),
        // Not a URL: shown as typed, so the user sees what is wrong; only a password is masked.
        (
            &["--redis-url", "notaurl"],
            "--redis-url notaurl: not a URL",
        ),
        (
            &["--redis-url", "u:pw-Ht1@127.0.0.1:6379"],
            "--redis-url u:***@127.0.0.1:6379: scheme `u`",
        ),
        (
            &["--redis-url", "redis://u:pw-Ht1@127.0.0.1:port/"],
            "--redis-url redis://u:***@127.0.0.1:port/: not a URL",
        ),
    ];
    for (args, want) in cases {
        let err = race_fails(out.path(), args);
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(
            !err.contains("pw-Ht1"),
            "{args:?} printed the password: {err}"
        );
    }
}

/// SIGINT (Ctrl-C) in the middle of `all`: exit 130, every server and worker stopped, earlier
/// results kept, the interrupted experiment's rows set aside.
#[test]
fn sigint_during_all_stops_everything_and_keeps_earlier_results() {
    let out = with_reference_race();
    let before = std::fs::read(out.path().join("race/race.csv")).unwrap();
    let mut child = Command::new(common::ratelab_exe())
        .args(["all", "--profile", "quick", "--quiet", "--out"])
        .arg(out.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let staged = out
        .path()
        .join(format!(".race.partial-{}/race.csv", child.id()));
    let started = common::wait_for(Duration::from_secs(60), || {
        std::fs::read_to_string(&staged).is_ok_and(|t| t.lines().count() >= 2)
    });
    let servers = common::redis_children(child.id());
    if !started || servers.is_empty() {
        let _ = child.kill();
        panic!("race never flushed a row under `all` (servers {servers:?})");
    }
    // SAFETY: a signal to the process this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for pid in servers {
        assert!(
            common::wait_for(Duration::from_secs(5), || !common::pid_alive(pid)),
            "redis-server {pid} outlived the interrupt"
        );
    }
    assert_eq!(
        std::fs::read(out.path().join("race/race.csv")).unwrap(),
        before
    );
    assert!(out.path().join(".race.failed/race.csv").is_file());
    assert!(
        !out.path().join("atomic").exists(),
        "`all` went on after the interrupt"
    );
}
