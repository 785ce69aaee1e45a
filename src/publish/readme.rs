//! The dataset's README.md: what each experiment asked, what each file holds, how to verify,
//! redraw and re-judge it, and the machine and server build each run had.

use super::{Dataset, PublishError, CITATION, DATAPACKAGE, LICENSE, SHA256SUMS};
use crate::experiments::frame::EXPERIMENT_TOML;
use crate::record::Meta;
use std::fmt::Write;

/// The README text; `tomls_added` are parameter files publishing added (the run predates them).
pub fn render(dataset: &Dataset, tomls_added: &[String]) -> Result<String, PublishError> {
    let name = dataset.name();
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", dataset.title());
    let _ = writeln!(
        out,
        "Measurements of Redis-backed rate limiters by ratelab {}, each against redis-server \
         processes the harness started on loopback. Every number in REPORT.md and every chart \
         is drawn from the CSVs here alone.\n\n\
         Package `{name}`, published as the archive `{}`, which unpacks into `{name}/`.\n",
        env!("CARGO_PKG_VERSION"),
        dataset.archive_name()
    );
    out.push_str(&usage(&dataset.archive_name(), &name));
    out.push_str("\n## Machine and server build\n\n");
    out.push_str("| experiment | profile | server | CPU | cores (logical/physical) | memory | ");
    out.push_str("OS, kernel | run commit | started |\n");
    out.push_str("|---|---|---|---|---|---|---|---|---|\n");
    for p in &dataset.present {
        let _ = writeln!(
            out,
            "| {} | {}",
            p.experiment.id(),
            machine_cells(p.meta.as_ref())
        );
    }
    out.push_str(
        "\nLoad averages and the CPU time of redis-server and of the harness over each run, where \
                  recorded, are in its meta.json (`resources`).\n",
    );
    for p in &dataset.present {
        let id = p.experiment.id();
        let info = p.experiment.info().ok();
        let _ = writeln!(out, "\n## {id}\n");
        if let Some(info) = &info {
            let question = if info.question.is_empty() {
                &info.summary
            } else {
                &info.question
            };
            let _ = writeln!(out, "{question}\n");
            let seeds: Vec<String> = info
                .seeds
                .iter()
                .map(|s| super::datapackage::seed_title(s))
                .collect();
            let _ = writeln!(out, "Reproduces {}. {}.\n", seeds.join("; "), info.summary);
        }
        out.push_str("| file | holds |\n|---|---|\n");
        for t in &p.tables {
            let rows = count_rows(&dataset.root.join(id).join(t.file));
            let _ = writeln!(
                out,
                "| `{id}/{}` | {} rows, {} columns; one row: {} |",
                t.file,
                rows.map_or("?".into(), |n| n.to_string()),
                t.columns.len(),
                t.row_doc().unwrap_or("see datapackage.json")
            );
        }
        let toml = format!("{id}/{EXPERIMENT_TOML}");
        let toml_note = if tomls_added.contains(&toml) {
            "added at publishing from the publishing build (the run predates recording it); \
             meta.json `params` are the values the run used"
        } else {
            "as the run used it"
        };
        let _ = writeln!(
            out,
            "| `{id}/meta.json` | the server, its config, the machine, pinning, \
                               parameters, seed, clocks, notes |"
        );
        let _ = writeln!(
            out,
            "| `{toml}` | the experiment's parameter file, {toml_note} |"
        );
        let _ = writeln!(
            out,
            "| `{id}/*.svg`, `*.png` | charts drawn from the CSVs (PNG rasterised from the SVG) |"
        );
    }
    Ok(out)
}

