//! tsmember's measurement.

use super::rows::CustomRow;
use super::runs::One;
use super::{label, Params};
use super::{CUSTOM, TSMEMBER};
use crate::experiments::{limiters, ExperimentError, Session};
use crate::limiter::{LogMember, LogVariant, Strategy};
use crate::load::rng::SplitMix64;

pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let mut rows = TSMEMBER.create(&s.run.staging)?;
    let variants: Vec<LogVariant> = (p.members.iter())
        .flat_map(|&member| {
            p.clocks.iter().map(move |&clock| LogVariant {
                member,
                clock,
                member_bytes: None,
            })
        })
        .collect();
    let flat: Vec<LogVariant> = variants
        .iter()
        .filter(|v| p.flat_out_members.contains(&v.member))
        .copied()
        .collect();
    // Batched arrivals (the burstiness the seed's client pool may have had) for some members only.
    let runs_of = |v: &LogVariant| -> Vec<u32> {
        let batched = p.batch_members.contains(&v.member) && p.batch_clocks.contains(&v.clock);
        (p.batches.iter().copied())
            .filter(|&b| b == 1 || batched)
            .collect()
    };
    // Members that are not the time run fewer trials (`unique_member_trials`), open loop and flat out.
    let in_trial = |v: &LogVariant, trial: u32| {
        v.member == LogMember::TimeMs || trial < p.unique_member_trials
    };
    let per_trial = |trial| -> usize {
        (variants.iter().filter(|v| in_trial(v, trial)))
            .map(|v| runs_of(v).len())
            .sum()
    };
    // Custom limiters replay each trial's schedule at every rate (Poisson) and run flat out.
    let customs = s.ctx.limiters.clone();
    let mut custom_rows = match customs.is_empty() {
        true => None,
        false => Some(CUSTOM.create(&s.run.staging)?),
    };
    let total = ((0..p.trials).map(|t| p.rates.len() * (per_trial(t) + customs.len())))
        .sum::<usize>()
        + ((0..p.flat_out_trials).map(|t| flat.iter().filter(|v| in_trial(v, t)).count()))
            .sum::<usize>()
        + p.flat_out_trials as usize * customs.len();
    let bar = s.progress(total as u64);
    for trial in 0..p.trials {
        for (r, &rate) in p.rates.iter().enumerate() {
            // One schedule per trial and rate, replayed by every variant.
            let seed = SplitMix64::new(s.ctx.seed, (u64::from(trial) << 16) | r as u64).next_u64();
            for &v in variants.iter().filter(|v| in_trial(v, trial)) {
                for batch in runs_of(&v) {
                    let one = One {
                        strategy: Strategy::LuaLog,
                        v,
                        rate: Some(rate),
                        batch,
                        trial,
                        limit: p.limit,
                        key: s.key(format!("{}:{rate}:{batch}:{trial}", label(v))),
                        seed,
                    };
                    rows.write(&one.measure(s, p)?.0)?;
                    bar.inc(1);
                }
            }
            for &strategy in &customs {
                let one = One {
                    strategy,
                    v: LogVariant::default(),
                    rate: Some(rate),
                    batch: 1,
                    trial,
                    limit: p.limit,
                    key: s.key(format!("{strategy}:{rate}:{trial}")),
                    seed,
                };
                write_custom(s, p, &one, custom_rows.as_mut())?;
                bar.inc(1);
            }
        }
    }
    // Flat out too, a member that is not the time runs `unique_member_trials` at most: every one
    // of its flat-out runs in the reference admitted the limit exactly.
    for trial in 0..p.flat_out_trials {
        for &v in flat.iter().filter(|v| in_trial(v, trial)) {
            let one = One {
                strategy: Strategy::LuaLog,
                v,
                rate: None,
                batch: 0,
                trial,
                limit: p.flat_out_limit,
                key: s.key(format!("{}:flat:{trial}", label(v))),
                seed: s.ctx.seed,
            };
            rows.write(&one.measure(s, p)?.0)?;
            bar.inc(1);
        }
        for &strategy in &customs {
            let one = One {
                strategy,
                v: LogVariant::default(),
                rate: None,
                batch: 0,
                trial,
                limit: p.flat_out_limit,
                key: s.key(format!("{strategy}:flat:{trial}")),
                seed: s.ctx.seed,
            };
            write_custom(s, p, &one, custom_rows.as_mut())?;
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok(())
}

/// Runs a custom limiter's `one` and writes its row.
fn write_custom(
    s: &mut Session,
    p: &Params,
    one: &One,
    sink: Option<&mut crate::record::CsvSink<CustomRow>>,
) -> Result<(), ExperimentError> {
    let (row, failed) = one.measure(s, p)?;
    let Strategy::Custom(name) = one.strategy else {
        return Ok(());
    };
    let Some(d) = name.definition() else {
        return Ok(());
    };
    // Decisions are made until the last reply: the schedule, plus the slowest request's latency
    // from its intended start (flat out, the measured run), so the ideal never undercounts.
    let span_ms = match one.rate {
        Some(_) => p.duration_s * 1000.0 + row.max_us / 1000.0,
        None => row.duration_s * 1000.0,
    };
    let ideal =
        limiters::most_admitted(d.algorithm, d.anchor, one.limit, p.window_ms, 0.0, span_ms);
    if let Some(sink) = sink {
        sink.write(&CustomRow::of(
            one.strategy,
            d.uses_caller_clock(),
            ideal,
            &row,
            failed,
        ))?;
    }
    Ok(())
}
