//! The replication chart: per command, the calls INFO commandstats counted on the primary and on
//! the replica over the run, so the script on one side and its effects on the other show at once.

use std::path::{Path, PathBuf};

use super::{StreamRow, STREAM};
use crate::charts::bars::{self, si, BarChart};
use crate::charts::spec::{color, Bar, Marker, Slot};
use crate::charts::{read_file, write_spec, ChartError};

const SIDES: [&str; 2] = ["primary", "replica"];

/// Renders `dir/stream.csv` into `dir/replication.svg` and `dir/replication.png`.
pub(crate) fn render(dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let rows = read_file(&STREAM, dir)?;
    write_spec(dir, "replication", &bars::spec(chart(&rows)))
}

/// One slot per command in the CSV's order, a bar per side with its count above it.
fn chart(rows: &[StreamRow]) -> BarChart<'_> {
    let slots = rows.iter().map(|r| {
        let bars = [r.calls_on_primary, r.calls_on_replica]
            .into_iter()
            .enumerate()
            .map(|(side, calls)| Bar::new(color(side), calls as f64, Vec::new(), si(calls as f64)));
        (r.command.clone(), Slot(bars.collect(), String::new()))
    });
    let legend = SIDES
        .iter()
        .enumerate()
        .map(|(side, name)| (Marker::Dot(color(side)), *name))
        .collect();
    BarChart {
        title: "replication: commands executed on the primary and on its replica",
        subtitle:
            "INFO commandstats calls over the run (the harness's INFO and MONITOR left out); \
                   a script's own commands count on the primary"
                .to_string(),
        x_desc: "command",
        y_desc: "calls",
        y_format: si,
        legend,
        reference: None,
        slots: slots.collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::csv_dir;
    use std::fs;

    const HEADER: &str =
        "command,calls_on_primary,calls_on_replica,monitor_on_replica,example_on_replica";
    const ROWS: &str = "\
evalsha,10000,0,0,
pexpireat,0,10000,10000,k 1700000006000
hset,7000,7000,7000,k tokens 3.5 ts 1700000000000
";

    #[test]
    fn renders_svg_and_png_with_every_command_and_side() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = csv_dir(
            tmp.path(),
            "replication",
            STREAM.name(),
            &format!("{HEADER}\n{ROWS}"),
        );
        let paths = render(&dir).unwrap();
        assert_eq!(
            paths,
            ["replication.svg", "replication.png"].map(|n| dir.join(n))
        );
        let svg = fs::read_to_string(&paths[0]).unwrap();
        for s in ["evalsha", "pexpireat", "hset", "primary", "replica", "10k"] {
            assert!(svg.contains(s), "svg lacks {s}");
        }
    }

    #[test]
    fn header_only_is_empty() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = csv_dir(
            tmp.path(),
            "replication",
            STREAM.name(),
            &format!("{HEADER}\n"),
        );
        let err = render(&dir).unwrap_err();
        assert!(matches!(err, ChartError::Empty(_)), "{err}");
    }
}
