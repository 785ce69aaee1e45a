//! A fixed window held in one process's memory, as a pod that limits itself does: exact for that
//! process, blind to every other, so N pods each admitting `limit` admit limit x N together
//! (seed 001's "separate bug"). Windows follow the caller's clock like the naive window's.

use super::{Decision, LimitSpec};

/// One process's own counter of the current window.
#[derive(Debug, Clone)]
pub struct InMemoryWindow {
    spec: LimitSpec,
    window: u64,
    count: u64,
}

impl InMemoryWindow {
    /// A window counter enforcing `spec.capacity` per `spec.window_ms`, windows starting at
    /// `spec.window_origin_ms`.
    pub fn new(spec: LimitSpec) -> Self {
        InMemoryWindow {
            spec,
            window: 0,
            count: 0,
        }
    }

    /// Decides one request at `now_ms` (Unix ms); no round trip, so none is counted.
    pub fn check(&mut self, now_ms: u64) -> Decision {
        let index = now_ms.saturating_sub(self.spec.window_origin_ms) / self.spec.window_ms.max(1);
        if index != self.window {
            (self.window, self.count) = (index, 0);
        }
        let allowed = self.count < self.spec.capacity;
        self.count += u64::from(allowed);
        let retry_ms = match allowed {
            true => 0,
            false => self.spec.ms_to_window_end(now_ms) as i64,
        };
        let remaining = self.spec.capacity.saturating_sub(self.count) as i64;
        Decision::settled(allowed, remaining, retry_ms, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_the_limit_per_window_and_starts_again_in_the_next() {
        let spec = LimitSpec {
            capacity: 3,
            window_origin_ms: 500,
            ..LimitSpec::default()
        };
        let mut w = InMemoryWindow::new(spec);
        let admitted = |w: &mut InMemoryWindow, at: u64, n: usize| {
            (0..n).filter(|_| w.check(at).allowed).count()
        };
        assert_eq!(admitted(&mut w, 600, 5), 3);
        assert_eq!(w.check(1499).retry_ms, 1);
        assert_eq!(admitted(&mut w, 1500, 5), 3);
        assert_eq!(admitted(&mut w, 2499, 1), 0);
    }
}
