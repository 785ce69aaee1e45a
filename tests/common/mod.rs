//! Helpers shared by the integration tests: real servers, the real worker binary, process checks.
#![allow(dead_code)]

pub mod mutation;

use ratelab::context::Ctx;
use ratelab::server::{RedisServer, ServerOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The ratelab binary cargo built for this test run (workers re-execute it).
pub fn ratelab_exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ratelab"))
}

/// A managed server, unpinned (tests run in parallel; pinning them all to CPU 0 would serialise them).
pub fn start_server() -> RedisServer {
    RedisServer::start(&ServerOptions::default()).expect("redis-server starts (is it installed?)")
}

/// `--set` pairs as the context holds them.
pub fn sets(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    (pairs.iter())
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// Runs experiment `id` (quick profile, these `--set`s) into `out`; its directory.
pub fn run_experiment(id: &str, out: &Path, set: &[(&str, &str)]) -> PathBuf {
    let mut ctx = ctx(out);
    ctx.sets = sets(set);
    ratelab::experiments::find(id)
        .expect("registered")
        .run(&ctx)
        .unwrap_or_else(|e| panic!("{id} runs: {e:#}"))
}

/// A quick-profile context writing into `out`.
pub fn ctx(out: &Path) -> Ctx {
    let mut ctx = Ctx::new(out.to_path_buf(), ratelab_exe());
    ctx.pin.redis.clear();
    ctx.pin.harness.clear();
    ctx
}

/// A finished command's output, failing the test with its stderr unless it succeeded.
pub fn succeeded(output: std::process::Output) -> std::process::Output {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Whether a process exists and is not a zombie.
pub fn pid_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat_field(&stat, 0).is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// Field `n` after the `(comm)` of a /proc stat line (0 = state, 1 = ppid).
fn stat_field(stat: &str, n: usize) -> Option<String> {
    let after = stat.rsplit_once(')')?.1;
    after.split_whitespace().nth(n).map(str::to_string)
}

/// Live redis-server processes whose parent is `ppid`.
pub fn redis_children(ppid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            comm.trim() == "redis-server"
                && stat_field(&stat, 1) == Some(ppid.to_string())
                && pid_alive(*pid)
        })
        .collect()
}

/// Processes whose command line contains `needle` and every one of `more`: (pid, parent pid,
/// command line with its arguments space-separated), zombies included.
pub fn processes_with(needle: &str, more: &[&str]) -> Vec<(u32, Option<u32>, String)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    (entries.flatten())
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if !cmdline.contains(needle) || !more.iter().all(|m| cmdline.contains(m)) {
                return None;
            }
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let ppid = stat_field(&stat, 1).and_then(|p| p.parse().ok());
            Some((pid, ppid, cmdline))
        })
        .collect()
}

/// Marks every process this test starts from now on, and every process those start, through an
/// environment variable they inherit: find them with [`marked_processes`], wherever they were
/// re-parented. Call before starting anything.
pub fn mark_descendants() -> String {
    // One mark per test process (set once: the environment is the process's, and `cargo test`
    // runs tests as threads of one process, where a mark tells only this process's from others').
    static SET: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SET.get_or_init(|| {
        let mark = format!("{}-{}", std::process::id(), ratelab::limiter::unix_ms());
        std::env::set_var(MARK, &mark);
        mark
    })
    .clone()
}

const MARK: &str = "RATELAB_TEST_MARK";

/// Live processes whose command line contains `needle` and whose environment carries `mark`.
pub fn marked_processes(needle: &str, mark: &str) -> Vec<(u32, String)> {
    let entry = format!("{MARK}={mark}");
    (processes_with(needle, &[]).into_iter())
        .filter(|(pid, _, _)| {
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            environ.split(|&b| b == 0).any(|e| e == entry.as_bytes())
        })
        .map(|(pid, _, cmdline)| (pid, cmdline))
        .collect()
}

/// Fails unless every live process whose command line contains `needle` and that carries `mark`
/// is gone within two seconds: what a test started, its run's workers too, left nothing behind.
pub fn assert_marked_gone(needle: &str, mark: &str) {
    let left = || marked_processes(needle, mark);
    assert!(
        wait_for(Duration::from_secs(2), || left().is_empty()),
        "processes this test started are gone: {:?}",
        left()
    );
}

/// Polls `cond` until it holds or `timeout` passes.
pub fn wait_for(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

/// The verdict REPORT.md's custom limiters table gives `limiter` in the column whose name starts
/// with `aspect` (the report is written from `out`'s CSVs).
pub fn custom_limiter_cell(out: &Path, limiter: &str, aspect: &str) -> String {
    let report = ratelab::experiments::write_report(out, &[]).unwrap();
    let text = std::fs::read_to_string(report).unwrap();
    let table = text
        .split("## Custom limiters")
        .nth(1)
        .expect("a custom limiters table");
    let header: Vec<&str> = (table.lines())
        .find(|l| l.starts_with("| limiter |"))
        .unwrap()
        .split('|')
        .collect();
    let column = (header.iter())
        .position(|h| h.trim().starts_with(aspect))
        .unwrap_or_else(|| panic!("{aspect}: {header:?}"));
    let row = (table.lines())
        .find(|l| l.starts_with(&format!("| {limiter} |")))
        .unwrap();
    row.split('|').nth(column).unwrap().trim().to_string()
}

/// The verdict and measured figure claims.csv gives the limiter claim `id` (the report is
/// written from `out`'s CSVs first); panics naming the limiter claims there when it has none.
pub fn limiter_claim(out: &Path, id: &str) -> (String, String) {
    ratelab::experiments::write_report(out, &[]).unwrap();
    let rows: Vec<std::collections::BTreeMap<String, String>> =
        ratelab::record::csv_file::read(&out.join("claims.csv")).unwrap();
    let found = rows.iter().find(|r| r["id"] == id).unwrap_or_else(|| {
        let ids: Vec<&str> = (rows.iter().map(|r| r["id"].as_str()))
            .filter(|i| i.starts_with("limiter."))
            .collect();
        panic!("no claim {id} among {ids:?}")
    });
    (found["verdict"].clone(), found["measured"].clone())
}

/// Copies the directory tree `from` into `to`.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).unwrap();
        }
    }
}

/// Runs experiment `id` into `out` with custom `limiters` and the `sets` that keep it short;
/// returns its results directory.
pub fn run_with_limiters(
    id: &str,
    out: &Path,
    limiters: Vec<ratelab::limiter::Strategy>,
    sets: &[(&str, &str)],
) -> PathBuf {
    let mut c = ctx(out);
    c.limiters = limiters;
    c.sets = self::sets(sets);
    ratelab::experiments::find(id)
        .unwrap()
        .run(&c)
        .unwrap_or_else(|e| panic!("{id}: {e:#}"))
}

/// The adapters' manifests `paths` (under examples/adapters/), registered.
pub fn example_adapters(paths: &[&str]) -> Vec<ratelab::limiter::Strategy> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/adapters");
    (paths.iter())
        .map(|p| {
            ratelab::limiter::custom::load(&root.join(p)).expect("the adapter's manifest loads")
        })
        .map(ratelab::limiter::custom::register)
        .collect()
}

/// The protocol tests' fixture adapter `tests/adapters/<name>.toml`, registered.
pub fn fixture_adapter(name: &str) -> ratelab::limiter::Strategy {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/adapters/{name}.toml"));
    let fixture = ratelab::limiter::custom::load(&path).expect("the fixture's manifest loads");
    ratelab::limiter::custom::register(fixture)
}
