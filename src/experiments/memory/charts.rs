//! The memory charts: bytes per busy client against the limit on log-log axes, one line per
//! zset-max-listpack-entries setting for the sliding log and one per other strategy, each cliff
//! marked; and a zoom on the fine sweep around the first setting's threshold (120-140 around the
//! default 128), where one entry more turns a listpack into a skiplist.

use std::path::{Path, PathBuf};

use super::{MemoryRow, MEMORY};
use crate::charts::bars::si;
use crate::charts::lines::{self, LineChart, Scale, Series};
use crate::charts::spec::{color, Rgb};
use crate::charts::{index_of, mean, read_file, write_spec, ChartError};

const LOG: &str = "lua-log";
/// How far either side of the threshold the zoom reaches.
const ZOOM: u64 = 12;

/// Series of the overview: the log once per setting (in order of appearance), then every other
/// strategy; and the settings, for the cliff marks.
pub(crate) fn overview(rows: &[MemoryRow]) -> (Vec<Series>, Vec<u64>) {
    let (mut keys, mut settings): (Vec<(String, u64)>, Vec<u64>) = (Vec::new(), Vec::new());
    let mut points: Vec<Vec<(f64, f64)>> = Vec::new();
    for r in rows {
        let strategy = r.strategy.to_string();
        let is_log = strategy == LOG;
        let key = match is_log {
            true => (strategy, r.listpack_entries),
            // Other strategies hold no sorted set: the setting does not matter to them.
            false => (strategy, 0),
        };
        if is_log {
            index_of(&mut settings, r.listpack_entries);
        }
        let i = index_of(&mut keys, key);
        if i == points.len() {
            points.push(Vec::new());
        }
        points[i].push((r.limit as f64, r.bytes_per_client));
    }
    let series = keys
        .into_iter()
        .zip(points)
        .enumerate()
        .map(|(i, ((strategy, t), points))| Series {
            name: match strategy == LOG {
                true => format!("sliding log ({LOG}), zset-max-listpack-entries {t}"),
                false => strategy,
            },
            color: color(i),
            dashed: false,
            points,
        })
        .collect();
    (series, settings)
}

/// The zoom: the log's rows of setting `t` within `ZOOM` of it, split by encoding.
pub(crate) fn zoom(rows: &[MemoryRow], t: u64) -> Vec<Series> {
    let near = |r: &&MemoryRow| {
        r.strategy.to_string() == LOG && r.listpack_entries == t && r.limit.abs_diff(t) <= ZOOM
    };
    let mut encodings: Vec<String> = Vec::new();
    let mut points: Vec<Vec<(f64, f64)>> = Vec::new();
    for r in rows.iter().filter(near) {
        let i = index_of(&mut encodings, r.encoding.clone());
        if i == points.len() {
            points.push(Vec::new());
        }
        points[i].push((r.limit as f64, r.bytes_per_client));
    }
    let palette: [Rgb; 2] = [color(2), color(1)];
    encodings
        .into_iter()
        .zip(points)
        .enumerate()
        .map(|(i, (encoding, points))| Series {
            name: encoding,
            color: palette[i % 2],
            dashed: false,
            points,
        })
        .collect()
}