fn usage(archive: &str, name: &str) -> String {
    format!(
        "## Files\n\n\
         - `REPORT.md`: each experiment's question, charts, claims judged against the seeds' \
         figures, and summary tables; `REPORT.html`: the same as one page, charts inline, readable \
         offline; `claims.csv`: one row per claim with its verdict; `claims.json`: the same claims \
         with their numbers as numbers (n, mean, min, max, 95% interval, what the claim accepts, unit).\n\
         - `<experiment>/*.csv`: the raw rows, one file per row type; `{DATAPACKAGE}` describes \
         every column (type, unit, description, constraints) as a Frictionless Table Schema.\n\
         - `{SHA256SUMS}`: the SHA-256 of every other file; `{CITATION}`: how to cite this; \
         `{LICENSE}`: the licence.\n\n\
         ## Verify a copy\n\n\
         ```\nratelab verify {archive}    # or the unpacked directory, {name}/\n\
         cd {name} && sha256sum -c {SHA256SUMS}    # checksums only\n```\n\n\
         `ratelab verify` checks every checksum, every CSV against its schema in \
         {DATAPACKAGE}, and redraws the charts, REPORT.md, claims.csv and claims.json from the CSVs alone \
         into a temporary copy, naming whatever differs. It exits 0 only when all hold.\n\n\
         ## Redraw and re-judge\n\n\
         ```\nratelab chart DIR     # the SVG and PNG charts from the CSVs\n\
         ratelab report DIR    # REPORT.md, claims.csv and claims.json from the CSVs and analysis/claims.toml\n```\n\n\
         ## Cite\n\n\
         {CITATION} holds the title, version, date and the commit of the ratelab that \
         published this dataset, and the write-ups its experiments reproduce as references.\n\n\
         ## Licence\n\n\
         The data (CSVs, meta.json, parameter files), charts and text of this dataset are under \
         the {licence} License, as ratelab's code is: see {LICENSE}.\n",
        licence = env!("CARGO_PKG_LICENSE")
    )
}

/// The table cells after the experiment's id, from its meta.json.
fn machine_cells(meta: Option<&Meta>) -> String {
    let Some(m) = meta else {
        return "no meta.json | | | | | | | |".into();
    };
    let h = &m.host;
    let physical = h.physical_cores.map_or("?".into(), |n| n.to_string());
    let memory = h.total_memory_bytes.map_or("?".into(), |b| {
        format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
    });
    let os = h.os.clone().unwrap_or_else(|| "?".into());
    let server = m
        .redis
        .server_info
        .get("server_name")
        .map_or("redis", |s| s.as_str());
    let source = match (&m.redis.binary, m.redis.managed) {
        (Some(binary), true) => format!("`{binary}`, started by ratelab"),
        _ => "external".into(),
    };
    format!(
        "{} | {server} {} {} ({source}) | {} | {}/{physical} | {memory} | {os}, {} | `{}` | {} |",
        m.profile,
        m.redis.version,
        m.redis.mode,
        h.cpu_model,
        h.cpus_online,
        h.kernel,
        short_commit(&m.git_commit),
        m.started_at.get(..19).unwrap_or(&m.started_at),
    )
}

/// The first 12 hex digits of a commit, keeping `-dirty`: a run from uncommitted code says so.
fn short_commit(commit: &str) -> String {
    let (hash, dirty) = match commit.strip_suffix("-dirty") {
        Some(hash) => (hash, "-dirty"),
        None => (commit, ""),
    };
    format!("{}{dirty}", hash.get(..12).unwrap_or(hash))
}

fn count_rows(path: &std::path::Path) -> Option<usize> {
    let mut reader = csv::Reader::from_path(path).ok()?;
    Some(reader.records().count())
}

#[cfg(test)]
mod tests {
    use super::short_commit;

    #[test]
    fn a_short_commit_keeps_dirty() {
        let sha = "19238d7c0ffee0123456789abcdef0123456789a";
        assert_eq!(short_commit(sha), "19238d7c0ffe");
        assert_eq!(short_commit(&format!("{sha}-dirty")), "19238d7c0ffe-dirty");
        assert_eq!(short_commit("unknown"), "unknown");
    }
}
