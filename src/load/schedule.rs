//! When open-loop requests start. The whole schedule is computed up front from the seed, so a
//! run can be repeated exactly, every variant of a trial can replay the same arrivals, and the
//! generator decides nothing on its hot path but "is the next one due".

use super::rng::SplitMix64;
use serde::{Deserialize, Serialize};

/// The random stream Poisson gaps are drawn from. Every worker process draws the same schedule
/// from it and takes its own share, so the union of the shares is exactly one seeded schedule.
const SCHEDULE_STREAM: u64 = 0x5c4e_d01e;

/// How requests arrive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Arrivals {
    /// Poisson arrivals: exponential gaps with mean 1/`rate_per_s`, for `duration_ms`.
    Poisson { rate_per_s: f64, duration_ms: u64 },
    /// Bursts of evenly spaced requests, at offsets from the schedule's start.
    Bursts(Vec<Burst>),
    /// Poisson arrivals of batches: `batch` requests at the same instant (a client pool flushing
    /// its queue), batches at `rate_per_s / batch`, so the request rate is the same as Poisson's.
    PoissonBatches {
        rate_per_s: f64,
        duration_ms: u64,
        batch: u32,
    },
}

/// `count` requests evenly spaced over `[offset_ms, offset_ms + span_ms)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Burst {
    pub offset_ms: f64,
    pub span_ms: f64,
    pub count: u64,
}

impl Arrivals {
    /// Every request's intended start in ns after the schedule's start, ascending.
    pub fn schedule(&self, seed: u64) -> Vec<u64> {
        match self {
            Arrivals::Poisson {
                rate_per_s,
                duration_ms,
            } => poisson(seed, *rate_per_s, *duration_ms),
            Arrivals::PoissonBatches {
                rate_per_s,
                duration_ms,
                batch,
            } => {
                let batch = (*batch).max(1);
                let starts = poisson(seed, rate_per_s / f64::from(batch), *duration_ms);
                (starts.iter())
                    .flat_map(|&t| std::iter::repeat_n(t, batch as usize))
                    .collect()
            }
            Arrivals::Bursts(bursts) => {
                let mut out: Vec<u64> = bursts.iter().flat_map(burst_times).collect();
                out.sort_unstable();
                out
            }
        }
    }
}

fn poisson(seed: u64, rate_per_s: f64, duration_ms: u64) -> Vec<u64> {
    if !(rate_per_s > 0.0 && rate_per_s.is_finite()) {
        return Vec::new();
    }
    let mut rng = SplitMix64::new(seed, SCHEDULE_STREAM);
    let mean_gap_ns = 1e9 / rate_per_s;
    let end_ns = duration_ms as f64 * 1e6;
    let expected = (rate_per_s * duration_ms as f64 / 1000.0) as usize;
    let mut out = Vec::with_capacity(expected + expected / 10 + 16);
    // Summed in f64 ns, not rounded per gap, so rounding never biases the mean rate.
    let mut t = 0.0;
    loop {
        t += rng.exponential(mean_gap_ns);
        if t >= end_ns {
            return out;
        }
        out.push(t as u64);
    }
}

fn burst_times(b: &Burst) -> impl Iterator<Item = u64> + '_ {
    let count = b.count.max(1) as f64;
    (0..b.count).map(move |k| ((b.offset_ms + b.span_ms * k as f64 / count) * 1e6) as u64)
}

/// The starts worker `index` of `workers` makes: every `workers`-th, so the shares interleave
/// and together are the whole schedule (and their superposition the original Poisson process).
pub fn share(schedule: &[u64], index: usize, workers: usize) -> Vec<u64> {
    let workers = workers.max(1);
    schedule
        .iter()
        .copied()
        .skip(index % workers)
        .step_by(workers)
        .collect()
}

/// When the schedule's start is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Start {
    /// As soon as the parent says go.
    AtGo,
    /// The first moment at least `lead_ms` after go at which a clock running `offset_ns` ahead
    /// of this machine's reads `phase_ms` past a multiple of `period_ms`. Lines a schedule up
    /// with window boundaries: the caller's (offset 0) or Redis's (offset measured with TIME).
    Aligned {
        period_ms: u64,
        phase_ms: u64,
        offset_ns: i64,
        lead_ms: u64,
    },
    /// At this Unix ms on this machine's clock, chosen by the parent: every worker starts at the
    /// same instant, which can also be the origin of the limiter's windows and of a sink's seconds.
    AtUnixMs(u64),
}

