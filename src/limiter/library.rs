//! The `ratelab` function library (`lua/ratelab_library.lua`) that FCALL calls: FUNCTION LOAD
//! keeps it in the RDB and AOF and replicates it, where the script cache is neither. Its
//! token_bucket is `lua/token_bucket.lua` itself, put in the library's frame when first asked
//! for, so FCALL and EVAL run the same text.

use std::sync::LazyLock;

/// The library's name (`#!lua name=ratelab`), as FUNCTION LIST and FUNCTION DELETE name it.
pub const LIBRARY_NAME: &str = "ratelab";
/// The function of the token bucket (lua-bucket).
pub(super) const BUCKET_FUNCTION: &str = "token_bucket";
/// The function of seed 002's own token bucket (seed002-bucket).
pub(super) const SEED002_BUCKET_FUNCTION: &str = "seed002_token_bucket";

const FRAME: &str = include_str!("lua/ratelab_library.lua");
const BUCKET_MARKER: &str = "  -- @token_bucket.lua\n";
const BUCKET_SCRIPT: &str = include_str!("lua/token_bucket.lua");
const SEED002_MARKER: &str = "  -- @seed002_token_bucket.lua\n";
const SEED002_SCRIPT: &str = include_str!("lua/seed002_token_bucket.lua");

static LIBRARY: LazyLock<String> = LazyLock::new(|| {
    FRAME
        .replacen(BUCKET_MARKER, &indented(BUCKET_SCRIPT), 1)
        .replacen(SEED002_MARKER, &indented(SEED002_SCRIPT), 1)
});

/// A script's lines as a function's body.
fn indented(script: &str) -> String {
    (script.lines())
        .map(|line| match line {
            "" => "\n".to_string(),
            line => format!("  {line}\n"),
        })
        .collect()
}

/// The library's code, for `FUNCTION LOAD [REPLACE]`.
pub fn library() -> &'static str {
    &LIBRARY
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_runs_the_bucket_script_itself() {
        let lib = library();
        assert!(lib.starts_with("#!lua name=ratelab\n"), "{lib}");
        assert!(!lib.contains(BUCKET_MARKER), "the marker is replaced");
        assert!(!lib.contains(SEED002_MARKER), "the marker is replaced");
        assert!(lib.contains("redis.register_function('token_bucket', token_bucket)"));
        assert!(
            lib.contains("redis.register_function('seed002_token_bucket', seed002_token_bucket)")
        );
        for line in (BUCKET_SCRIPT.lines().chain(SEED002_SCRIPT.lines())).filter(|l| !l.is_empty())
        {
            assert!(lib.contains(&format!("  {line}\n")), "missing: {line}");
        }
    }
}
