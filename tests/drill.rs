//! The drill engine (load/drill) against a real redis-server: every scheduled request is sent and
//! recorded once with its intended start, a fault fires at its instant on the schedule's clock
//! (beside the request planned for the same instant) and its effect is seen by exactly the
//! requests after it, closed-loop clients keep their pace and their stop. No fixed times: every
//! bound comes from the run's own records.

use crate::common;

use ratelab::load::drill::{Closed, Drill, Schedule, Stop, When};
use ratelab::load::LoadError;
use redis::aio::MultiplexedConnection;
use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

async fn connect(server: &ratelab::server::RedisServer) -> MultiplexedConnection {
    let client = redis::Client::open(server.url()).unwrap();
    client.get_multiplexed_async_connection().await.unwrap()
}

/// 400 open-loop arrivals over 2 s, one of them at the fault's instant; the fault flips a key
/// the requests read and count.
#[test]
fn open_loop_records_every_request_once_and_the_fault_lands_on_the_schedule() {
    let server = common::start_server();
    let rt = runtime();
    let fault_at = Duration::from_millis(700);
    let mut starts: Vec<u64> = (0..400).map(|i| i * 5_000_000 + 1_234_567).collect();
    starts.push(fault_at.as_nanos() as u64);
    starts.sort_unstable();
    let (ran, count) = rt.block_on(async {
        let mut admin = connect(&server).await;
        redis::cmd("SET")
            .arg("drill:phase")
            .arg("before")
            .query_async::<()>(&mut admin)
            .await
            .unwrap();
        let con = connect(&server).await;
        let origin = Instant::now() + Duration::from_millis(100);
        let mut flip = admin.clone();
        let ran = Drill::<LoadError>::new(origin, Schedule::open(starts.clone()))
            .fault(When::At(fault_at), "flip", || async move {
                redis::cmd("SET")
                    .arg("drill:phase")
                    .arg("after")
                    .query_async::<()>(&mut flip)
                    .await?;
                Ok(())
            })
            .run(move |_| {
                let mut con = con.clone();
                async move {
                    let (phase, _): (String, u64) = redis::pipe()
                        .get("drill:phase")
                        .incr("drill:count", 1)
                        .query_async(&mut con)
                        .await
                        .unwrap();
                    phase
                }
            })
            .await
            .unwrap();
        let count: u64 = redis::cmd("GET")
            .arg("drill:count")
            .query_async(&mut admin)
            .await
            .unwrap();
        (ran, count)
    });
    // Every scheduled request once, in order, with its intended start; none before it.
    assert_eq!(ran.scheduled, starts.len() as u64);
    let intended: Vec<u64> = ran.records.iter().map(|r| r.intended_ns).collect();
    assert_eq!(intended, starts);
    let seqs: Vec<u64> = ran.records.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, (0..starts.len() as u64).collect::<Vec<_>>());
    assert!(ran
        .records
        .iter()
        .all(|r| r.intended_ns <= r.start_ns && r.start_ns <= r.end_ns));
    assert_eq!(
        count,
        starts.len() as u64,
        "the server counted every request once"
    );
    // The fault: never early; woken with the request planned for its instant, so it started
    // before that request ended and that request started before the fault returned.
    let flip = ran.fault("flip").unwrap();
    assert_eq!(flip.planned_ns, fault_at.as_nanos() as u64);
    assert!(flip.started_ns >= flip.planned_ns, "{flip:?}");
    let beside = (ran.records.iter())
        .find(|r| r.intended_ns == flip.planned_ns)
        .unwrap();
    assert!(
        flip.started_ns <= beside.end_ns,
        "{flip:?} after {beside:?} ended"
    );
    assert!(
        beside.start_ns <= flip.done_ns,
        "{beside:?} started after {flip:?}"
    );
    // Its effect on the same clock: seen by every request sent after it, by none that ended before.
    for r in &ran.records {
        if r.start_ns > flip.done_ns {
            assert_eq!(r.out, "after", "{r:?} began after the flip {flip:?}");
        }
        if r.end_ns < flip.started_ns {
            assert_eq!(r.out, "before", "{r:?} ended before the flip {flip:?}");
        }
    }
    let spans = ran.spans(ran.end_ns);
    assert_eq!((spans[0].fault, spans[0].end_ns), (None, flip.started_ns));
    assert_eq!(
        (spans[1].fault, spans[1].start_ns),
        (Some("flip"), flip.started_ns)
    );
}

