//! tsmember's measurement.

use super::rows::TsmemberRow;
use super::runs::One;
use super::{label, Params};
use crate::experiments::{ExperimentError, Session};
use crate::limiter::LogVariant;
use crate::load::rng::SplitMix64;

pub(super) fn run(s: &mut Session, p: &Params) -> Result<(), ExperimentError> {
    let mut rows = s.csv::<TsmemberRow>("tsmember.csv")?;
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
        let batched = p.batch_members.contains(&v.member);
        (p.batches.iter().copied())
            .filter(|&b| b == 1 || batched)
            .collect()
    };
    let per_rate: usize = variants.iter().map(|v| runs_of(v).len()).sum();
    let total =
        p.trials as usize * p.rates.len() * per_rate + p.flat_out_trials as usize * flat.len();
    let bar = s.progress(total as u64);
    for trial in 0..p.trials {
        for (r, &rate) in p.rates.iter().enumerate() {
            // One schedule per trial and rate, replayed by every variant.
            let seed = SplitMix64::new(s.ctx.seed, (u64::from(trial) << 16) | r as u64).next_u64();
            for &v in &variants {
                for batch in runs_of(&v) {
                    let one = One {
                        v,
                        rate: Some(rate),
                        batch,
                        trial,
                        limit: p.limit,
                        key: s.key(format!("{}:{rate}:{batch}:{trial}", label(v))),
                        seed,
                    };
                    rows.write(&one.measure(s, p)?)?;
                    bar.inc(1);
                }
            }
        }
    }
    for trial in 0..p.flat_out_trials {
        for &v in &flat {
            let one = One {
                v,
                rate: None,
                batch: 0,
                trial,
                limit: p.flat_out_limit,
                key: s.key(format!("{}:flat:{trial}", label(v))),
                seed: s.ctx.seed,
            };
            rows.write(&one.measure(s, p)?)?;
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok(())
}
