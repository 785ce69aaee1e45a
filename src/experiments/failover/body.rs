//! failover's measurement: every case of the matrix on servers of its own (trial.rs), then its
//! rows per key, per bin and per trial (tally.rs does the counting).

use super::rows::{
    BinRow, ClientRow, KeyRow, TrialRow, Variant, BINS, CLIENTS, KEYS, SENTINEL_SWITCH, SWITCH,
    TRIALS,
};
use super::tally::{self, Frame};
use super::trial::{self, Case, Measured};
use super::Params;
use crate::experiments::{ExperimentError, Phase, PhaseError, Session};
use crate::limiter::{Invocation, LimiterError};

pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(crate::server::ServerError::from)
        .phase(|| "building the async runtime".into())?;
    let processes: Vec<_> = (s.ctx.limiters.iter().copied())
        .filter(|l| l.is_process())
        .collect();
    let cases = (p.cases_with(&processes))
        .map_err(PhaseError::Invalid)
        .phase(|| "planning the trials".into())?;
    let mut keys = KEYS.create(&s.run.staging)?;
    let mut bins = BINS.create(&s.run.staging)?;
    let mut trials = TRIALS.create(&s.run.staging)?;
    let mut clients = CLIENTS.create(&s.run.staging)?;
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
        let ran = run_on_time(s, p, case, &what(), &rt);
        if let Err(PhaseError::Limiter(LimiterError::NoClientFor { why, .. })) = &ran {
            s.note(format!(
                "{} not run in sentinel-crash: {why}",
                case.strategy
            ));
            bar.inc(1);
            continue;
        }
        let (m, attempts) = ran.phase(what)?;
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

/// Runs a case again (up to `ATTEMPTS`) while it did not run as planned: its load ran later than
/// one token's refill (window / burst), so a key could fill its bucket and waste refill at the
/// cap and its count would measure the stall, not the promotion; or its clients moved past the
/// middle of what the window had left after the planned switch, where what a wiped window's
/// traffic predicts no longer tells offered rates apart. Returns the trial kept and the attempts
/// it took; a case off plan every time is kept with a note.
fn run_on_time(
    s: &mut Session,
    p: &Params,
    case: Case,
    what: &str,
    rt: &tokio::runtime::Runtime,
) -> Result<(Measured, u32), PhaseError> {
    // The attempts discarded so far, by what went off plan.
    let mut discarded = Vec::new();
    let (m, off) = loop {
        let m = match case.variant.is_sentinel() {
            true => super::sentinel::run(s, p, case, rt)?,
            false => trial::run(s, p, case, rt)?,
        };
        match off_plan(p, case.variant, m.send_lag_max_ms, m.switch_unix_ms) {
            Some(why) if discarded.len() as u32 + 1 < ATTEMPTS => discarded.push(why),
            off => break (m, off),
        }
    };
    if !discarded.is_empty() {
        let kept = match off {
            None => "the one kept ran as planned".to_string(),
            Some(why) => format!("the last, kept anyway, {why}"),
        };
        s.note(format!(
            "{what}: attempts were discarded ({}); {kept}",
            discarded.join("; ")
        ));
    }
    Ok((m, discarded.len() as u32 + 1))
}

/// How a trial of `variant` went off its plan (see [`run_on_time`]), from its checks' latest
/// send (ms after their intended start) and its switch on the Unix clock; None if it did not.
fn off_plan(p: &Params, variant: Variant, send_lag_ms: f64, switch_unix_ms: f64) -> Option<String> {
    let token_ms = p.window_ms as f64 / p.burst as f64;
    if send_lag_ms > token_ms {
        return Some(format!(
            "ran {send_lag_ms:.0} ms late, one token is {token_ms} ms"
        ));
    }
    let phase = (switch_unix_ms / p.window_ms as f64).fract();
    let latest = p.switch_phase + (1.0 - p.switch_phase) / 2.0;
    // A switch past its window's end wraps to its start: below the plan, so off it too.
    let planned = p.switch_phase..=latest;
    // Sentinel's clients move when they learn of the promotion: no planned phase.
    (!variant.is_sentinel() && !planned.contains(&phase)).then(|| {
        format!(
            "switched at {phase:.2} of its window, planned {} (at most {latest:.2})",
            p.switch_phase
        )
    })
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
        let keys = key_rows(p, case, m, &frame);
        let trial = trial_row(p, case, m, attempts, &frame, &keys)?;
        Ok(Rows {
            bins: bin_rows(p, case, m, &frame),
            clients: client_rows(case, m, &frame, &keys),
            keys,
            trial,
        })
    }
}

/// One row per key: admitted over whole windows before and after the switch, against the limit.
fn key_rows(p: &Params, case: Case, m: &Measured, frame: &Frame) -> Vec<KeyRow> {
    let burst = p.burst as f64;
    (tally::per_key(frame, &m.checks).into_iter().enumerate())
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
                down_after_ms: case.down_after_ms,
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
        .collect()
}