/// Three clients paced by 20 ms for 15 requests each, against the server; then a closed loop
/// stopped by its own requests after the server counted 7.
#[test]
fn closed_loop_clients_keep_their_pace_and_stop() {
    let server = common::start_server();
    let rt = runtime();
    let pace = Duration::from_millis(20);
    let (paced, stopped) = rt.block_on(async {
        let con = connect(&server).await;
        let schedule = Schedule::Closed(Closed {
            clients: 3,
            pace: Some(pace),
            stop: Stop::Requests(15),
        });
        let counting = con.clone();
        let paced = Drill::<LoadError>::new(Instant::now(), schedule)
            .run(move |_| {
                let mut con = counting.clone();
                async move {
                    redis::cmd("INCR")
                        .arg("drill:paced")
                        .query_async::<u64>(&mut con)
                        .await
                        .unwrap()
                }
            })
            .await
            .unwrap();
        let schedule = Schedule::Closed(Closed {
            clients: 1,
            pace: None,
            stop: Stop::At(Duration::from_secs(3600)),
        });
        let drill = Drill::<LoadError>::new(Instant::now(), schedule);
        let stopper = drill.stopper();
        let stopped = drill
            .run(move |_| {
                let (mut con, stopper) = (con.clone(), stopper.clone());
                async move {
                    let n: u64 = redis::cmd("INCR")
                        .arg("drill:stop")
                        .query_async(&mut con)
                        .await
                        .unwrap();
                    if n == 7 {
                        stopper.stop();
                    }
                    n
                }
            })
            .await
            .unwrap();
        (paced, stopped)
    });
    assert_eq!(paced.records.len(), 45);
    let mut answers: Vec<u64> = paced.records.iter().map(|r| r.out).collect();
    answers.sort_unstable();
    assert_eq!(
        answers,
        (1..=45).collect::<Vec<_>>(),
        "the server saw each request once"
    );
    for client in 0..3 {
        let mine: Vec<_> = paced
            .records
            .iter()
            .filter(|r| r.client == client)
            .collect();
        assert_eq!(
            mine.iter().map(|r| r.seq).collect::<Vec<_>>(),
            (0..15).collect::<Vec<_>>()
        );
        for w in mine.windows(2) {
            // The next intended start is a pace after the previous one, or after its real start
            // when that was late; never sooner, and never before the previous request ended.
            let step = w[1].intended_ns - w[0].intended_ns;
            assert!(step >= pace.as_nanos() as u64, "{:?} then {:?}", w[0], w[1]);
            assert!(w[1].start_ns >= w[0].end_ns, "one request at a time: {w:?}");
            assert!(
                w[1].intended_ns <= (w[0].intended_ns + pace.as_nanos() as u64).max(w[0].start_ns)
            );
        }
    }
    // Stopped by its 7th request: no 8th started.
    assert_eq!(
        stopped.records.iter().map(|r| r.out).collect::<Vec<_>>(),
        (1..=7).collect::<Vec<_>>()
    );
}

/// A closed loop stops at its instant, a fault planned after the previous one is counted from
/// that one's real start, and a failing fault ends the drill with its error.
#[test]
fn stop_at_an_instant_after_previous_and_a_failing_fault() {
    let rt = runtime();
    let calls = Rc::new(Cell::new(0u32));
    let ran = rt.block_on(async {
        let schedule = Schedule::Closed(Closed {
            clients: 2,
            pace: Some(Duration::from_millis(10)),
            stop: Stop::At(Duration::from_millis(200)),
        });
        let counted = Rc::clone(&calls);
        Drill::<LoadError>::new(Instant::now(), schedule)
            .fault(When::At(Duration::from_millis(50)), "first", || async {
                Ok(())
            })
            .fault(
                When::AfterPrevious(Duration::from_millis(30)),
                "second",
                || async { Ok(()) },
            )
            .run(move |_| {
                counted.set(counted.get() + 1);
                tokio::time::sleep(Duration::from_millis(1))
            })
            .await
            .unwrap()
    });
    assert_eq!(ran.records.len() as u32, calls.get());
    assert!(
        ran.records.iter().all(|r| r.intended_ns < 200_000_000),
        "none meant after the stop"
    );
    let (first, second) = (ran.fault("first").unwrap(), ran.fault("second").unwrap());
    assert_eq!(second.planned_ns, first.started_ns + 30_000_000);
    assert!(first.started_ns >= first.planned_ns && second.started_ns >= second.planned_ns);

    let failed = rt.block_on(async {
        Drill::<LoadError>::new(Instant::now(), Schedule::open(vec![0, 1_000_000]))
            .fault(When::At(Duration::ZERO), "fails", || async {
                Err(LoadError::Protocol("the fault failed".into()))
            })
            .run(|_| async {})
            .await
    });
    assert!(matches!(failed, Err(LoadError::Protocol(m)) if m == "the fault failed"));
}
