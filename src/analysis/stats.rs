//! Small descriptive statistics over trials.

/// Count, mean, min and max of a sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
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
        Some(Summary {
            n: values.len(),
            mean: sum / values.len() as f64,
            min,
            max,
        })
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
        assert_eq!(Summary::of(&[]), None);
    }
}
