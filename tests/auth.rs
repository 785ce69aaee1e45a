//! The servers users actually run, through `--redis-url`: one with `requirepass`, one with the
//! least-privilege ACL user docs/own-server.md documents, one with TLS and client certificates. Each runs a
//! small race and must give what a managed run of the same parameters gives; no file the run
//! wrote, nor anything it printed, may contain the password.

use crate::common;

use ratelab::server::acl::{acl_setuser, KEY_PATTERN};
use ratelab::server::{RedisServer, ServerOptions};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;
use std::sync::OnceLock;

/// A race small enough for a few seconds: one trial of the naive and the atomic bucket at 1x1 and
/// 1x2, seed 001's window pair, and the MONITOR trace.
const RACE: &[&str] = &[
    "run",
    "race",
    "--profile",
    "quick",
    "--quiet",
    "--set",
    "trials=1",
    "--set",
    r#"configs=["1x1","1x2"]"#,
    "--set",
    r#"strategies=["naive-bucket","lua-bucket"]"#,
];

/// The small race into `out`, to which a test adds its server.
fn race_command(out: &Path) -> std::process::Command {
    let mut command = std::process::Command::new(common::ratelab_exe());
    command.args(RACE).arg("--out").arg(out);
    command
}

fn race(out: &Path, args: &[&str]) -> Output {
    race_command(out).args(args).output().unwrap()
}

fn succeeded(output: &Output) {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Admitted per scenario, strategy and configuration, and the traced key's commands in order: what
/// the race measured, which does not depend on whose server it ran on.
#[derive(Debug, PartialEq)]
struct Outcome {
    admitted: BTreeMap<String, Vec<String>>,
    trace: Vec<String>,
}

fn outcome(out: &Path) -> Outcome {
    let mut admitted = BTreeMap::<String, Vec<String>>::new();
    let mut rows = csv::Reader::from_path(out.join("race/race.csv")).unwrap();
    let header = rows.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    for row in rows.records() {
        let row = row.unwrap();
        let key = ["scenario", "strategy", "processes", "in_flight"]
            .map(|c| row[col(c)].to_string())
            .join(" ");
        admitted
            .entry(key)
            .or_default()
            .push(row[col("admitted")].to_string());
    }
    let mut rows = csv::Reader::from_path(out.join("race/trace.csv")).unwrap();
    let header = rows.headers().unwrap().clone();
    let command = header.iter().position(|h| h == "command").unwrap();
    let on_key = header.iter().position(|h| h == "on_trace_key").unwrap();
    // The commands on the traced key; AUTH and SELECT of this run's other connections are not.
    let trace = (rows.records().map(Result::unwrap))
        .filter(|r| &r[on_key] == "true")
        .map(|r| r[command].to_string())
        .collect();
    Outcome { admitted, trace }
}

/// The same race on a server of the harness's own, once for every test here.
fn managed() -> &'static Outcome {
    static MANAGED: OnceLock<Outcome> = OnceLock::new();
    MANAGED.get_or_init(|| {
        let out = tempfile::tempdir().unwrap();
        succeeded(&race(out.path(), &[]));
        outcome(out.path())
    })
}

/// No file under `dir` (hidden and staging ones included) and nothing printed holds `secret`.
fn assert_nowhere(secret: &str, dir: &Path, output: &Output) {
    let mut stack = vec![dir.to_path_buf()];
    let mut files = 0;
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            stack.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        files += 1;
        let bytes = std::fs::read(&path).unwrap();
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "the password is in {}",
            path.display()
        );
    }
    assert!(files >= 4, "only {files} files under {}", dir.display());
    for stream in [&output.stdout, &output.stderr] {
        assert!(!String::from_utf8_lossy(stream).contains(secret));
    }
}

fn meta(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("race/meta.json")).unwrap()).unwrap()
}

/// A managed server that asks for `password` (requirepass).
fn with_password(password: &str) -> RedisServer {
    RedisServer::start(&ServerOptions {
        password: Some(password.into()),
        ..ServerOptions::default()
    })
    .unwrap()
}

fn query(server: &RedisServer, args: &[&str]) -> redis::Value {
    let mut con = server.connection().unwrap();
    redis::cmd(args[0]).arg(&args[1..]).query(&mut con).unwrap()
}

