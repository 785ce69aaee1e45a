//! memory's measurement.

use super::fill::{fill, FillSetup};
use super::rows::MEMORY;
use super::setting::{apply_setting, LISTPACK_CONFIG};
use super::{plan, Params};
use crate::experiments::{ExperimentError, Phase, Session};

pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let mut rows = MEMORY.create(&s.run.staging)?;
    let bar = s.progress(p.listpack_entries.len() as u64);
    for (i, &setting) in p.listpack_entries.iter().enumerate() {
        let what = || format!("listpack_entries {}", setting.label());
        // A fresh server per setting: a skiplist stays one until a reload, and a clean baseline.
        if i > 0 {
            s.fresh_server().phase(what)?;
        }
        let (threshold, label, value_limit) = apply_setting(&s.target, setting).phase(what)?;
        s.note(format!(
            "Setting {i} ({label}): {LISTPACK_CONFIG} = {threshold}, zset-max-listpack-value = \
            {value_limit}, on a fresh server."
        ));
        let setup = FillSetup {
            session: s,
            window_ms: p.window_ms,
            connections: p.connections,
            in_flight: p.in_flight,
            prefix: &s.prefix,
            threshold,
        };
        let fills = plan(p, threshold, i == 0);
        // Excluded warm-up: the first fill of each strategy on a server also pays one-off
        // allocations (measured: tens of KB that FLUSHALL does not give back).
        for strategy in &p.strategies {
            if let Some(f) = fills.iter().find(|f| f.strategy == *strategy) {
                fill(&setup, f)?;
            }
        }
        for repeat in 0..p.repeats {
            for f in &fills {
                let m = fill(&setup, f)?;
                rows.write(&m.row(f, threshold, label, repeat))?;
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(())
}
