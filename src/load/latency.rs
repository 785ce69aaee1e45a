//! Latency histograms: one per worker while it runs, shipped to the parent as recorded buckets
//! and merged there.

use super::LoadError;
use hdrhistogram::Histogram;

/// A histogram of ns from 1 ns to 60 s at 3 significant digits.
pub fn new_histogram() -> Result<Histogram<u64>, LoadError> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3)
        .map_err(|e| LoadError::Histogram(e.to_string()))
}

/// The non-empty buckets as (highest equivalent value, count): compact and lossless at 3 digits.
pub fn buckets(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded()
        .map(|v| {
            (
                h.highest_equivalent(v.value_iterated_to()),
                v.count_at_value(),
            )
        })
        .collect()
}

/// A histogram again from its `buckets` (a worker's, or several workers' concatenated).
pub fn from_buckets(buckets: &[(u64, u64)]) -> Result<Histogram<u64>, LoadError> {
    let mut h = new_histogram()?;
    for &(value, count) in buckets {
        h.record_n(value, count)
            .map_err(|e| LoadError::Histogram(e.to_string()))?;
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_round_trip() {
        let mut h = new_histogram().unwrap();
        for v in [1_000u64, 1_000, 20_000, 5_000_000] {
            h.record(v).unwrap();
        }
        let back = from_buckets(&buckets(&h)).unwrap();
        assert_eq!(back.len(), 4);
        for q in [0.5, 0.9, 0.99, 1.0] {
            assert_eq!(h.value_at_quantile(q), back.value_at_quantile(q));
        }
    }
}
