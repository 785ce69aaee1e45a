//! The code the write-ups publish (analysis/seed_code.toml) is run as the write-ups print it: every
//! block that names a file is that file, extracted from the seed's text byte for byte, and every
//! block says where it runs and which claims judge it.

use ratelab::analysis::claims;
use serde::Deserialize;
use std::path::Path;

#[derive(Deserialize)]
struct Catalogue {
    block: Vec<Block>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Block {
    id: String,
    seed: String,
    what: String,
    first: String,
    last: String,
    file: Option<String>,
    status: String,
    change: Option<String>,
    why: Option<String>,
    /// Where ratelab measures what a block that does not run would show, on its own code.
    emulated_by: Option<String>,
    runs: Option<String>,
    #[serde(default)]
    claims: Vec<String>,
}

fn catalogue() -> Vec<Block> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/analysis/seed_code.toml");
    let text = std::fs::read_to_string(path).unwrap();
    toml::from_str::<Catalogue>(&text).unwrap().block
}

/// The seed's lines from `first` to the first `last` after it, each followed by a newline.
fn extract(seed_text: &str, block: &Block) -> String {
    let lines: Vec<&str> = seed_text.lines().collect();
    let start = (lines.iter().position(|l| *l == block.first)).unwrap_or_else(|| {
        panic!(
            "{}: no line `{}` in seed {}",
            block.id, block.first, block.seed
        )
    });
    let end = start
        + (lines[start..].iter().position(|l| *l == block.last))
            .unwrap_or_else(|| panic!("{}: no line `{}` after its first", block.id, block.last));
    lines[start..=end]
        .iter()
        .map(|l| format!("{l}\n"))
        .collect()
}

fn seed_text(seed: &str) -> String {
    let dir = claims::seeds_dir().unwrap();
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&format!("{seed}_")))
        })
        .unwrap_or_else(|| panic!("no write-up of seed {seed} in {}", dir.display()));
    std::fs::read_to_string(file).unwrap()
}

#[test]
fn every_file_is_its_seeds_block_byte_for_byte() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let write = std::env::var_os("RATELAB_EXTRACT_SEED_CODE").is_some();
    let mut files = 0;
    for block in catalogue() {
        let published = extract(&seed_text(&block.seed), &block);
        let Some(file) = &block.file else { continue };
        if write {
            std::fs::write(root.join(file), &published).unwrap();
        }
        let ours = std::fs::read_to_string(root.join(file)).unwrap();
        assert!(
            ours == published,
            "{file} is not seed {}'s block {} as published (RATELAB_EXTRACT_SEED_CODE=1 writes it):\n\
             {published}",
            block.seed,
            block.id
        );
        files += 1;
    }
    assert!(files >= 2, "the seeds' two token bucket scripts at least");
}

#[test]
fn every_block_says_how_it_runs_and_names_real_claims() {
    let known: Vec<String> = claims::all().unwrap().into_iter().map(|c| c.id).collect();
    for block in catalogue() {
        let id = &block.id;
        assert!(!block.what.is_empty(), "{id}: what it is");
        match block.status.as_str() {
            "verbatim" => assert!(
                block.file.is_some() && block.runs.is_some(),
                "{id}: its file and where it runs"
            ),
            "adapted" => assert!(
                block.change.is_some() && block.runs.is_some(),
                "{id}: its one change"
            ),
            "not-run" => assert!(
                block.why.is_some() && block.emulated_by.is_some() && block.claims.is_empty(),
                "{id}: why not, and what stands in for it"
            ),
            other => panic!("{id}: status {other}"),
        }
        for claim in &block.claims {
            assert!(known.contains(claim), "{id}: no claim {claim}");
        }
    }
}