#[test]
fn a_requirepass_server_on_another_database_gives_the_managed_result() {
    let password = "requirepass-Zq81x";
    let server = with_password(password);
    let out = tempfile::tempdir().unwrap();
    let url = format!("redis://:{password}@127.0.0.1:{}/5", server.port());
    let output = race(out.path(), &["--redis-url", &url]);
    succeeded(&output);
    assert_eq!(&outcome(out.path()), managed());
    let meta = meta(out.path());
    let shown = format!("redis://:***@127.0.0.1:{}/5", server.port());
    assert_eq!(meta["redis"]["url"], shown.as_str(), "{meta}");
    assert_eq!(meta["redis"]["tls"], false);
    assert_nowhere(password, out.path(), &output);
    // The run's commands went to database 5 (and its keys were deleted there afterwards).
    let keyspace = String::from_utf8_lossy(&match query(&server, &["INFO", "commandstats"]) {
        redis::Value::BulkString(b) => b,
        other => panic!("{other:?}"),
    })
    .into_owned();
    assert!(keyspace.contains("cmdstat_select:calls="), "{keyspace}");
}

/// The URL from RATELAB_REDIS_URL keeps the password off every command line but redis-benchmark's,
/// which takes it no other way: calibrate says so in its notes.
#[test]
fn the_url_from_the_environment_targets_the_users_server_and_calibrate_names_its_exposure() {
    let password = "from-env-Kp47w";
    let server = with_password(password);
    let url = format!("redis://:{password}@127.0.0.1:{}/3", server.port());
    let out = tempfile::tempdir().unwrap();
    let output = (race_command(out.path()).env("RATELAB_REDIS_URL", &url))
        .output()
        .unwrap();
    succeeded(&output);
    assert_eq!(&outcome(out.path()), managed());
    let shown = format!("redis://:***@127.0.0.1:{}/3", server.port());
    assert_eq!(meta(out.path())["redis"]["url"], shown.as_str());
    assert_nowhere(password, out.path(), &output);

    let output = std::process::Command::new(common::ratelab_exe())
        .args(["run", "calibrate", "--profile", "quick", "--quiet", "--out"])
        .arg(out.path())
        .args([
            "--set",
            "pairs=1",
            "--set",
            "seconds=0.2",
            "--set",
            "warmup_seconds=0",
        ])
        .args([
            "--set",
            "keys=100",
            "--set",
            r#"commands=["GET"]"#,
            "--set",
            "depths=[1]",
        ])
        .env("RATELAB_REDIS_URL", &url)
        .output()
        .unwrap();
    succeeded(&output);
    let meta: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("calibrate/meta.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(meta["redis"]["managed"], false);
    assert!(
        meta["notes"]
            .to_string()
            .contains("could read it in the process list"),
        "{}",
        meta["notes"]
    );
    assert_nowhere(password, out.path(), &output);
}

/// Every key a run touches, the permission check's probes included, lies under the run's own
/// prefix `ratelab:<experiment>:...`: a user whose keys are only `ratelab:race:*` runs race.
#[test]
fn a_user_limited_to_the_experiments_own_keys_runs_it() {
    let admin_password = "admin-Hq55t";
    let password = "race-only-Zm19c";
    let server = with_password(admin_password);
    let line = acl_setuser("racer", password).replace(KEY_PATTERN, "~ratelab:race:*");
    query(&server, &line.split(' ').collect::<Vec<_>>());
    let out = tempfile::tempdir().unwrap();
    let url = format!("redis://racer:{password}@127.0.0.1:{}/", server.port());
    let output = race(out.path(), &["--redis-url", &url]);
    succeeded(&output);
    assert_eq!(&outcome(out.path()), managed());
}

#[test]
fn the_documented_acl_user_runs_race_and_may_not_flush_reconfigure_or_list_keys() {
    let admin_password = "admin-Vb20q";
    let password = "least-privilege-Kp73w";
    let server = with_password(admin_password);
    let line = acl_setuser("ratelab", password);
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/own-server.md"))
            .unwrap();
    assert!(
        readme.contains(&acl_setuser("ratelab", "PASSWORD")),
        "docs/own-server.md shows another ACL line than {line}"
    );
    let words: Vec<&str> = line.split(' ').collect();
    query(&server, &words);
    for denied in [
        &["FLUSHALL"][..],
        &["FLUSHDB"],
        &["KEYS", "*"],
        &["CONFIG", "SET", "save", ""],
        &["CONFIG", "GET", "save"],
        &["SHUTDOWN"],
        &["DEBUG", "SLEEP", "0"],
        &["FUNCTION", "FLUSH"],
        &["SCRIPT", "FLUSH"],
        &["SET", "someone-elses-key", "1"],
    ] {
        let mut dry = vec!["ACL", "DRYRUN", "ratelab"];
        dry.extend(denied);
        let reply = query(&server, &dry);
        assert!(
            matches!(&reply, redis::Value::BulkString(b) if b.starts_with(b"This user has no permissions")),
            "{denied:?}: {reply:?}"
        );
    }
    let out = tempfile::tempdir().unwrap();
    let url = format!("redis://ratelab:{password}@127.0.0.1:{}/", server.port());
    let output = race(out.path(), &["--redis-url", &url]);
    succeeded(&output);
    assert_eq!(&outcome(out.path()), managed());
    let meta = meta(out.path());
    assert!(
        meta["redis"]["config_unreadable"]
            .as_str()
            .is_some_and(|c| c.contains("CONFIG GET denied")),
        "{meta}"
    );
    assert_nowhere(password, out.path(), &output);
}

#[test]
fn a_missing_permission_is_named_with_its_rule_before_anything_is_measured() {
    let server = common::start_server();
    let line = acl_setuser("nomonitor", "pw-Nm4").replace(" +monitor", "");
    query(&server, &line.split(' ').collect::<Vec<_>>());
    let out = tempfile::tempdir().unwrap();
    let url = format!("redis://nomonitor:pw-Nm4@127.0.0.1:{}/", server.port());
    let output = race(out.path(), &["--redis-url", &url]);
    assert!(!output.status.success());
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains("user `nomonitor` may not run `MONITOR`, which race needs: add `+monitor`"),
        "{err}"
    );
    assert!(!out.path().join("race").exists());
    // Nothing was measured: no limiter ever ran on the server.
    let stats = match query(&server, &["INFO", "commandstats"]) {
        redis::Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
        other => panic!("{other:?}"),
    };
    assert!(
        !stats.contains("cmdstat_hset") && !stats.contains("cmdstat_evalsha"),
        "{stats}"
    );
}

