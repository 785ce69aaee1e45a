//! Running a drill: the requests' issuers as local tasks (open loop: one for the schedule;
//! closed loop: one per client), the plan inline beside them, then every request awaited.

use super::{Arrival, Call, Closed, Drill, Fired, Ran, Record, Schedule, Stop, Stopper, When};
use crate::load::timer::PreciseTimer;
use crate::load::LoadError;
use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::time::{Duration, Instant};
use tokio::task::{JoinError, JoinSet, LocalSet};

type Records<O> = Rc<RefCell<Vec<Record<O>>>>;

/// What the issuers share.
struct Issue<F, O> {
    origin: Instant,
    precise: bool,
    request: F,
    records: Records<O>,
    stopper: Stopper,
}

impl<'a, E: 'a> Drill<'a, E> {
    /// Runs the drill: `request` is called for every request the schedule starts (at its start:
    /// work done before its first `.await` runs in schedule order), the plan's faults fire at
    /// their instants meanwhile; returns once every started request has ended. A fault's error
    /// ends the drill at once (its requests are dropped with it); a request task that panicked is
    /// a `LoadError`.
    pub async fn run<O, F, Fut>(self, request: F) -> Result<Ran<O>, E>
    where
        O: 'static,
        F: Fn(Call) -> Fut + 'static,
        Fut: Future<Output = O> + 'static,
        E: From<LoadError>,
    {
        LocalSet::new().run_until(self.run_local(request)).await
    }

    async fn run_local<O, F, Fut>(self, request: F) -> Result<Ran<O>, E>
    where
        O: 'static,
        F: Fn(Call) -> Fut + 'static,
        Fut: Future<Output = O> + 'static,
        E: From<LoadError>,
    {
        let issue = Rc::new(Issue {
            origin: self.origin,
            precise: self.precise,
            request,
            records: Rc::default(),
            stopper: self.stopper.clone(),
        });
        let (scheduled, issuers) = match self.schedule {
            Schedule::Open(arrivals) => {
                let n = arrivals.len() as u64;
                let one = tokio::task::spawn_local(open(Rc::clone(&issue), arrivals));
                (n, vec![one])
            }
            Schedule::Closed(closed) => {
                let clients = (0..closed.clients)
                    .map(|c| tokio::task::spawn_local(client(Rc::clone(&issue), closed, c)))
                    .collect();
                (0, clients)
            }
        };
        let faults = fire(self.origin, self.plan).await?;
        if let Some(hold) = self.hold {
            tokio::time::sleep_until((self.origin + hold).into()).await;
        }
        for issuer in issuers {
            issuer.await.map_err(|e| task_failed(0, e))??;
        }
        let mut records = std::mem::take(&mut *issue.records.borrow_mut());
        records.sort_by_key(|r| (r.intended_ns, r.client, r.seq));
        Ok(Ran {
            origin: self.origin,
            records,
            faults,
            scheduled,
            end_ns: after(self.origin, Instant::now()),
        })
    }
}

/// The plan, in order: each fault at its instant (at once if that has passed).
async fn fire<'a, E>(origin: Instant, plan: Vec<super::Fault<'a, E>>) -> Result<Vec<Fired>, E> {
    let mut fired = Vec::with_capacity(plan.len());
    let mut previous = origin;
    for fault in plan {
        let planned = match fault.when {
            When::At(d) => origin + d,
            When::AfterPrevious(d) => previous + d,
        };
        tokio::time::sleep_until(planned.into()).await;
        let started = Instant::now();
        (fault.act)().await?;
        previous = started;
        fired.push(Fired {
            name: fault.name,
            planned_ns: after(origin, planned),
            started_ns: after(origin, started),
            done_ns: after(origin, Instant::now()),
        });
    }
    Ok(fired)
}

