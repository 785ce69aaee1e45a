//! Where a binary and a dataset come from, said where people look: `--version` names the commit
//! the binary was built from.

mod common;

use std::process::Command;

/// `git args` in the checkout under test.
fn git(args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("git runs (the tests run in a git checkout)");
    assert!(out.status.success(), "git {args:?} failed");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let out = Command::new(common::ratelab_exe())
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let head = git(&["rev-parse", "HEAD"]);
    let want = format!("ratelab {} (commit {head}", env!("CARGO_PKG_VERSION"));
    assert!(text.starts_with(&want), "want `{want}...`, got: {text}");
    // The same commit meta.json records for every run.
    assert!(text.contains(&ratelab::record::git_commit()), "{text}");
}