#[test]
fn tls_with_the_users_ca_and_client_certificate_gives_the_managed_result() {
    let server = RedisServer::start(&ServerOptions {
        tls: true,
        ..ServerOptions::default()
    })
    .unwrap();
    let certs = server.certs().unwrap();
    let url = format!("rediss://127.0.0.1:{}/", server.port());
    let files = [
        ("--tls-ca", &certs.ca),
        ("--tls-cert", &certs.client_cert),
        ("--tls-key", &certs.client_key),
    ];
    let mut args = vec!["--redis-url".to_string(), url.clone()];
    for (flag, file) in files {
        args.extend([flag.to_string(), file.display().to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = tempfile::tempdir().unwrap();
    succeeded(&race(out.path(), &args));
    assert_eq!(&outcome(out.path()), managed());
    assert_eq!(meta(out.path())["redis"]["tls"], true);

    // Without the client certificate the server refuses the handshake; without the CA the
    // server's certificate is not trusted: both are clear errors before anything is measured.
    for args in [&args[..4], &[&args[..2], &args[4..]].concat()[..]] {
        let out = tempfile::tempdir().unwrap();
        let output = race(out.path(), args);
        assert!(!output.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&output.stderr);
        assert!(
            err.contains("no TLS session with the server"),
            "{args:?}: {err}"
        );
        assert!(!out.path().join("race").exists());
    }
}

#[test]
fn managed_servers_started_with_tls_give_the_same_result_and_say_so() {
    let out = tempfile::tempdir().unwrap();
    succeeded(&race(out.path(), &["--tls"]));
    assert_eq!(&outcome(out.path()), managed());
    let meta = meta(out.path());
    assert_eq!(meta["redis"]["tls"], true);
    assert!(meta["redis"]["url"]
        .as_str()
        .unwrap()
        .starts_with("rediss://127.0.0.1:"));
    let output = std::process::Command::new(common::ratelab_exe())
        .args(["run", "replication", "--profile", "quick", "--tls", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains("`replication` does not run with --tls"),
        "{err}"
    );
}
