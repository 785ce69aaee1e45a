//! The bigkey chart: how long other clients waited (the probe's worst PING) against the size of
//! the one big sorted set, log-log, for one ZREMRANGEBYSCORE trim and for the key's expiry with
//! lazyfree-lazy-expire off and on; the probe's worst PING before each operation is the
//! machine's own noise floor, dashed.

use std::path::{Path, PathBuf};

use super::{BigkeyRow, Bio, BIGKEY};
use crate::charts::lines::{self, LineChart, Scale, Series};
use crate::charts::spec::{color, csv_name, Rgb};
use crate::charts::{index_of, read_file, write_spec, ChartError};

/// One series per (operation, lazyfree) in order of appearance, trims of both settings together
/// (lazyfree-lazy-expire does not apply to them), then the noise floor of every row.
pub(crate) fn series(rows: &[BigkeyRow]) -> Vec<Series> {
    let mut names: Vec<String> = Vec::new();
    let mut points: Vec<Vec<(f64, f64)>> = Vec::new();
    for r in rows {
        let name = match csv_name(&r.operation).as_str() {
            "trim" => "trim: one ZREMRANGEBYSCORE removing every entry".to_string(),
            op => format!(
                "{op}, lazyfree-lazy-expire {}{}",
                r.lazyfree.as_str(),
                match r.bio {
                    Bio::Shared => "",
                    Bio::Apart => ", background threads on another core",
                    Bio::Idle => ", lazy-free thread at SCHED_IDLE",
                }
            ),
        };
        let i = index_of(&mut names, name);
        if i == points.len() {
            points.push(Vec::new());
        }
        points[i].push((r.entries as f64, r.probe_max_stall_ms));
    }
    let mut out: Vec<Series> = names
        .into_iter()
        .zip(points)
        .enumerate()
        .map(|(i, (name, points))| Series {
            name,
            color: color(i),
            dashed: false,
            points,
        })
        .collect();
    out.push(Series {
        name: "probe's worst PING before each operation (noise)".into(),
        color: Rgb(120, 120, 120),
        dashed: true,
        points: (rows.iter())
            .map(|r| (r.entries as f64, r.probe_baseline_max_ms))
            .collect(),
    });
    out
}

/// Renders `dir/bigkey.csv` into `dir/bigkey.svg` and `dir/bigkey.png`.
pub(crate) fn render(dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let rows: Vec<BigkeyRow> = read_file(&BIGKEY, dir)?;
    let label = |v: f64| match v {
        v if v >= 1.0 => format!("{v}"),
        v => format!("{v:.1}"),
    };
    let entries_label = |v: f64| crate::charts::bars::si(v);
    let ticks_by_axis = |v: f64| {
        if v >= 1000.0 {
            entries_label(v)
        } else {
            label(v)
        }
    };
    let chart = LineChart {
        title: "bigkey: how long every other client waited, against the size of one key",
        note: "y = the slowest PING (probe every ms, own connection) overlapping the operation; \
dots: one operation each",
        x_desc: "entries in the sorted set (log)",
        y_desc: "worst PING round trip, ms (log)",
        x_scale: Scale::Log,
        y_scale: Scale::Log,
        y_from_zero: false,
        series: series(&rows),
        marks: Vec::new(),
        shaded: Vec::new(),
        label: &ticks_by_axis,
    };
    write_spec(dir, "bigkey", &lines::spec(chart)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::csv_dir;
    use std::fs;

    const HEADER: &str =
        "operation,entries,lazyfree,bio,repeat,removed,key_bytes,command_ms,slowlog_ms,\
probe_max_stall_ms,probe_p50_ms,probe_baseline_max_ms,probe_pings,server_blocked_ms,latency_events,\
background_free_ms,span_ms,build_s";
    const ROWS: &str = "\
trim,100000,no,shared,0,100000,1,,,24,0.1,0.5,1,0,,,1,1
expire,100000,no,shared,0,100000,1,,,16,0.1,0.4,1,0,,,1,1
trim,100000,yes,shared,0,100000,1,,,18,0.1,0.6,1,0,,,1,1
expire,100000,yes,shared,0,100000,1,,,4.2,0.1,0.5,1,0,,,1,1
trim,1000000,no,shared,0,1000000,1,,,386,0.1,0.3,1,0,,,1,1
expire,1000000,no,shared,0,1000000,1,,,220,0.1,0.4,1,0,,,1,1
expire,1000000,yes,shared,0,1000000,1,,,6.7,0.1,0.4,1,0,,,1,1
";

    #[test]
    fn renders_one_line_per_operation_and_setting() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = csv_dir(
            tmp.path(),
            "bigkey",
            BIGKEY.name(),
            &format!("{HEADER}\n{ROWS}"),
        );
        let paths = render(&dir).unwrap();
        assert_eq!(paths, ["bigkey.svg", "bigkey.png"].map(|n| dir.join(n)));
        let svg = fs::read_to_string(&paths[0]).unwrap();
        for s in [
            "trim: one ZREMRANGEBYSCORE",
            "lazyfree-lazy-expire no",
            "lazyfree-lazy-expire yes",
            "noise",
        ] {
            assert!(svg.contains(s), "svg lacks {s}");
        }
        let csv = format!("{HEADER}\n{ROWS}");
        let rows: Vec<BigkeyRow> = csv::Reader::from_reader(csv.as_bytes())
            .deserialize()
            .collect::<Result<_, _>>()
            .unwrap();
        let s = series(&rows);
        assert_eq!(
            s.len(),
            4,
            "trim (both settings), expire no, expire yes, noise"
        );
        assert_eq!(s[0].points.len(), 3);
    }
}
