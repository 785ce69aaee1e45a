//! The refill chart: per configuration, what the hammering client was allowed as a share of what
//! the bucket's rate allows over the same time, one dot per trial, a line at 1 (the rate).

use std::path::{Path, PathBuf};

use super::{RefillRow, TRIALS};
use crate::charts::bars::{self, BarChart};
use crate::charts::spec::{color, Bar, Marker, Slot};
use crate::charts::{read_file, write_spec, ChartError};

/// Renders `dir/refill.csv` into `dir/refill.svg` and `dir/refill.png`.
pub(crate) fn render(dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let rows = read_file(&TRIALS, dir)?;
    write_spec(dir, "refill", &bars::spec(chart(&rows)))
}

/// A configuration's label: its drill and script, then (second line) its clock or expiry.
fn label(r: &RefillRow) -> String {
    match r.drill.as_str() {
        "clock" => format!("{} clock (skew {} ms)", r.clock, r.skew_ms),
        _ => format!("{} (expiry {} ms)", r.script, r.ttl_ms),
    }
}

/// One slot per configuration in the CSV's order, its bar the trials' mean share.
fn chart(rows: &[RefillRow]) -> BarChart<'static> {
    let mut labels: Vec<(String, usize)> = Vec::new();
    for r in rows {
        if !labels.iter().any(|(l, _)| *l == label(r)) {
            labels.push((label(r), usize::from(r.drill == "clock")));
        }
    }
    let slots = labels.into_iter().map(|(name, drill)| {
        let shares: Vec<f64> = (rows.iter())
            .filter(|r| label(r) == name)
            .map(|r| r.admitted as f64 / r.limit_admits as f64)
            .collect();
        let mean = shares.iter().sum::<f64>() / shares.len() as f64;
        let bar = Bar::new(color(drill), mean, shares, format!("{mean:.2}"));
        (name, Slot(vec![bar], String::new()))
    });
    BarChart {
        title: "refill: what a client hammering one bucket was allowed, against the bucket's rate",
        subtitle:
            "admitted / (capacity + rate x elapsed), one dot per trial: above 1 the bucket gave \
                   more than its rate"
                .to_string(),
        x_desc: "configuration",
        y_desc: "admitted / what the rate allows",
        y_format: |v| format!("{v:.1}"),
        legend: vec![
            (Marker::Dot(color(0)), "expiry drill (Redis's clock)"),
            (Marker::Dot(color(1)), "clock drill (seed 000's bucket)"),
        ],
        reference: Some((1.0, "the rate")),
        slots: slots.collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::csv_dir;

    const CSV: &str = "\
drill,script,clock,callers,skew_ms,expiry,ttl_ms,capacity,refill_per_sec,trial,calls,admitted,elapsed_ms,\
limit_admits,found_full
expiry,refresh,redis,one,0,short,400,20,2,0,1000,24,2000,24,0
expiry,no-refresh,redis,one,0,short,400,20,2,0,1000,100,2000,24,4
clock,seed,caller,skewed,10,full-refill,2000,100,100,0,1000,500,2000,300,200
";

    #[test]
    fn renders_one_slot_per_configuration() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = csv_dir(tmp.path(), "refill", TRIALS.name(), CSV);
        let paths = render(&dir).unwrap();
        assert_eq!(paths, ["refill.svg", "refill.png"].map(|n| dir.join(n)));
        let svg = std::fs::read_to_string(&paths[0]).unwrap();
        for s in ["no-refresh", "caller clock", "the rate", "4.17"] {
            assert!(svg.contains(s), "svg lacks {s}");
        }
    }

    #[test]
    fn header_only_is_empty() {
        let tmp = tempfile::tempdir().unwrap();
        let header = CSV.lines().next().unwrap();
        let dir = csv_dir(tmp.path(), "refill", TRIALS.name(), &format!("{header}\n"));
        let err = render(&dir).unwrap_err();
        assert!(matches!(err, ChartError::Empty(_)), "{err}");
    }
}