/// One row per bin, keys summed.
fn bin_rows(p: &Params, case: Case, m: &Measured, frame: &Frame) -> Vec<BinRow> {
    let limit = (case.keys * p.burst * p.bin_ms) as f64 / p.window_ms as f64;
    (tally::bins(frame, &m.checks, p.bin_ms).into_iter())
        .map(|b| BinRow {
            variant: case.variant,
            strategy: case.strategy,
            invocation: case.invocation,
            keys: case.keys,
            offered: case.offered,
            trial: case.trial,
            down_after_ms: case.down_after_ms,
            t_ms: b.t_ms,
            bin_ms: p.bin_ms,
            sent: b.sent,
            admitted: b.admitted,
            denied: b.denied,
            errors: b.errors,
            noscript: b.noscript,
            limit,
        })
        .collect()
}

/// The trial's row; an error when a check after the switch got no decision where none may.
fn trial_row(
    p: &Params,
    case: Case,
    m: &Measured,
    attempts: u32,
    frame: &Frame,
    keys: &[KeyRow],
) -> Result<TrialRow, PhaseError> {
    let mean = |f: fn(&KeyRow) -> f64| keys.iter().map(f).sum::<f64>() / keys.len().max(1) as f64;
    let after = m.checks.iter().filter(|c| c.after_switch);
    let noscript_after = after.clone().filter(|c| c.noscript).count() as u64;
    let errors_after = (after.filter(|c| c.answer == tally::Answer::Error)).count() as u64;
    // ratelab's own clients fall back on NOSCRIPT (all but bare EVALSHA): a failure after the
    // switch is a defect. A library's own failures there are what is measured of it.
    let may_fail = case.invocation == Invocation::Evalsha || case.strategy.is_process();
    if !may_fail && errors_after > 0 {
        return Err(PhaseError::Invalid(format!(
            "{errors_after} checks after the switch got no decision"
        )));
    }
    Ok(TrialRow {
        variant: case.variant,
        strategy: case.strategy,
        invocation: case.invocation,
        keys: case.keys,
        offered: case.offered,
        trial: case.trial,
        down_after_ms: case.down_after_ms,
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
        old_primary_role: m.old_primary_role.clone(),
        first_call: m.first_call.clone(),
        noscript_after,
        errors_after,
        overshoot_bursts_mean: mean(|r| r.overshoot_bursts),
        overshoot_bursts_max: (keys.iter().map(|r| r.overshoot_bursts)).fold(f64::MIN, f64::max),
        baseline_bursts_mean: mean(|r| r.baseline_bursts),
        overshoot_per_offered: mean(|r| r.overshoot_bursts) / case.offered,
        overshoot_total: keys.iter().map(|r| r.overshoot).sum(),
        requests: m.checks.len() as u64,
        send_lag_max_ms: m.send_lag_max_ms,
        attempts,
    })
}

/// One row per client of a Sentinel trial (none in the others).
fn client_rows(case: Case, m: &Measured, frame: &Frame, keys: &[KeyRow]) -> Vec<ClientRow> {
    let open = open_overshoot(frame, m, keys);
    (m.clients.iter())
        .map(|c| ClientRow {
            variant: case.variant,
            strategy: case.strategy,
            invocation: case.invocation,
            keys: case.keys,
            offered: case.offered,
            trial: case.trial,
            client: c.client,
            down_after_ms: case.down_after_ms,
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
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Profile;
    use crate::experiments::frame::resolve;

    #[test]
    fn a_trial_is_off_plan_when_late_or_switched_past_half_of_what_its_window_had_left() {
        let p = resolve::<super::super::Failover>(Profile::Quick, &[]).unwrap();
        let (w, token) = (p.window_ms as f64, p.window_ms as f64 / p.burst as f64);
        let window = 1_000.0 * w;
        let at = |phase: f64| window + phase * w;
        let planned = p.switch_phase;
        let latest = planned + (1.0 - planned) / 2.0;
        assert_eq!(
            off_plan(&p, Variant::Wiped, token, at(planned + 0.01)),
            None
        );
        assert!(off_plan(&p, Variant::Wiped, token + 1.0, at(planned))
            .is_some_and(|why| why.contains("late")));
        let late_switch = off_plan(&p, Variant::Wiped, 0.0, at(latest + 0.01));
        assert!(late_switch.is_some_and(|why| why.contains("switched at")));
        // Past the window's end the phase wraps to its start: still off plan.
        assert!(off_plan(&p, Variant::Replicated, 0.0, at(1.0 + 0.05)).is_some());
        // Sentinel's clients move when they learn of it: no planned phase.
        assert_eq!(
            off_plan(&p, Variant::SentinelCrash, 0.0, at(latest + 0.1)),
            None
        );
    }
}
