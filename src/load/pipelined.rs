//! The lean closed loop: one task per connection sends `in_flight` requests together
//! (pipelining, redis-benchmark's `-P`), each a raw RESP command encoded into a reused buffer
//! ([`Limiter::encode`](crate::limiter::Limiter::encode)), and the next batch in one write once
//! all are answered; replies are parsed in place as they arrive: no channel, no oneshot, no
//! `redis::Value`, no allocation per request. It serves strategies whose decision is one
//! command, or MULTI INCR PEXPIRE EXEC (decided on EXEC's reply), on a plain TCP URL; everything
//! else keeps the redis-rs path (`closed`).
//!
//! Why: with redis-rs's multiplexed connection a check crossed a channel to a driver task and
//! back, and the client, not Redis, was the limit on GET (see issue 17's profile in
//! `src/experiments/calibrate/mod.rs`).

use super::closed::Shared;
use super::{CheckTally, LoadError, WorkerSpec};
use crate::limiter::wire::{self, Reply};
use crate::limiter::{library, Decider, Limiter};
use std::collections::VecDeque;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Where and how the lean client connects, read from the worker's URL.
struct Endpoint {
    host: String,
    port: u16,
    username: Option<String>,
    password: Option<String>,
    db: i64,
}

/// The endpoint of `url` if the lean client can serve it: plain TCP (TLS and Unix sockets keep
/// redis-rs).
fn endpoint(url: &str) -> Option<Endpoint> {
    let info = redis::Client::open(url).ok()?.get_connection_info().clone();
    let redis::ConnectionAddr::Tcp(host, port) = info.addr().clone() else {
        return None;
    };
    let settings = info.redis_settings();
    Some(Endpoint {
        host,
        port,
        username: settings.username().map(str::to_string),
        password: settings.password().map(str::to_string),
        db: settings.db(),
    })
}

/// Whether this worker runs on the lean client: asked for, a decision's commands known before
/// its first reply (one command, or MULTI INCR PEXPIRE EXEC), one request per check (its raw
/// encodings take one), plain TCP.
/// The parent and the worker decide alike, so rows can say which client made them.
pub fn serves(spec: &WorkerSpec) -> bool {
    spec.pipelined
        && spec.cost == 1
        && !spec.strategy.needs_own_connection()
        && Limiter::new(spec.strategy, spec.limit)
            .pipelined_replies()
            .is_some()
        && endpoint(&spec.url).is_some()
}

/// Opens the worker's connections, authenticated, on its database, with the script loaded
/// (before the start signal: neither connecting nor loading is measured).
pub async fn connect(spec: &WorkerSpec, decider: &Decider) -> Result<Vec<TcpStream>, LoadError> {
    let at = endpoint(&spec.url)
        .ok_or_else(|| LoadError::Protocol(format!("the lean client cannot serve {}", spec.url)))?;
    let limiter = wire_limiter(decider)?;
    let connect_timeout = Duration::from_millis(spec.timeouts.connect_ms);
    let mut streams = Vec::with_capacity(spec.connections.max(1));
    for _ in 0..spec.connections.max(1) {
        let connecting = TcpStream::connect((at.host.as_str(), at.port));
        let mut stream = tokio::time::timeout(connect_timeout, connecting)
            .await
            .map_err(|_| {
                LoadError::Protocol(format!("connecting timed out after {connect_timeout:?}"))
            })??;
        stream.set_nodelay(true)?;
        let mut setup: Vec<Vec<&[u8]>> = Vec::new();
        match (&at.username, &at.password) {
            (Some(user), Some(pass)) => setup.push(vec![b"AUTH", user.as_bytes(), pass.as_bytes()]),
            (None, Some(pass)) => setup.push(vec![b"AUTH", pass.as_bytes()]),
            _ => {}
        }
        let db = at.db.to_string();
        if at.db != 0 {
            setup.push(vec![b"SELECT", db.as_bytes()]);
        }
        // The fallback on NOSCRIPT is not on this path: the script (or library) is loaded here.
        let library = library();
        if let Some((source, _)) = limiter.script() {
            match limiter.invocation().uses_function() {
                true => setup.push(vec![b"FUNCTION", b"LOAD", b"REPLACE", library.as_bytes()]),
                false => setup.push(vec![b"SCRIPT", b"LOAD", source.as_bytes()]),
            }
        }
        for command in setup {
            ask(&mut stream, &command, connect_timeout).await?;
        }
        streams.push(stream);
    }
    Ok(streams)
}

