//! Small descriptive statistics over trials.

/// Count, mean, min, max and spread of a sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// Sample standard deviation (n - 1); 0 for one value.
    pub sd: f64,
}

impl Summary {
    /// Summarizes `values`; None for an empty sample.
    pub fn of(values: &[f64]) -> Option<Self> {
        if values.is_empty() {
            return None;
        }
        let sum: f64 = values.iter().sum();
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let n = values.len();
        let mean = sum / n as f64;
        let sd = if n > 1 {
            let squares: f64 = values.iter().map(|v| (v - mean).powi(2)).sum();
            (squares / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        Some(Summary {
            n,
            mean,
            min,
            max,
            sd,
        })
    }
}

/// `part / whole` as a share of counts, 0 for an empty whole.
pub fn share(part: u64, whole: u64) -> f64 {
    match whole {
        0 => 0.0,
        _ => part as f64 / whole as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_values() {
        let s = Summary::of(&[200.0, 166.0, 200.0, 190.0]).unwrap();
        assert_eq!((s.n, s.min, s.max), (4, 166.0, 200.0));
        assert!((s.mean - 189.0).abs() < 1e-9);
        // Deviations 11, -23, 11, 1: squares sum to 772, over n - 1 = 3.
        assert!((s.sd - (772.0f64 / 3.0).sqrt()).abs() < 1e-9);
        assert_eq!(Summary::of(&[5.0]).map(|s| s.sd), Some(0.0));
        assert_eq!(Summary::of(&[]), None);
    }
}
