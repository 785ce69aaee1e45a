//! SHA256SUMS: one `<sha256>  <path>` line per file, the format `sha256sum -c` reads, so a copy
//! can be checked without ratelab too.

use super::PublishError;
use sha2::{Digest, Sha256};
use std::path::Path;

/// The checksum file's name at the dataset's root.
pub const SHA256SUMS: &str = "SHA256SUMS";

/// The SHA-256 of `bytes`, in lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The SHA-256 of the file at `root/rel`.
pub fn file_sha256(root: &Path, rel: &str) -> Result<String, PublishError> {
    let path = root.join(rel);
    let bytes = std::fs::read(&path).map_err(|e| PublishError::io(&path, e))?;
    Ok(sha256_hex(&bytes))
}

/// The text of SHA256SUMS over `files` (paths relative to `root`, `/`-separated), in their order.
pub fn render(root: &Path, files: &[String]) -> Result<String, PublishError> {
    let mut out = String::new();
    for rel in files {
        out.push_str(&format!("{}  {rel}\n", file_sha256(root, rel)?));
    }
    Ok(out)
}

/// Parses SHA256SUMS into (path, hash) pairs; a malformed line is named by its number.
pub fn parse(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut entries = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let parsed = line.split_once("  ").or_else(|| line.split_once(" *"));
        match parsed {
            Some((hash, path))
                if hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()) =>
            {
                entries.push((path.to_string(), hash.to_ascii_lowercase()));
            }
            _ => {
                return Err(format!(
                    "SHA256SUMS line {} is not `<sha256>  <path>`: {line:?}",
                    n + 1
                ))
            }
        }
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_and_lines_round_trip() {
        // The SHA-256 of "abc" (FIPS 180-2's example).
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(sha256_hex(b"abc"), abc);
        let parsed = parse(&format!("{abc}  race/race.csv\n")).unwrap();
        assert_eq!(parsed, [("race/race.csv".to_string(), abc.to_string())]);
        let err = parse("nothex  race.csv\n").unwrap_err();
        assert!(err.contains("line 1"), "{err}");
    }
}
