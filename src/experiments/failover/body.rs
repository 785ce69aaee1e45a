//! failover's measurement: every case of the matrix on servers of its own (trial.rs), then its
//! rows per key, per bin and per trial (tally.rs does the counting).

use super::rows::{BinRow, ClientRow, KeyRow, TrialRow, SENTINEL_SWITCH, SWITCH};
use super::tally::{self, Frame};
use super::trial::{self, Case, Measured};
use super::Params;
use crate::experiments::{ExperimentError, Phase, PhaseError, Session};
use crate::limiter::Invocation;

pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(crate::server::ServerError::from)
        .phase(|| "building the async runtime".into())?;
    let cases = p.cases();
    let mut keys = s.csv::<KeyRow>("failover.csv")?;
    let mut bins = s.csv::<BinRow>("bins.csv")?;
    let mut trials = s.csv::<TrialRow>("trials.csv")?;
    let mut clients = s.csv::<ClientRow>("clients.csv")?;
    let bar = s.progress(cases.len() as u64);
    for case in cases {
        let what = || {
            format!(
                "{} {} {} K={} offered {}x trial {}",
                crate::record::csv_text(&case.variant),
                case.strategy,
                case.invocation,
                case.keys,
                case.offered,
                case.trial
            )
        };
        let (m, attempts) = run_on_time(s, p, case, &what(), &rt).phase(what)?;
        let rows = Rows::of(p, case, &m, attempts).phase(what)?;
        for r in &rows.keys {
            keys.write(r)?;
        }
        for r in &rows.bins {
            bins.write(r)?;
        }
        trials.write(&rows.trial)?;
        for r in &rows.clients {
            clients.write(r)?;
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    s.note(format!(
        "clients moved by {SWITCH}: {} connections per side opened before the promotion, every check \
         sent after the switch used the promoted replica's; the old primary was left running",
        8
    ));
    Ok(())
}

/// Attempts at a case before its trial is kept late.
const ATTEMPTS: u32 = 3;

/// Runs a case again (up to `ATTEMPTS`) while its load ran later than one token's refill
/// (window / burst): a key whose checks stall that long can fill its bucket and waste refill at
/// the cap, so its count measures the stall, not the promotion. Returns the trial kept and the
/// attempts it took; a case late every time is kept with a note.
fn run_on_time(
    s: &mut Session,
    p: &Params,
    case: Case,
    what: &str,
    rt: &tokio::runtime::Runtime,
) -> Result<(Measured, u32), PhaseError> {
    let token_ms = p.window_ms as f64 / p.burst as f64;
    // The attempts discarded so far, by how late they ran.
    let mut late = Vec::new();
    let m = loop {
        let m = match case.variant.is_sentinel() {
            true => super::sentinel::run(s, p, case, rt)?,
            false => trial::run(s.ctx, p, case, rt)?,
        };
        if m.send_lag_max_ms <= token_ms || late.len() as u32 + 1 == ATTEMPTS {
            break m;
        }
        late.push(format!("{:.0}", m.send_lag_max_ms));
    };
    if !late.is_empty() {
        let kept = match m.send_lag_max_ms <= token_ms {
            true => "the one kept",
            false => "the last, kept anyway,",
        };
        s.note(format!(
            "{what}: attempts that ran {} ms late (one token is {token_ms} ms) were discarded; {kept} \
             ran {:.0} ms late",
            late.join(", "),
            m.send_lag_max_ms
        ));
    }
    Ok((m, late.len() as u32 + 1))
}

struct Rows {
    keys: Vec<KeyRow>,
    bins: Vec<BinRow>,
    trial: TrialRow,
    clients: Vec<ClientRow>,
}

impl Rows {
    fn of(p: &Params, case: Case, m: &Measured, attempts: u32) -> Result<Rows, PhaseError> {
        let frame = Frame {
            keys: case.keys,
            burst: p.burst,
            window_ms: p.window_ms,
            pre_windows: p.pre_windows,
            post_windows: m.post_windows,
            switch_unix_ms: m.switch_unix_ms,
        };
        let burst = p.burst as f64;
        let keys: Vec<KeyRow> = (tally::per_key(&frame, &m.checks).into_iter().enumerate())
            .map(|(key, (sent_post, admitted_pre, admitted_post))| {
                let allowed_pre = p.burst * p.pre_windows;
                let allowed_post = p.burst * m.post_windows;
                let baseline = admitted_pre as i64 - allowed_pre as i64;
                let overshoot = admitted_post as i64 - allowed_post as i64;
                KeyRow {
                    variant: case.variant,
                    strategy: case.strategy,
                    invocation: case.invocation,
                    keys: case.keys,
                    offered: case.offered,
                    trial: case.trial,
                    key: key as u64,
                    burst: p.burst,
                    window_ms: p.window_ms,
                    sent_post,
                    lost_admits: m.lost_admits.get(key).copied().unwrap_or(0),
                    admitted_pre,
                    allowed_pre,
                    admitted_post,
                    allowed_post,
                    baseline,
                    overshoot,
                    overshoot_bursts: overshoot as f64 / burst,
                    baseline_bursts: baseline as f64 / burst,
                }
            })
            .collect();
        let limit = case.keys as f64 * burst * p.bin_ms as f64 / p.window_ms as f64;
        let bins = (tally::bins(&frame, &m.checks, p.bin_ms).into_iter())
            .map(|b| BinRow {
                variant: case.variant,
                strategy: case.strategy,
                invocation: case.invocation,
                keys: case.keys,
                offered: case.offered,
                trial: case.trial,
                t_ms: b.t_ms,
                bin_ms: p.bin_ms,
                sent: b.sent,
                admitted: b.admitted,
                denied: b.denied,
                errors: b.errors,
                noscript: b.noscript,
                limit,
            })
            .collect();
        let mean =
            |f: fn(&KeyRow) -> f64| keys.iter().map(f).sum::<f64>() / keys.len().max(1) as f64;
        let after = m.checks.iter().filter(|c| c.after_switch);
        let noscript_after = after.clone().filter(|c| c.noscript).count() as u64;
        let errors_after = (after.filter(|c| c.answer == tally::Answer::Error)).count() as u64;
        if case.invocation != Invocation::Evalsha && errors_after > 0 {
            return Err(PhaseError::Invalid(format!(
                "{errors_after} checks after the switch got no decision"
            )));
        }
        let trial = TrialRow {
            variant: case.variant,
            strategy: case.strategy,
            invocation: case.invocation,
            keys: case.keys,
            offered: case.offered,
            trial: case.trial,
            switch: match case.variant.is_sentinel() {
                true => SENTINEL_SWITCH,
                false => SWITCH,
            }
            .to_string(),
            burst: p.burst,
            window_ms: p.window_ms,
            lag_ms: m.lag_ms,
            promote_ms: m.promote_ms,
            switch_after_promote_ms: m.switch_after_promote_ms,
            switch_phase: frame.phase(),
            lost_repl_bytes: m.lost_repl_bytes,
            lost_admits: m.lost_admits.iter().sum(),
            replica_keys: m.replica_keys,
            first_call: m.first_call.clone(),
            noscript_after,
            errors_after,
            overshoot_bursts_mean: mean(|r| r.overshoot_bursts),
            overshoot_bursts_max: (keys.iter().map(|r| r.overshoot_bursts))
                .fold(f64::MIN, f64::max),
            baseline_bursts_mean: mean(|r| r.baseline_bursts),
            overshoot_per_offered: mean(|r| r.overshoot_bursts) / case.offered,
            overshoot_total: keys.iter().map(|r| r.overshoot).sum(),
            requests: m.checks.len() as u64,
            send_lag_max_ms: m.send_lag_max_ms,
            attempts,
        };
        let open = open_overshoot(&frame, m, &keys);
        let clients = (m.clients.iter())
            .map(|c| ClientRow {
                variant: case.variant,
                strategy: case.strategy,
                invocation: case.invocation,
                keys: case.keys,
                offered: case.offered,
                trial: case.trial,
                client: c.client,
                down_after_ms: p.down_after_ms,
                promoted_ms: c.promoted_ms,
                rediscovered_ms: c.rediscovered_ms,
                asks: c.asks,
                checks_between: c.checks_between,
                failed: c.failed,
                readonly: c.readonly,
                unavailable_ms: c.unavailable_ms,
                client_keys: open.get(c.client as usize).map_or(0, |o| o.0),
                overshoot_open_bursts: open.get(c.client as usize).map_or(f64::NAN, |o| o.1),
            })
            .collect();
        Ok(Rows {
            keys,
            bins,
            trial,
            clients,
        })
    }
}

/// Per client (key % clients): its keys, and the mean over them of the overshoot with every check
/// that got no decision in the windows after the switch counted admitted (a limiter failing
/// open), in bursts.
fn open_overshoot(frame: &Frame, m: &Measured, keys: &[KeyRow]) -> Vec<(u64, f64)> {
    let clients = m.clients.len().max(1);
    let (lo, hi) = (frame.switch_window(), frame.span().1);
    let mut failed = vec![0u64; keys.len()];
    let after = (m.checks.iter()).filter(|c| c.sent_unix_ms >= lo && c.sent_unix_ms < hi);
    for c in after.filter(|c| c.answer == tally::Answer::Error) {
        if let Some(n) = failed.get_mut(c.key as usize) {
            *n += 1;
        }
    }
    let mut out = vec![(0u64, 0.0f64); clients];
    for (k, row) in keys.iter().enumerate() {
        let slot = &mut out[k % clients];
        slot.0 += 1;
        slot.1 += (row.overshoot + failed[k] as i64) as f64 / frame.burst as f64;
    }
    (out.into_iter())
        .map(|(n, sum)| (n, if n == 0 { f64::NAN } else { sum / n as f64 }))
        .collect()
}