/// Renders `dir/memory.csv` into `memory.svg`/`.png` and `memory_cliff.svg`/`.png`.
pub(crate) fn render(dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let rows: Vec<MemoryRow> = read_file(&MEMORY, dir)?;
    // The charts show ratelab's own members and keys; the sweeps are a table in the summary.
    let rows: Vec<MemoryRow> = rows.into_iter().filter(|r| !r.is_sweep()).collect();
    let (series, settings) = overview(&rows);
    let label = |v: f64| si(v);
    let marks = settings
        .iter()
        .map(|&t| (t as f64 + 0.5, format!("{}th entry", t + 1)))
        .collect();
    let chart = LineChart {
        title: "memory: bytes per busy client at its limit",
        note: "dots: one fill each (growth of used_memory / clients); dashed red: one entry past \
zset-max-listpack-entries, where the log becomes a skiplist",
        x_desc: "limit (requests per window; log)",
        y_desc: "bytes per client (log)",
        x_scale: Scale::Log,
        y_scale: Scale::Log,
        y_from_zero: false,
        series,
        marks,
        shaded: Vec::new(),
        label: &label,
    };
    let mut written = write_spec(dir, "memory", &lines::spec(chart)?)?;
    let Some(&t) = settings.first() else {
        return Ok(written);
    };
    let series = zoom(&rows, t);
    let at = |limit: u64| {
        let v: Vec<f64> = (rows.iter())
            .filter(|r| {
                r.strategy.to_string() == LOG && r.listpack_entries == t && r.limit == limit
            })
            .map(|r| r.bytes_per_client)
            .collect();
        mean(&v)
    };
    let jump = match (at(t), at(t + 1)) {
        (Some(a), Some(b)) if a > 0.0 => format!(", {:.1}x the memory of entry {t}", b / a),
        _ => String::new(),
    };
    let title = format!("memory: the sliding log's cliff at zset-max-listpack-entries {t}");
    let marks = vec![(t as f64 + 0.5, format!("entry {}: skiplist{jump}", t + 1))];
    let chart = LineChart {
        title: &title,
        note: "one dot per fill, coloured by OBJECT ENCODING of a sample key; y from 0",
        x_desc: "limit (entries per busy client)",
        y_desc: "bytes per client",
        x_scale: Scale::Linear,
        y_scale: Scale::Linear,
        y_from_zero: true,
        series,
        marks,
        shaded: Vec::new(),
        label: &label,
    };
    written.extend(write_spec(dir, "memory_cliff", &lines::spec(chart)?)?);
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::csv_dir;
    use std::fs;

    const HEADER: &str = "strategy,limit,clients,listpack_entries,listpack_setting,over_threshold,repeat,\
bytes_per_client,bytes_per_entry,mb_per_10k_clients,used_memory_before,used_memory_after,keys,sample_key_bytes,\
encoding,listpack,member_len,member_bytes,key_len,key_name_bytes,sample_state,decisions,denied,cpu_us_per_decision,\
decisions_per_s,fill_s";
    const ROWS: &str = "\
lua-log,10,100,128,default,0,0,480,1,1,0,0,100,1,listpack,1,14,0,0,40,1,1,0,1,1,1
lua-log,127,10,128,default,0,0,3745,1,1,0,0,10,1,listpack,1,14,0,0,40,1,1,0,1,1,1
lua-log,128,10,128,default,0,0,3745,1,1,0,0,10,1,listpack,1,14,0,0,40,1,1,0,1,1,1
lua-log,129,10,128,default,0,0,19270,1,1,0,0,10,1,skiplist,1,14,0,0,40,1,1,0,1,1,1
lua-log,130,10,128,default,0,0,19250,1,1,0,0,10,1,skiplist,1,14,0,0,40,1,1,0,1,1,1
lua-log,1000,10,128,default,0,0,126500,1,1,0,0,10,1,skiplist,1,14,0,0,40,1,1,0,1,1,1
lua-swc,1000,10,128,default,0,0,246,1,1,0,0,10,1,listpack,1,14,0,0,40,1,1,0,1,1,1
lua-log,64,10,64,default,0,0,1970,1,1,0,0,10,1,listpack,1,14,0,0,40,1,1,0,1,1,1
lua-log,65,10,64,default,0,0,10080,1,1,0,0,10,1,skiplist,1,14,0,0,40,1,1,0,1,1,1
lua-log,129,10,128,default,0,0,99999,1,1,0,0,10,1,skiplist,1,40,40,0,40,1,1,0,1,1,1
";

    #[test]
    fn renders_both_charts_with_the_cliff_marked() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = csv_dir(
            tmp.path(),
            "memory",
            MEMORY.name(),
            &format!("{HEADER}\n{ROWS}"),
        );
        let paths = render(&dir).unwrap();
        let names = [
            "memory.svg",
            "memory.png",
            "memory_cliff.svg",
            "memory_cliff.png",
        ];
        assert_eq!(paths, names.map(|n| dir.join(n)));
        let svg = fs::read_to_string(dir.join("memory.svg")).unwrap();
        for s in [
            "129th entry",
            "65th entry",
            "lua-swc",
            "zset-max-listpack-entries 64",
        ] {
            assert!(svg.contains(s), "memory.svg lacks {s}");
        }
        let zoom = fs::read_to_string(dir.join("memory_cliff.svg")).unwrap();
        for s in ["listpack", "skiplist", "entry 129: skiplist, 5.1x"] {
            assert!(zoom.contains(s), "memory_cliff.svg lacks {s}");
        }
    }

    #[test]
    fn header_only_is_empty() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = csv_dir(tmp.path(), "memory", MEMORY.name(), &format!("{HEADER}\n"));
        let err = render(&dir).unwrap_err();
        assert!(matches!(err, ChartError::Empty(_)), "{err}");
    }
}
