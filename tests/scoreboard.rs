//! `ratelab scoreboard` from the binary on two real libraries: redis-py's window (which has a
//! cluster client) and tj's ratelimiter on node_redis 3 (which has none), through two checks of
//! the battery (the whole battery is check's test): concurrency runs both, and cluster leaves
//! ratelimiter out and runs the other;
//! SCOREBOARD.md has a row per library and a column per check, each cell agreeing with claims.csv
//! (the same judge on the same CSVs); the run publishes and its archive verifies, the board
//! redrawn from the CSVs.

use crate::common;
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

fn rows(path: &Path) -> Vec<HashMap<String, String>> {
    let mut reader =
        csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    reader.deserialize().map(|r| r.expect("a row")).collect()
}

#[test]
fn two_libraries_through_two_checks_and_the_board_agrees_with_claims_csv() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("board");
    let output = Command::new(common::ratelab_exe())
        .args([
            "scoreboard",
            "concurrency",
            "cluster",
            "--quiet",
            "--only",
            "python-redis-py",
            "ratelimiter",
            "--adapters",
        ])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/adapters"))
        .arg("--out")
        .arg(&out)
        .output()
        .expect("ratelab runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("cluster: ratelimiter left out: "),
        "{stdout}"
    );

    let board = std::fs::read_to_string(out.join("SCOREBOARD.md")).unwrap();
    let head = (board.lines())
        .find(|l| l.starts_with("| library |"))
        .expect("the table");
    assert!(head.ends_with("| concurrency | cluster |"), "{head}");
    let row = |name: &str| {
        (board.lines())
            .find(|l| l.starts_with(&format!("| `{name}` |")))
            .unwrap_or_else(|| panic!("{name}'s row:\n{board}"))
            .to_string()
    };
    assert!(
        row("ratelimiter").contains("not run: no cluster client"),
        "{}",
        row("ratelimiter")
    );
    assert!(
        row("ratelimiter").contains("ratelimiter 3.4.1"),
        "its version: {}",
        row("ratelimiter")
    );
    assert!(
        !row("python-redis-py").contains("not run"),
        "{}",
        row("python-redis-py")
    );

    // The same judge on the same CSVs: every cell's claim has claims.csv's verdict.
    let claims: HashMap<String, String> = (rows(&out.join("claims.csv")).into_iter())
        .map(|r| (r["id"].clone(), r["verdict"].clone()))
        .collect();
    let board_rows = rows(&out.join("scoreboard.csv"));
    // python-redis-py: race's three claims and cluster's two; ratelimiter: race's two.
    assert_eq!(board_rows.len(), 7, "{board_rows:?}");
    for r in &board_rows {
        assert_eq!(claims.get(&r["claim"]), Some(&r["verdict"]), "{r:?}");
        assert!(out.join(&r["evidence"]).is_file(), "{r:?}");
    }
    let html = std::fs::read_to_string(out.join("SCOREBOARD.html")).unwrap();
    assert!(
        html.contains("<table>") && html.contains("ratelimiter"),
        "the page has the table"
    );
    // The picture: a cell per library and check, the cluster one of ratelimiter not run.
    let svg = std::fs::read_to_string(out.join("scoreboard.svg")).unwrap();
    assert_eq!(svg.matches("<rect x=").count(), 2 * 2, "{svg}");
    assert_eq!(svg.matches(">not run<").count(), 1, "{svg}");
    assert!(out.join("scoreboard.png").is_file());

    let archive = tmp.path().join("board.tar.gz");
    let publish = Command::new(common::ratelab_exe())
        .arg("publish")
        .arg(&out)
        .arg("--out")
        .arg(&archive)
        .output()
        .unwrap();
    assert!(
        publish.status.success(),
        "{}",
        String::from_utf8_lossy(&publish.stderr)
    );
    let verify = Command::new(common::ratelab_exe())
        .arg("verify")
        .arg(&archive)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&verify.stdout);
    assert!(
        verify.status.success(),
        "{said}\n{}",
        String::from_utf8_lossy(&verify.stderr)
    );
}
