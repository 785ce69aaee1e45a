//! failover's summary for REPORT.md: per variant, strategy, invocation, K and offered rate, the
//! overshoot per key in bursts beside the steady state's own, and what the replica had lost.

use super::TrialRow;
use crate::analysis::table::{summarize, Key, Stat};
use crate::analysis::AnalysisError;
use crate::record::csv_text;
use std::path::Path;

pub fn summary(dir: &Path) -> Result<String, AnalysisError> {
    let keys: [Key<TrialRow>; 5] = [
        ("variant", |r| csv_text(&r.variant)),
        ("strategy", |r| r.strategy.to_string()),
        ("invocation", |r| r.invocation.to_string()),
        ("K", |r| r.keys.to_string()),
        ("offered x", |r| r.offered.to_string()),
    ];
    let stats: [Stat<TrialRow>; 7] = [
        ("overshoot/key (bursts)", |r| Some(r.overshoot_bursts_mean)),
        ("max/key", |r| Some(r.overshoot_bursts_max)),
        ("baseline/key", |r| Some(r.baseline_bursts_mean)),
        ("lost admits", |r| Some(r.lost_admits as f64)),
        ("lost repl bytes", |r| Some(r.lost_repl_bytes as f64)),
        ("NOSCRIPT after", |r| Some(r.noscript_after as f64)),
        ("send lag max ms", |r| Some(r.send_lag_max_ms)),
    ];
    let mut out = summarize(&dir.join("trials.csv"), &keys, &stats)?;
    out.push_str(
        "\nOvershoot per key: admitted over whole windows from the switch's window minus what the \
         limit allows there, in bursts; baseline: the same before the switch. Clients moved by \
         reconnecting at one instant (switch = client-reconnect in trials.csv). A case whose load ran \
         later than one token's refill (window / burst) is run again, up to 3 attempts (attempts in \
         trials.csv; the run's notes say how late).\n",
    );
    Ok(out)
}