/// Sends one set-up command and waits for its reply; an error reply is the worker's error.
async fn ask(stream: &mut TcpStream, args: &[&[u8]], timeout: Duration) -> Result<(), LoadError> {
    let mut out = Vec::new();
    wire::command(args, &mut out);
    stream.write_all(&out).await?;
    let mut buf = vec![0u8; 4096];
    let mut filled = 0;
    loop {
        if let Some((reply, _)) =
            wire::parse(&buf[..filled]).map_err(|e| LoadError::Protocol(e.to_string()))?
        {
            return match reply {
                Reply::Error(e) => Err(LoadError::Protocol(format!(
                    "{} refused: {}",
                    String::from_utf8_lossy(args[0]),
                    String::from_utf8_lossy(e)
                ))),
                _ => Ok(()),
            };
        }
        if filled == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        let n = tokio::time::timeout(timeout, stream.read(&mut buf[filled..]))
            .await
            .map_err(|_| LoadError::Protocol(format!("no reply within {timeout:?}")))??;
        if n == 0 {
            return Err(LoadError::Protocol("server closed the connection".into()));
        }
        filled += n;
    }
}

/// The Redis strategy a decider runs, which this client encodes raw; any other kind is an error.
fn wire_limiter(decider: &Decider) -> Result<&Limiter, LoadError> {
    decider.limiter().ok_or_else(|| {
        LoadError::Protocol(format!(
            "the lean client cannot run {decider:?}: not a Redis strategy"
        ))
    })
}

/// Runs the worker's checks by `decider` on `streams` (from [`connect`]) from the moment it is
/// called; needs a `LocalSet`.
pub async fn run(
    spec: &WorkerSpec,
    decider: Decider,
    streams: Vec<TcpStream>,
) -> Result<CheckTally, LoadError> {
    wire_limiter(&decider)?;
    let shared = std::rc::Rc::new(Shared::new(spec, decider)?);
    let depth = spec.in_flight.max(1);
    let response = Duration::from_millis(spec.timeouts.response_ms);
    let started = Instant::now();
    let tasks: Vec<_> = streams
        .into_iter()
        .map(|stream| {
            let shared = shared.clone();
            tokio::task::spawn_local(async move { drive(&shared, stream, depth, response).await })
        })
        .collect();
    for task in tasks {
        let counts = task
            .await
            .unwrap_or_else(|e| Counts::failed(format!("task failed: {e}")));
        counts.add_to(&mut shared.tally.borrow_mut());
    }
    Ok(shared.finish(started))
}

/// One connection's decisions, added to the worker's tally when it is done.
#[derive(Default)]
struct Counts {
    admitted: u64,
    denied: u64,
    errors: u64,
    first_error: Option<String>,
}

impl Counts {
    fn failed(why: String) -> Self {
        Counts {
            errors: 1,
            first_error: Some(why),
            ..Counts::default()
        }
    }

    fn error(&mut self, n: u64, why: impl FnOnce() -> String) {
        self.errors += n;
        if self.first_error.is_none() {
            self.first_error = Some(why());
        }
    }

    fn add_to(self, t: &mut CheckTally) {
        t.admitted += self.admitted;
        t.denied += self.denied;
        t.errors += self.errors;
        // One command per decision: one round trip each.
        t.redis_calls += self.admitted + self.denied;
        if t.first_error.is_none() {
            t.first_error = self.first_error;
        }
    }
}

