//! One measured load run: workers connected first, the server's counters sampled right before
//! `go` and right after the last tally, and the workers' own CPU from their rusage.

use super::session::fail_on_errors;
use super::{ExperimentError, Phase};
use crate::load::{CheckTally, ClosedLoop, Fleet};
use crate::server::{ServerCost, ServerSample, Target};

/// What one run did and what it cost the server and the client.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Decisions of all workers, merged.
    pub tally: CheckTally,
    /// Server-side cost between go and the last result.
    pub server: ServerCost,
    /// CPU seconds (user + sys) the worker processes used.
    pub client_cpu_s: f64,
}

impl Measured {
    /// Decisions per second of wall time (the slowest worker's).
    pub fn decisions_per_s(&self) -> f64 {
        let secs = self.tally.elapsed_ns as f64 / 1e9;
        if secs > 0.0 {
            (self.tally.admitted + self.tally.denied) as f64 / secs
        } else {
            0.0
        }
    }

    /// Redis main-thread CPU µs per decision (errors excluded).
    pub fn cpu_us_per_decision(&self) -> f64 {
        let decisions = self.tally.admitted + self.tally.denied;
        if decisions > 0 {
            self.server.main_thread_cpu_us / decisions as f64
        } else {
            0.0
        }
    }
}

/// CPU seconds of reaped children so far (RUSAGE_CHILDREN): differenced around a run.
pub fn children_cpu_s() -> f64 {
    // SAFETY: rusage is plain data, filled by getrusage.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Runs `plan` once, sampling the server around exactly the measured window.
pub fn measure(
    target: &Target,
    plan: &ClosedLoop,
    what: &dyn Fn() -> String,
) -> Result<Measured, ExperimentError> {
    let mut fleet = Fleet::spawn(plan).phase(what)?;
    let cpu_before = children_cpu_s();
    let before = ServerSample::take(target).phase(what)?;
    fleet.go().phase(what)?;
    let tally = fleet.collect().phase(what)?;
    let after = ServerSample::take(target).phase(what)?;
    let client_cpu_s = children_cpu_s() - cpu_before;
    fail_on_errors(target, &tally).phase(what)?;
    Ok(Measured {
        tally,
        server: before.cost_until(&after),
        client_cpu_s,
    })
}
