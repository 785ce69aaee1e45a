//! failover's arithmetic on one trial's raw checks: whole windows before and after the switch
//! per key (overshoot against what the limit allows there), and bins around the switch.
//! Windows are aligned to the Unix clock, as the fixed window names its counters, so a window
//! is the same span for the limiter and for the count.

use crate::load::drill::Bins;

/// What became of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Admitted,
    Denied,
    Error,
}

impl Answer {
    /// A decision's answer.
    pub fn of(allowed: bool) -> Answer {
        match allowed {
            true => Answer::Admitted,
            false => Answer::Denied,
        }
    }
}

/// One check, timed in ms on the Unix clock (from the monotonic clock and one reading of both).
#[derive(Debug, Clone, Copy)]
pub struct Check {
    pub key: u32,
    pub sent_unix_ms: f64,
    pub answer: Answer,
    pub noscript: bool,
    /// Sent after the switch (to the promoted replica).
    pub after_switch: bool,
}

/// The windows a trial is judged over.
#[derive(Debug, Clone, Copy)]
pub struct Frame {
    pub keys: u64,
    pub burst: u64,
    pub window_ms: u64,
    pub pre_windows: u64,
    pub post_windows: u64,
    /// The switch on the Unix clock, ms.
    pub switch_unix_ms: f64,
}

impl Frame {
    /// Start of the window that holds the switch, Unix ms.
    pub fn switch_window(&self) -> f64 {
        let w = self.window_ms as f64;
        (self.switch_unix_ms / w).floor() * w
    }

    /// Where the switch falls within its window, 0..1.
    pub fn phase(&self) -> f64 {
        (self.switch_unix_ms - self.switch_window()) / self.window_ms as f64
    }

    fn pre(&self) -> (f64, f64) {
        let start = self.switch_window();
        (start - (self.pre_windows * self.window_ms) as f64, start)
    }

    fn post(&self) -> (f64, f64) {
        let start = self.switch_window();
        (start, start + (self.post_windows * self.window_ms) as f64)
    }

    /// Unix ms of the first and past-the-last instant any count reads.
    pub fn span(&self) -> (f64, f64) {
        (self.pre().0, self.post().1)
    }
}

/// Per key: (sent after, admitted before, admitted after).
pub fn per_key(frame: &Frame, checks: &[Check]) -> Vec<(u64, u64, u64)> {
    let mut counts = vec![(0u64, 0u64, 0u64); frame.keys as usize];
    let within = |(lo, hi): (f64, f64), t: f64| t >= lo && t < hi;
    for c in checks {
        let Some(slot) = counts.get_mut(c.key as usize) else {
            continue;
        };
        let admitted = u64::from(c.answer == Answer::Admitted);
        if within(frame.pre(), c.sent_unix_ms) {
            slot.1 += admitted;
        } else if within(frame.post(), c.sent_unix_ms) {
            slot.0 += 1;
            slot.2 += admitted;
        }
    }
    counts
}

/// One bin's counts; `t_ms` from the switch.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Bin {
    pub t_ms: f64,
    pub sent: u64,
    pub admitted: u64,
    pub denied: u64,
    pub errors: u64,
    pub noscript: u64,
}

/// Bins of `bin_ms` over the frame's span, all keys summed.
pub fn bins(frame: &Frame, checks: &[Check], bin_ms: u64) -> Vec<Bin> {
    let (lo, hi) = frame.span();
    // On a clock starting at the span's start, in ns: the Unix clock's ms would lose the ns.
    let ns = |unix_ms: f64| ((unix_ms - lo) * 1e6).floor() as i64;
    let bins = Bins::spanning(0, ns(hi), bin_ms.max(1) * 1_000_000);
    let mut out: Vec<Bin> = (0..bins.count)
        .map(|i| Bin {
            t_ms: lo + bins.start_of(i) as f64 / 1e6 - frame.switch_unix_ms,
            ..Bin::default()
        })
        .collect();
    for (b, inside) in out
        .iter_mut()
        .zip(bins.sort(checks, |c| ns(c.sent_unix_ms)))
    {
        for c in inside {
            b.sent += 1;
            match c.answer {
                Answer::Admitted => b.admitted += 1,
                Answer::Denied => b.denied += 1,
                Answer::Error => b.errors += 1,
            }
            b.noscript += u64::from(c.noscript);
        }
    }
    out
}

/// What one client met from the failover's start to its move (rows::ClientRow's measures).
#[derive(Debug, Clone, Copy)]
pub struct ClientReading {
    pub client: u64,
    pub promoted_ms: f64,
    /// None: the client never decided on the promoted replica.
    pub rediscovered_ms: Option<f64>,
    pub asks: u64,
    pub checks_between: u64,
    pub failed: u64,
    pub readonly: u64,
    pub unavailable_ms: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(key: u32, t: f64, answer: Answer) -> Check {
        Check {
            key,
            sent_unix_ms: t,
            answer,
            noscript: false,
            after_switch: t >= 10_250.0,
        }
    }

    fn frame() -> Frame {
        Frame {
            keys: 2,
            burst: 4,
            window_ms: 1000,
            pre_windows: 2,
            post_windows: 3,
            switch_unix_ms: 10_750.0,
        }
    }

    #[test]
    fn windows_are_whole_and_aligned_to_the_switchs_window() {
        let f = frame();
        assert_eq!(f.switch_window(), 10_000.0);
        assert!((f.phase() - 0.75).abs() < 1e-9);
        assert_eq!(f.span(), (8_000.0, 13_000.0));
    }

    #[test]
    fn counts_split_at_the_switchs_window_not_at_the_switch() {
        let checks = [
            check(0, 7_999.0, Answer::Admitted),
            check(0, 8_000.0, Answer::Admitted),
            check(0, 9_999.0, Answer::Admitted),
            check(0, 10_000.0, Answer::Admitted),
            check(0, 10_800.0, Answer::Denied),
            check(1, 12_999.0, Answer::Admitted),
            check(1, 13_000.0, Answer::Admitted),
            check(7, 10_000.0, Answer::Admitted),
        ];
        assert_eq!(per_key(&frame(), &checks), [(2, 2, 1), (1, 0, 1)]);
        let b = bins(&frame(), &checks, 500);
        assert_eq!(b.len(), 10);
        assert_eq!(b[0].t_ms, -2_750.0);
        assert_eq!((b[0].sent, b[3].admitted), (1, 1));
        assert_eq!((b[4].admitted, b[5].denied), (2, 1));
    }
}
