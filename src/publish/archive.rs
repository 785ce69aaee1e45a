//! The archive: a reproducible `.tar.gz` (sorted entries, fixed owner, mode and time, no gzip
//! timestamp), so publishing the same files twice gives the same bytes; and its extraction.

use super::PublishError;
use flate2::read::GzDecoder;
use flate2::{Compression, GzBuilder};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// The archive's permissions: readable by all, as any published file.
pub const ARCHIVE_MODE: u32 = 0o644;

/// Writes `files` (relative to `root`) under `top/` into the archive `out`, through a temporary
/// file beside it so a failure never leaves half an archive. Returns the archive's size.
pub fn write_archive(
    root: &Path,
    files: &[String],
    top: &str,
    mtime: u64,
    out: &Path,
) -> Result<u64, PublishError> {
    let dir = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| PublishError::io(dir, e))?;
    let io = |e| PublishError::io(out, e);
    {
        let gz = GzBuilder::new()
            .mtime(0)
            .write(BufWriter::new(tmp.as_file()), Compression::best());
        let mut tar = tar::Builder::new(gz);
        tar.mode(tar::HeaderMode::Deterministic);
        for rel in files {
            let path = root.join(rel);
            let data = std::fs::read(&path).map_err(|e| PublishError::io(&path, e))?;
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_mtime(mtime);
            header.set_uid(0);
            header.set_gid(0);
            header.set_entry_type(tar::EntryType::Regular);
            tar.append_data(&mut header, format!("{top}/{rel}"), data.as_slice())
                .map_err(io)?;
        }
        let gz = tar.into_inner().map_err(io)?;
        gz.finish().map_err(io)?.flush().map_err(io)?;
    }
    // A temporary file is created 0600; a dataset is for others to read.
    use std::os::unix::fs::PermissionsExt;
    (tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(ARCHIVE_MODE)))
    .map_err(io)?;
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(out)
        .map_err(|e| PublishError::io(out, e.error))?;
    Ok(std::fs::metadata(out).map_err(io)?.len())
}

/// Unpacks `archive` into `into` and returns the dataset's root in it (the archive's one
/// top-level directory, or `into` itself). A truncated or corrupt archive is an error naming it.
pub fn extract(archive: &Path, into: &Path) -> Result<PathBuf, PublishError> {
    let file = File::open(archive).map_err(|e| PublishError::io(archive, e))?;
    let bad = |source| PublishError::Archive {
        path: archive.to_path_buf(),
        source,
    };
    let mut tar = tar::Archive::new(GzDecoder::new(std::io::BufReader::new(file)));
    let mut any = false;
    for entry in tar.entries().map_err(bad)? {
        let mut entry = entry.map_err(bad)?;
        // unpack_in refuses paths that leave `into` (`..`, absolute).
        entry.unpack_in(into).map_err(bad)?;
        any = true;
    }
    // The gzip trailer (CRC and length) is read only past the tar's end: drain to check it.
    let mut rest = tar.into_inner();
    std::io::copy(&mut rest, &mut std::io::sink()).map_err(bad)?;
    if !any {
        return Err(bad(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the archive holds no file",
        )));
    }
    let names: Vec<PathBuf> = std::fs::read_dir(into)
        .map_err(|e| PublishError::io(into, e))?
        .flatten()
        .map(|e| e.path())
        .collect();
    match names.as_slice() {
        [only] if only.is_dir() => Ok(only.clone()),
        _ => Ok(into.to_path_buf()),
    }
}
