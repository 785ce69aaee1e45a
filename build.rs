//! Records the git commit the binary was built from, for meta.json.
use std::process::Command;

fn main() {
    let run = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    if let Some(commit) = run(&["rev-parse", "HEAD"]) {
        let dirty =
            run(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
        let suffix = if dirty { "-dirty" } else { "" };
        println!("cargo:rustc-env=RATELAB_GIT_COMMIT={commit}{suffix}");
    }
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/index");
}
