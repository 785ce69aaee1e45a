//! The `P x F` notation: P worker processes, F requests in flight on each one's connection.

use serde::{Deserialize, Serialize};

/// `P x F`: P worker processes, F requests in flight on each one's connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Concurrency {
    pub processes: usize,
    pub in_flight: usize,
}

impl TryFrom<String> for Concurrency {
    type Error = String;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        let bad = || format!("`{s}` is not PROCESSESxIN_FLIGHT (e.g. 4x8, both >= 1)");
        let (p, f) = s.split_once('x').ok_or_else(bad)?;
        let processes: usize = p.trim().parse().map_err(|_| bad())?;
        let in_flight: usize = f.trim().parse().map_err(|_| bad())?;
        if processes == 0 || in_flight == 0 {
            return Err(bad());
        }
        Ok(Concurrency {
            processes,
            in_flight,
        })
    }
}

impl From<Concurrency> for String {
    fn from(c: Concurrency) -> String {
        format!("{}x{}", c.processes, c.in_flight)
    }
}

impl std::fmt::Display for Concurrency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.processes, self.in_flight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrency_parses_and_prints() {
        let c = Concurrency::try_from("4x8".to_string()).unwrap();
        assert_eq!((c.processes, c.in_flight), (4, 8));
        assert_eq!(c.to_string(), "4x8");
        for bad in ["4", "0x1", "1x0", "ax2", "4x8x1"] {
            assert!(Concurrency::try_from(bad.to_string()).is_err(), "{bad}");
        }
    }
}