/// The open loop: every arrival at its instant, each request a task of its own.
async fn open<O, F, Fut>(issue: Rc<Issue<F, O>>, arrivals: Vec<Arrival>) -> Result<(), LoadError>
where
    O: 'static,
    F: Fn(Call) -> Fut + 'static,
    Fut: Future<Output = O> + 'static,
{
    let mut tasks = JoinSet::new();
    let timer = Timer::new(issue.precise)?;
    for (seq, arrival) in arrivals.into_iter().enumerate() {
        let intended = issue.origin + Duration::from_nanos(arrival.at_ns);
        timer.sleep_until(intended).await?;
        if issue.stopper.stopped() {
            break;
        }
        let call = Call {
            client: 0,
            seq: seq as u64,
            tag: arrival.tag,
            intended_ns: arrival.at_ns,
        };
        let request = (issue.request)(call);
        let records = Rc::clone(&issue.records);
        let origin = issue.origin;
        tasks.spawn_local(async move {
            let start = Instant::now();
            let out = request.await;
            records.borrow_mut().push(record(origin, call, start, out));
        });
        while let Some(done) = tasks.try_join_next() {
            done.map_err(|e| task_failed(seq, e))?;
        }
    }
    while let Some(done) = tasks.join_next().await {
        done.map_err(|e| task_failed(0, e))?;
    }
    Ok(())
}

/// One closed-loop client: one request at a time until its stop or the drill's stopper.
async fn client<O, F, Fut>(
    issue: Rc<Issue<F, O>>,
    closed: Closed,
    index: usize,
) -> Result<(), LoadError>
where
    F: Fn(Call) -> Fut,
    Fut: Future<Output = O>,
{
    let timer = Timer::new(issue.precise)?;
    let mut next = issue.origin.max(Instant::now());
    for seq in 0.. {
        let intended = match closed.pace {
            Some(_) => next,
            None => next.max(Instant::now()),
        };
        let done = match closed.stop {
            Stop::Requests(n) => seq >= n,
            Stop::At(d) => intended >= issue.origin + d,
        };
        if done {
            break;
        }
        timer.sleep_until(intended).await?;
        if issue.stopper.stopped() {
            break;
        }
        // No catching up after a slow request: the next one an interval after this one started,
        // or as soon as it ends.
        next = match closed.pace {
            Some(pace) => (next + pace).max(Instant::now()),
            None => intended,
        };
        let call = Call {
            client: index,
            seq,
            tag: 0,
            intended_ns: after(issue.origin, intended),
        };
        let start = Instant::now();
        let out = (issue.request)(call).await;
        let r = record(issue.origin, call, start, out);
        issue.records.borrow_mut().push(r);
    }
    Ok(())
}

/// How an issuer waits for a start.
enum Timer {
    Tokio,
    Precise(PreciseTimer),
}

impl Timer {
    fn new(precise: bool) -> Result<Timer, LoadError> {
        Ok(match precise {
            true => Timer::Precise(PreciseTimer::new()?),
            false => Timer::Tokio,
        })
    }

    async fn sleep_until(&self, at: Instant) -> Result<(), LoadError> {
        match self {
            Timer::Tokio => tokio::time::sleep_until(at.into()).await,
            Timer::Precise(timer) => timer.sleep_until(at).await?,
        }
        Ok(())
    }
}

fn record<O>(origin: Instant, call: Call, start: Instant, out: O) -> Record<O> {
    Record {
        client: call.client,
        seq: call.seq,
        tag: call.tag,
        intended_ns: call.intended_ns,
        start_ns: after(origin, start),
        end_ns: after(origin, Instant::now()),
        out,
    }
}

/// ns from `origin` to `at` (0 when `at` is earlier).
fn after(origin: Instant, at: Instant) -> u64 {
    at.saturating_duration_since(origin).as_nanos() as u64
}

fn task_failed(index: usize, e: JoinError) -> LoadError {
    LoadError::Worker {
        index,
        detail: format!("a drill's request task failed: {e}"),
    }
}