/// The aligned start in Unix ns on this machine's clock (see `Start::Aligned`).
pub fn aligned_start(
    now_unix_ns: u64,
    period_ms: u64,
    phase_ms: u64,
    offset_ns: i64,
    lead_ms: u64,
) -> u64 {
    let period = i128::from(period_ms.max(1)) * 1_000_000;
    let phase = (i128::from(phase_ms) * 1_000_000).rem_euclid(period);
    // Work on the other clock, where the boundaries are.
    let earliest =
        i128::from(now_unix_ns) + i128::from(lead_ms) * 1_000_000 + i128::from(offset_ns);
    let mut at = earliest - earliest.rem_euclid(period) + phase;
    if at < earliest {
        at += period;
    }
    (at - i128::from(offset_ns)).max(0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn poisson_of(seed: u64, rate: f64, ms: u64) -> Vec<u64> {
        Arrivals::Poisson {
            rate_per_s: rate,
            duration_ms: ms,
        }
        .schedule(seed)
    }

    #[test]
    fn poisson_mean_gap_and_count_match_the_rate() {
        let s = poisson_of(7, 10_000.0, 20_000);
        // 200,000 expected; the count's sd is ~447, so 1% is > 4 sd.
        assert!((s.len() as f64 - 200_000.0).abs() < 2_000.0, "{}", s.len());
        let gaps: Vec<f64> = s.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        assert!((mean - 100_000.0).abs() < 1_000.0, "mean gap {mean} ns");
        // Exponential: the sd equals the mean, and ~1/e of gaps exceed it.
        let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
        assert!((sd / mean - 1.0).abs() < 0.02, "sd/mean {}", sd / mean);
        let above = gaps.iter().filter(|&&g| g > mean).count() as f64 / gaps.len() as f64;
        assert!((above - (-1f64).exp()).abs() < 0.01, "{above}");
        assert!(s.windows(2).all(|w| w[0] <= w[1]) && *s.last().unwrap() < 20_000_000_000);
    }

    #[test]
    fn batches_keep_the_request_rate_and_arrive_together() {
        let batched = Arrivals::PoissonBatches {
            rate_per_s: 10_000.0,
            duration_ms: 20_000,
            batch: 4,
        }
        .schedule(7);
        // 50,000 batches expected (sd ~224): 200,000 requests within 1%.
        assert!(
            (batched.len() as f64 - 200_000.0).abs() < 2_000.0,
            "{}",
            batched.len()
        );
        assert!(batched.chunks(4).all(|b| b.iter().all(|&t| t == b[0])));
        assert!(batched.windows(2).all(|w| w[0] <= w[1]));
        let one = Arrivals::PoissonBatches {
            rate_per_s: 1000.0,
            duration_ms: 2000,
            batch: 1,
        };
        assert_eq!(one.schedule(3), poisson_of(3, 1000.0, 2000));
    }

    #[test]
    fn same_seed_same_schedule_other_seed_other_schedule() {
        assert_eq!(poisson_of(1, 1000.0, 2000), poisson_of(1, 1000.0, 2000));
        assert_ne!(poisson_of(1, 1000.0, 2000), poisson_of(2, 1000.0, 2000));
        assert!(poisson_of(1, 0.0, 2000).is_empty());
        assert!(poisson_of(1, f64::NAN, 2000).is_empty());
    }

    #[test]
    fn shares_partition_the_schedule() {
        let s = poisson_of(3, 1000.0, 1000);
        let mut all: Vec<u64> = (0..3).flat_map(|i| share(&s, i, 3)).collect();
        all.sort_unstable();
        assert_eq!(all, s);
        assert_eq!(share(&s, 0, 1), s);
        assert_eq!(share(&s, 0, 0), s);
    }

    #[test]
    fn bursts_are_evenly_spaced_and_sorted() {
        let a = Arrivals::Bursts(vec![
            Burst {
                offset_ms: 50.0,
                span_ms: 50.0,
                count: 2,
            },
            Burst {
                offset_ms: 0.0,
                span_ms: 50.0,
                count: 4,
            },
        ]);
        let ms: Vec<f64> = a.schedule(0).iter().map(|&t| t as f64 / 1e6).collect();
        assert_eq!(ms, [0.0, 12.5, 25.0, 37.5, 50.0, 75.0]);
    }

    #[test]
    fn aligned_start_lands_on_the_phase_of_the_other_clock() {
        let now = 1_700_000_000_123_456_789u64;
        let at = aligned_start(now, 1000, 950, 0, 100);
        assert_eq!(at % 1_000_000_000, 950_000_000);
        assert!(at >= now + 100_000_000 && at < now + 1_100_000_000);
        // Redis 5 ms ahead: the start is 950 ms past a second on Redis's clock.
        let at = aligned_start(now, 1000, 950, 5_000_000, 100);
        assert_eq!((at + 5_000_000) % 1_000_000_000, 950_000_000);
        let behind = aligned_start(now, 1000, 950, -7_000_000, 0);
        assert_eq!((behind - 7_000_000) % 1_000_000_000, 950_000_000);
        assert!(behind >= now);
    }
}
