//! The harness's own stalls reach meta.json and the report. The test stops a real ratelab run
//! (SIGSTOP) while it measures, for a span the test times itself: the stall watcher cannot wake
//! while the process is stopped, so it must record a stall at least that span less one tick.

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn a_run_stopped_mid_measurement_records_the_stall_and_the_report_flags_it() {
    let out = tempfile::tempdir().unwrap();
    let child = Command::new(common::ratelab_exe())
        .args(["run", "latency", "--profile", "quick", "--out"])
        .arg(out.path())
        .args(["--set", "runs=1", "--set", "strategies=[\"get\"]"])
        .args(["--set", "requests=20000", "--set", "warmup=10"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    // The run record (and its watcher) exists once the staging directory does.
    let staging = out.path().join(format!(".latency.partial-{pid}"));
    assert!(
        common::wait_for(Duration::from_secs(60), || staging.exists()),
        "the run never started recording"
    );
    // The watcher started before the staging directory; this lets its thread take its first tick.
    std::thread::sleep(Duration::from_millis(100));
    // SAFETY: signals to the child this test started.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    // Timed inside the stop: from after SIGSTOP was sent to before SIGCONT is.
    let stopped = Instant::now();
    std::thread::sleep(Duration::from_millis(400));
    let stop_ms = stopped.elapsed().as_secs_f64() * 1000.0;
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let meta: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("latency/meta.json")).unwrap(),
    )
    .unwrap();
    let stalls = &meta["harness_stalls"];
    let (count, max) = (stalls["stalls"].as_u64(), stalls["max_late_ms"].as_f64());
    assert!(count.is_some_and(|n| n >= 1), "{stalls}");
    // The watcher's wait that the stop cut into was due at most one tick after the stop began,
    // and it could not wake before the stop ended (10 ms for the signal's delivery).
    let tick = stalls["tick_ms"].as_f64().unwrap();
    assert!(
        max.is_some_and(|ms| ms >= stop_ms - tick - 10.0),
        "stopped {stop_ms:.0} ms, longest stall recorded {stalls}"
    );
    let notes = meta["notes"].to_string();
    assert!(notes.contains("held off its CPU"), "{notes}");
    let report = Command::new(common::ratelab_exe())
        .arg("report")
        .arg(out.path())
        .output()
        .unwrap();
    assert!(report.status.success());
    let text = std::fs::read_to_string(out.path().join("REPORT.md")).unwrap();
    assert!(
        text.contains("**WARNING: the harness was held off its CPU"),
        "{text}"
    );
}
