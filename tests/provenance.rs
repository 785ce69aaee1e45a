//! Where a binary and a dataset come from, said where people look: `--version` names the commit
//! the binary was built from; a published archive is readable by all and has one name
//! everywhere; a package has the title it is given; code and data carry their licence; the
//! repository's and each dataset's CITATION.cff cite the write-ups by their own titles; a run
//! from a dirty tree says so in the dataset's README. No Redis needed: the reference's runs.

use crate::common;

use ratelab::publish;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
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

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `results/<name>` with the reference's calibrate run in it (run from a dirty tree, as its
/// meta.json says) and its report written: ready to publish.
fn results_dir(tmp: &Path, name: &str) -> PathBuf {
    let dir = tmp.join("results").join(name);
    common::copy_tree(
        &repo().join("results/reference/calibrate"),
        &dir.join("calibrate"),
    );
    ratelab::experiments::write_report(&dir, &[]).unwrap();
    dir
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The title a CITATION.cff gives at the top level.
fn cff_title(text: &str) -> &str {
    let line = (text.lines())
        .find_map(|l| l.strip_prefix("title: "))
        .expect("a title");
    line.trim_matches('"')
}

#[test]
fn the_archive_is_readable_by_all_and_has_one_name_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = results_dir(tmp.path(), "nightly");
    let published = publish::publish(&dir, None).unwrap();
    // Beside the directory, named as the package, which is also its top-level directory.
    let archive = tmp.path().join("results/ratelab-nightly.tar.gz");
    assert_eq!(published.archive, archive.canonicalize().unwrap());
    assert_eq!(published.name, "ratelab-nightly");
    let mode = std::fs::metadata(&archive).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644, "archive mode {mode:o}");
    let into = tmp.path().join("unpacked");
    std::fs::create_dir(&into).unwrap();
    let root = publish::extract(&archive, &into).unwrap();
    assert_eq!(root, into.join("ratelab-nightly"));
    // The dataset's README tells the same names.
    let readme = read(&dir.join("README.md"));
    assert!(
        readme.contains("ratelab verify ratelab-nightly.tar.gz")
            && readme.contains("cd ratelab-nightly && sha256sum -c SHA256SUMS"),
        "{readme}"
    );
    // So does the repository's README, for the reference.
    let ours = read(&repo().join("README.md"));
    assert!(ours.contains("ratelab-reference.tar.gz"), "README.md");
    assert!(
        !ours.contains(" reference.tar.gz") && !ours.contains("`reference.tar.gz"),
        "README.md names the archive otherwise"
    );
}

#[test]
fn a_title_given_to_publish_titles_the_package_and_stays() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = results_dir(tmp.path(), "run-3");
    let title = "Redis limiters on a loaded 2-core VM";
    let publish_cmd = |extra: &[&str]| {
        let out = Command::new(common::ratelab_exe())
            .arg("publish")
            .arg(&dir)
            .args(extra)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "publish {extra:?}: {err}");
    };
    publish_cmd(&["--title", title]);
    let titles = |dir: &Path| {
        let package: serde_json::Value =
            serde_json::from_str(&read(&dir.join("datapackage.json"))).unwrap();
        let citation = read(&dir.join("CITATION.cff"));
        let readme = read(&dir.join("README.md"));
        (
            package["title"].as_str().unwrap().to_string(),
            cff_title(&citation).to_string(),
            readme.lines().next().unwrap().to_string(),
        )
    };
    let want = (title.to_string(), title.to_string(), format!("# {title}"));
    assert_eq!(titles(&dir), want);
    // Published again without --title (after a re-run, say): the title stays.
    publish_cmd(&[]);
    assert_eq!(titles(&dir), want);
    // Without any title given, one made from the directory's name.
    let other = results_dir(tmp.path(), "other");
    publish::publish(&other, None).unwrap();
    assert!(
        titles(&other).0.starts_with("ratelab other: "),
        "{:?}",
        titles(&other)
    );
}

#[test]
fn code_and_data_carry_their_licence() {
    let license = read(&repo().join("LICENSE"));
    assert!(license.starts_with("MIT License\n"), "{license}");
    assert!(license.contains("Copyright (c) the ratelab authors"));
    assert_eq!(env!("CARGO_PKG_LICENSE"), "MIT");
    let tmp = tempfile::tempdir().unwrap();
    let dir = results_dir(tmp.path(), "licensed");
    let published = publish::publish(&dir, None).unwrap();
    assert_eq!(read(&dir.join("LICENSE")), license);
    let sums = read(&dir.join(publish::SHA256SUMS));
    assert!(sums.lines().any(|l| l.ends_with("  LICENSE")), "{sums}");
    let into = tmp.path().join("unpacked");
    std::fs::create_dir(&into).unwrap();
    let root = publish::extract(&published.archive, &into).unwrap();
    assert_eq!(read(&root.join("LICENSE")), license);
    let readme = read(&dir.join("README.md"));
    assert!(
        readme.contains("## Licence") && readme.contains("under the MIT License"),
        "{readme}"
    );
    let package: serde_json::Value =
        serde_json::from_str(&read(&dir.join("datapackage.json"))).unwrap();
    assert_eq!(package["licenses"][0]["name"], "MIT");
    assert_eq!(package["licenses"][0]["path"], "LICENSE");
    assert!(read(&dir.join("CITATION.cff")).contains("\nlicense: MIT\n"));
    assert!(publish::verify(&published.archive).unwrap().passed());
}