/// Keeps `depth` requests in flight on `stream` until the stop rule says done, then drains.
async fn drive(shared: &Shared, mut stream: TcpStream, depth: usize, response: Duration) -> Counts {
    let limiter = match wire_limiter(&shared.decider) {
        Ok(limiter) => limiter,
        Err(e) => return Counts::failed(e.to_string()),
    };
    let mut counts = Counts::default();
    let mut out = Vec::with_capacity(depth * 128);
    let mut scratch = Vec::with_capacity(128);
    let mut key = String::with_capacity(64);
    let mut buf = vec![0u8; 64 * 1024];
    let (mut filled, mut in_flight) = (0usize, 0usize);
    let mut sent_at: VecDeque<Instant> = VecDeque::with_capacity(depth);
    let timed = shared.histogram.is_some();
    // Replies per decision, and how many of the current decision's have been read: only the
    // last decides (MULTI's +OK and +QUEUED say nothing; a queued error aborts EXEC).
    let replies = limiter.pipelined_replies().unwrap_or(1);
    let mut part = 0;
    // Where only the key varies, its bytes around the key are copied rather than formatted anew
    // (the constant arguments' float and integer formatting was ~7% of the EVALSHA profile).
    let template = limiter.key_template();
    loop {
        // A connection sends `depth` requests together and the next `depth` once every one has
        // been answered, as redis-benchmark -P does: one write per batch. Refilling after every
        // read instead wrote a few requests at a time whenever Redis was the slower side (EVALSHA
        // at 16 in flight: more client CPU per op than redis-benchmark in the same run).
        let topping_up = match in_flight {
            0 => shared.stop.take_up_to(depth),
            _ => 0,
        };
        let now = timed.then(Instant::now);
        for _ in 0..topping_up {
            shared.write_key(&mut key);
            match &template {
                Some(template) => template.encode(&key, &mut out),
                None => {
                    if let Err(e) = limiter.encode(&key, &mut scratch, &mut out) {
                        counts.error(1, || e.to_string());
                        continue;
                    }
                }
            }
            in_flight += 1;
            sent_at.extend(now);
        }
        if !out.is_empty() {
            if let Err(e) = stream.write_all(&out).await {
                counts.error(in_flight as u64, || format!("sending: {e}"));
                return counts;
            }
            out.clear();
        }
        if in_flight == 0 {
            return counts;
        }
        if filled == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        let n = match tokio::time::timeout(response, stream.read(&mut buf[filled..])).await {
            Ok(Ok(0)) => Err("the server closed the connection".to_string()),
            Ok(Ok(n)) => Ok(n),
            Ok(Err(e)) => Err(format!("receiving: {e}")),
            Err(_) => Err(format!("no reply within {response:?}")),
        };
        match n {
            Ok(n) => filled += n,
            Err(why) => {
                counts.error(in_flight as u64, || why);
                return counts;
            }
        }
        let mut pos = 0;
        loop {
            let (reply, used) = match wire::parse(&buf[pos..filled]) {
                Ok(Some(parsed)) => parsed,
                Ok(None) => break,
                Err(e) => {
                    counts.error(in_flight as u64, || e.to_string());
                    return counts;
                }
            };
            pos += used;
            part += 1;
            if part < replies {
                continue;
            }
            part = 0;
            in_flight -= 1;
            if let (Some(h), Some(at)) = (&shared.histogram, sent_at.pop_front()) {
                // Out-of-range values (beyond 60 s) are clamped rather than lost.
                let took = at.elapsed().as_nanos() as u64;
                h.borrow_mut().saturating_record(took.max(1));
            }
            match limiter.decide_reply(&reply) {
                Ok(d) if d.allowed => counts.admitted += 1,
                Ok(_) => counts.denied += 1,
                Err(e) => counts.error(1, || e.to_string()),
            }
        }
        buf.copy_within(pos..filled, 0);
        filled -= pos;
    }
}
