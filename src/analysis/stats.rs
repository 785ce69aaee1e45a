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

    /// Half the width of the mean's 95% confidence interval (Student's t); None for one value.
    pub fn ci95_half_width(&self) -> Option<f64> {
        // Two-sided 97.5% quantiles of t for 1..=30 degrees of freedom; the normal's beyond.
        const T: [f64; 30] = [
            12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
            2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
            2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
        ];
        let df = self.n.checked_sub(1).filter(|df| *df > 0)?;
        let t = T.get(df - 1).copied().unwrap_or(1.96);
        Some(t * self.sd / (self.n as f64).sqrt())
    }
}

/// The median of `values` (the mean of the middle two for an even count); None when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// The nearest-rank percentile of sorted values (0 for none): p99 of 300 is the 297th.
pub fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

/// The nearest-rank `q` quantile of values in any order; None for none.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    (!sorted.is_empty()).then(|| nearest_rank(&sorted, q))
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
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=300).map(f64::from).collect();
        assert_eq!(nearest_rank(&v, 0.5), 150.0);
        assert_eq!(nearest_rank(&v, 0.99), 297.0);
        assert_eq!(nearest_rank(&v, 1.0), 300.0);
        assert_eq!(nearest_rank(&[], 0.5), 0.0);
        let shuffled: Vec<f64> = (1..=300).rev().map(f64::from).collect();
        assert_eq!(quantile(&shuffled, 0.99), Some(297.0));
        assert_eq!(quantile(&[], 0.99), None);
    }

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

    #[test]
    fn ci_half_width_uses_t_for_the_sample_size() {
        let s = Summary::of(&[1.0, 2.0, 3.0]).unwrap();
        // sd 1, n 3, t(2) = 4.303.
        let half = s.ci95_half_width().unwrap();
        assert!((half - 4.303 / 3f64.sqrt()).abs() < 1e-9);
        assert_eq!(
            Summary::of(&[7.0, 7.0, 7.0]).and_then(|s| s.ci95_half_width()),
            Some(0.0)
        );
        assert_eq!(Summary::of(&[7.0]).and_then(|s| s.ci95_half_width()), None);
    }
}
