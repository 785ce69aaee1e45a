//! A µs-precise async sleep for the open-loop scheduler: a timerfd registered with tokio's
//! reactor. Tokio's own timers tick in whole ms, which would round every start to a tick and
//! bunch arrivals into the same ms (inflating exactly the same-ms collisions tsmember measures).
//! Spinning until a start is precise too, but a process that never sleeps is the first the kernel
//! preempts on a busy machine, and a preempted generator starts late; one that sleeps until each
//! start is woken promptly.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// Timer slack asked of the kernel, ns: the default (50 µs) would let it defer our wake-ups.
const SLACK_NS: libc::c_ulong = 1_000;

/// One timer; the scheduler re-arms it before each start.
pub struct PreciseTimer {
    fd: AsyncFd<OwnedFd>,
}

impl PreciseTimer {
    /// A monotonic timerfd on the current runtime's reactor (needs a runtime with IO enabled).
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscalls; the fd is checked before it is owned.
        let raw = unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, SLACK_NS);
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh fd nobody else owns.
        let owned = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: an OwnedFd stays open, and the same fd, for as long as the AsyncFd owns it.
        let fd = unsafe { AsyncFd::register_with_interest(owned, Interest::READABLE) }
            .map_err(|e| e.into_parts().1)?;
        Ok(PreciseTimer { fd })
    }

    /// Returns once `at` has passed; meanwhile the runtime serves other tasks and replies.
    pub async fn sleep_until(&self, at: Instant) -> io::Result<()> {
        let Some(ahead) = at.checked_duration_since(Instant::now()) else {
            return Ok(());
        };
        if ahead.is_zero() {
            return Ok(());
        }
        self.arm(ahead)?;
        loop {
            let mut ready = self.fd.readable().await?;
            let mut expirations = [0u8; 8];
            // SAFETY: reads 8 bytes into an 8-byte buffer from our own fd.
            let n = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    expirations.as_mut_ptr().cast(),
                    expirations.len(),
                )
            };
            if n == 8 {
                return Ok(());
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::WouldBlock {
                return Err(err);
            }
            ready.clear_ready();
        }
    }

    /// Sets the timer to fire once, `after` from now.
    fn arm(&self, after: Duration) -> io::Result<()> {
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                tv_nsec: after.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: valid fd and spec; the old value is not wanted.
        let rc =
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        match rc {
            0 => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How far past `at` the wake-up came (zero if it was early, which is asserted apart).
    fn overshoot(at: Instant) -> Duration {
        Instant::now().saturating_duration_since(at)
    }

    fn median(mut xs: Vec<Duration>) -> Duration {
        xs.sort();
        xs[xs.len() / 2]
    }

    /// Side by side on the same runtime and deadlines: tokio's sleep wakes on its next whole-ms
    /// tick, so its overshoot is spread over up to a ms; the timerfd wakes at the deadline itself,
    /// so its median overshoot must be below tokio's. Noise of the machine delays both alike.
    #[test]
    fn sleeps_until_the_deadline_and_not_far_past_it() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let timer = PreciseTimer::new().unwrap();
            let (mut ours, mut tokios) = (Vec::new(), Vec::new());
            // Deadlines 0.2-3.1 ms ahead in 173 µs steps: every phase against tokio's ms tick.
            for (i, us) in (200u64..3_100).step_by(173).enumerate() {
                // Alternate who goes first, so neither always runs just after a wake-up.
                for ours_now in [i % 2 == 0, i % 2 == 1] {
                    let at = Instant::now() + Duration::from_micros(us);
                    if ours_now {
                        timer.sleep_until(at).await.unwrap();
                        assert!(Instant::now() >= at, "woke before the deadline");
                        ours.push(overshoot(at));
                    } else {
                        tokio::time::sleep_until(at.into()).await;
                        tokios.push(overshoot(at));
                    }
                }
            }
            let (ours, tokios) = (median(ours), median(tokios));
            assert!(
                ours < tokios,
                "median overshoot {ours:?} is not below tokio's {tokios:?}"
            );
            // A deadline already passed returns at once (no timer armed, nothing to wait for).
            let past = Instant::now() - Duration::from_millis(5);
            timer.sleep_until(past).await.unwrap();
            timer.sleep_until(Instant::now()).await.unwrap();
        });
    }
}