/// The write-ups' titles as ratelab knows them are the titles the write-ups open with
/// (`claims::seeds_dir`).
#[test]
fn the_seed_titles_are_the_write_ups_own() {
    let seeds = ratelab::analysis::claims::seeds_dir().unwrap_or_else(|tried| panic!("{tried}"));
    let files: Vec<PathBuf> = (std::fs::read_dir(&seeds))
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e} (the write-ups sit beside the repository)",
                seeds.display()
            )
        })
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), publish::SEEDS.len(), "{files:?}");
    for (id, title) in publish::SEEDS {
        let file = (files.iter())
            .find(|f| {
                f.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&format!("{id}_"))
            })
            .unwrap_or_else(|| panic!("no write-up for seed {id} in {}", seeds.display()));
        assert_eq!(
            read(file).lines().next().unwrap().trim(),
            *title,
            "{}",
            file.display()
        );
    }
}

#[test]
fn citations_cite_the_software_and_the_write_ups() {
    let root = read(&repo().join("CITATION.cff"));
    assert!(root.contains("\ntype: software\n"), "{root}");
    let version = format!("\nversion: \"{}\"\n", env!("CARGO_PKG_VERSION"));
    assert!(
        root.contains(&version),
        "CITATION.cff is not at version {version}"
    );
    assert!(root.contains("\nlicense: MIT\n"));
    for (id, title) in publish::SEEDS {
        let entry = format!("    title: \"{title}\"\n");
        assert!(root.contains(&entry), "CITATION.cff lacks seed {id}");
    }
    // A dataset cites the write-ups its experiments reproduce: calibrate reproduces seed 002's
    // figures only; the whole reference all four.
    let tmp = tempfile::tempdir().unwrap();
    let dir = results_dir(tmp.path(), "small");
    publish::publish(&dir, None).unwrap();
    let small = read(&dir.join("CITATION.cff"));
    let cited = |text: &str| {
        (publish::SEEDS.iter())
            .filter(|(_, title)| text.contains(&format!("    title: \"{title}\"\n")))
            .map(|(id, _)| *id)
            .collect::<Vec<_>>()
    };
    let calibrate = ratelab::experiments::find("calibrate")
        .unwrap()
        .info()
        .unwrap();
    assert_eq!(cited(&small), calibrate.seeds, "{small}");
    let whole = tmp.path().join("whole");
    common::copy_tree(&repo().join("results/reference"), &whole);
    publish::publish(&whole, Some(&tmp.path().join("whole.tar.gz"))).unwrap();
    let text = read(&whole.join("CITATION.cff"));
    assert_eq!(cited(&text), ["000", "001", "002", "003"], "{text}");
    assert!(text.contains("\nreferences:\n  - type: blog\n"), "{text}");
}

/// A run from a dirty tree says so in the dataset's README (the reference no longer is one: the
/// copy is made dirty here).
#[test]
fn the_dataset_readme_keeps_dirty_on_a_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = results_dir(tmp.path(), "dirty");
    let meta_path = dir.join("calibrate/meta.json");
    let meta: serde_json::Value = serde_json::from_str(&read(&meta_path)).unwrap();
    let commit = meta["git_commit"].as_str().expect("a commit").to_string();
    let dirty = read(&meta_path).replace(&format!("\"{commit}\""), &format!("\"{commit}-dirty\""));
    assert!(
        dirty.contains("-dirty\""),
        "calibrate's meta.json names its commit as git_commit"
    );
    std::fs::write(&meta_path, dirty).unwrap();
    publish::publish(&dir, None).unwrap();
    let readme = read(&dir.join("README.md"));
    let row = (readme.lines())
        .find(|l| l.starts_with("| calibrate |"))
        .expect("calibrate's machine row");
    assert!(row.contains("-dirty`"), "{row}");
}

/// The committed reference is run from a clean tree at a committed commit: no meta.json of it may
/// name a dirty tree (all 17 did until this session's re-run).
#[test]
fn no_committed_reference_run_is_from_a_dirty_tree() {
    let reference = repo().join("results/reference");
    let mut dirty = Vec::new();
    for entry in std::fs::read_dir(&reference).unwrap() {
        let meta = entry.unwrap().path().join("meta.json");
        if !meta.exists() {
            continue;
        }
        let value: serde_json::Value = serde_json::from_str(&read(&meta)).unwrap();
        let commit = value["git_commit"].as_str().unwrap_or("none").to_string();
        if commit.ends_with("-dirty") || commit.len() != 40 {
            dirty.push(format!("{}: {commit}", meta.display()));
        }
    }
    assert!(
        dirty.is_empty(),
        "not from a clean committed tree:\n{}",
        dirty.join("\n")
    );
}
