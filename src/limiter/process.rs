//! A limiter process (`kind = "process"` in a manifest): a real library's adapter, run as a child
//! with its own Redis client, spoken to in newline-delimited JSON (examples/adapters/PROTOCOL.md).
//! ratelab writes a setup line, reads the adapter's handshake, then sends checks and reads their
//! answers, many in flight, in any order. Two threads carry the lines (a writer fed by a channel
//! and a reader that hands each answer to the check waiting for its id), so the adapter works with
//! any runtime and a stalled adapter never blocks one: a check waits at most its answer time.
//!
//! Anything but an answer (the adapter exits, writes garbage, answers an id not in flight, or
//! lets a check wait past its answer time, even one whose caller stopped waiting sooner) is a
//! [`LimiterError::Process`]: the run stops. An answer that carries an `error` is the library
//! failing to decide (its Redis client failed), a [`LimiterError::Redis`], which a store's policy
//! answers like any Redis failure.

use super::custom::ProcessCommand;
use super::{Attempt, Check, Decide, Decision, LimitSpec, LimiterError, Link};
use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// The protocol version this ratelab speaks.
pub const PROTOCOL: u64 = 1;

/// How long an adapter may take to say it is ready (connecting included).
const READY_WITHIN: Duration = Duration::from_secs(20);

/// How long an adapter has to exit once its stdin is closed.
const EXIT_WITHIN: Duration = Duration::from_secs(2);

/// Lines of the adapter's stderr kept to explain a failure.
const STDERR_LINES: usize = 12;

/// Where a limiter process talks to, and how long its checks may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reach {
    /// The run's server, credentials included.
    pub redis_url: String,
    /// The response timeout ratelab's own clients use in this run.
    pub timeout_ms: u64,
    /// `redis_url` is one node of a Redis Cluster: the adapter must use its library's cluster
    /// client, and say so in its handshake.
    pub cluster: bool,
    /// The primary is found through these Sentinels: the adapter must use its library's Sentinel
    /// client (which follows a failover by itself), and say so in its handshake.
    pub sentinel: Option<SentinelReach>,
}

/// Where a Sentinel-watched primary is found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SentinelReach {
    /// The name the Sentinels monitor the primary under.
    pub name: String,
    /// Each Sentinel's `host:port`.
    pub addresses: Vec<String>,
}

impl Reach {
    /// A standalone server at `redis_url`, its client's timeout `timeout_ms`.
    pub fn to(redis_url: &str, timeout_ms: u64) -> Reach {
        Reach {
            redis_url: redis_url.to_string(),
            timeout_ms,
            cluster: false,
            sentinel: None,
        }
    }

    /// How long ratelab waits for one answer: twice the client's own timeout, and two seconds
    /// (a library that retries once on its timeout still answers in time).
    pub fn answer_ms(&self) -> u64 {
        self.timeout_ms.saturating_mul(2).saturating_add(2_000)
    }
}

/// The setup line, the first thing an adapter reads.
#[derive(Debug, Serialize)]
struct Setup<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    protocol: u64,
    /// Without ratelab's own TLS parameters: the files are named below.
    redis_url: &'a str,
    /// The CA that signed the server's certificate (`rediss://` to a server whose CA is not the
    /// system's: ratelab's own, or the one `--tls-ca` named).
    #[serde(skip_serializing_if = "Option::is_none")]
    tls_ca: Option<&'a Path>,
    /// A client certificate and its key, for a server that asks for one.
    #[serde(skip_serializing_if = "Option::is_none")]
    tls_cert: Option<&'a Path>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tls_key: Option<&'a Path>,
    algorithm: &'static str,
    limit: u64,
    window_ms: u64,
    refill_per_s: f64,
    timeout_ms: u64,
    answer_ms: u64,
    /// Said only when true: adapters written before it never see it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    cluster: bool,
    /// Said only when the primary is found through Sentinels (`redis_url` is where it is now).
    #[serde(skip_serializing_if = "Option::is_none")]
    sentinel: Option<&'a SentinelReach>,
}

/// What an adapter says it is, in its handshake.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Handshake {
    /// The adapter's own name.
    #[serde(default)]
    pub adapter: String,
    /// The library it runs, and its version as installed.
    #[serde(default)]
    pub library: String,
    #[serde(default)]
    pub version: String,
    /// Its Redis client and version.
    #[serde(default)]
    pub client: String,
    /// It connected its library's cluster client, as a setup naming a cluster asks.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cluster: bool,
    /// It connected its library's Sentinel client, as a setup naming Sentinels asks.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sentinel: bool,
    /// Whose clock decides its windows and entries: `caller` (the library stamps them with its
    /// process's time) or `redis` (its script reads TIME); unsaid, ratelab cannot tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<Clock>,
}

/// Whose clock a limiter process's library decides by, as its handshake says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Clock {
    Caller,
    Redis,
}

/// One answer line.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    id: u64,
    #[serde(default)]
    allowed: Option<bool>,
    #[serde(default)]
    error: Option<String>,
    /// What failed: "timeout", "connection" (the default), "reply" (Redis answered an error) or
    /// "noscript" (the library's script is not in Redis's cache and it did not load it again).
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    remaining: Option<i64>,
    #[serde(default)]
    retry_after_ms: Option<i64>,
}

/// What the reader hands a waiting check.
type Reply = Result<Decision, redis::RedisError>;

/// The state the reader thread and the checks share.
#[derive(Default)]
struct Shared {
    waiting: Mutex<HashMap<u64, oneshot::Sender<Reply>>>,
    /// Checks whose callers stopped waiting (their own budget ran out) before an answer came,
    /// with when each was sent, oldest first: the adapter still owes each an answer in time.
    abandoned: Mutex<VecDeque<(u64, Instant)>>,
    /// Why the adapter can answer no more, once it cannot.
    broken: Mutex<Option<String>>,
    stderr: Mutex<VecDeque<String>>,
    /// Says when the adapter's stderr has ended (all of it kept).
    stderr_ended: Mutex<Option<mpsc::Receiver<()>>>,
}

impl Shared {
    /// Records the first reason the adapter broke and wakes every waiting check.
    fn break_with(&self, why: String) {
        lock(&self.broken).get_or_insert(why);
        lock(&self.waiting).clear();
    }

    fn broken(&self) -> Option<String> {
        lock(&self.broken).clone()
    }

    /// Whether a check its caller gave up on is still owed an answer, or why the adapter is
    /// silent: one such check has had none within `answer` of being sent. A caller's budget
    /// shorter than the answer time must not hide a silent adapter behind checks that merely
    /// timed out.
    fn owes(&self, answer: Duration) -> Result<bool, String> {
        let mut abandoned = lock(&self.abandoned);
        while let Some(&(id, sent)) = abandoned.front() {
            if !lock(&self.waiting).contains_key(&id) {
                abandoned.pop_front();
                continue;
            }
            if sent.elapsed() > answer {
                return Err(format!(
                    "no answer to check {id} within {} ms (answer_ms; its caller had stopped waiting)",
                    answer.as_millis()
                ));
            }
            return Ok(true);
        }
        Ok(false)
    }

    /// The last lines the adapter wrote on stderr, for an error.
    fn stderr_tail(&self) -> String {
        let lines = lock(&self.stderr);
        match lines.is_empty() {
            true => String::new(),
            false => format!(
                "; its stderr ended with:\n{}",
                Vec::from(lines.clone()).join("\n")
            ),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A running adapter, deciding checks for one limit.
pub struct Process {
    name: String,
    child: Arc<Mutex<Child>>,
    lines: Mutex<Option<mpsc::Sender<String>>>,
    /// Check lines started in the caller's current turn, not yet handed to the writer.
    queued: Mutex<Vec<String>>,
    shared: Arc<Shared>,
    next_id: AtomicU64,
    answer: Duration,
    /// What it said it is.
    pub handshake: Handshake,
}

impl Process {
    /// The adapter's process id.
    pub fn pid(&self) -> u32 {
        lock(&self.child).id()
    }
}

impl std::fmt::Debug for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Process")
            .field("name", &self.name)
            .field("handshake", &self.handshake)
            .finish()
    }
}

impl Process {
    /// Starts `command` as limiter `name` of `algorithm` for `spec` against `reach`, and waits for
    /// its handshake. Spawned from the calling thread (its death signal is tied to it: call from a
    /// thread that lives as long as the process should).
    pub fn start(
        name: &str,
        algorithm: super::custom::Algorithm,
        command: &ProcessCommand,
        spec: &LimitSpec,
        reach: &Reach,
    ) -> Result<Self, LimiterError> {
        let fail = |why: String| LimiterError::Process {
            name: name.to_string(),
            why,
        };
        let mut child = spawn(command).map_err(&fail)?;
        crate::server::register_group(child.id());
        let (stdin, stdout, stderr) =
            match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
                (Some(i), Some(o), Some(e)) => (i, o, e),
                _ => return Err(fail("its pipes could not be opened".into())),
            };
        let shared = Arc::new(Shared::default());
        let child = Arc::new(Mutex::new(child));
        keep_stderr(stderr, shared.clone());
        let (redis_url, tls) = crate::server::endpoint::for_library(&reach.redis_url)
            .map_err(|e| fail(format!("its server's URL: {e}")))?;
        let setup = Setup {
            kind: "setup",
            protocol: PROTOCOL,
            redis_url: &redis_url,
            tls_ca: tls.ca.as_deref(),
            tls_cert: tls.cert.as_deref(),
            tls_key: tls.key.as_deref(),
            algorithm: algorithm.name(),
            limit: spec.capacity,
            window_ms: spec.window_ms,
            refill_per_s: spec.refill_per_sec,
            timeout_ms: reach.timeout_ms,
            answer_ms: reach.answer_ms(),
            cluster: reach.cluster,
            sentinel: reach.sentinel.as_ref(),
        };
        let first = serde_json::to_string(&setup).map_err(|e| fail(e.to_string()))?;
        let lines = write_lines(stdin, first);
        let (ready_tx, ready_rx) = mpsc::channel();
        read_answers(stdout, shared.clone(), child.clone(), ready_tx);
        let mut process = Process {
            name: name.to_string(),
            child,
            lines: Mutex::new(Some(lines)),
            queued: Mutex::new(Vec::new()),
            shared,
            next_id: AtomicU64::new(1),
            answer: Duration::from_millis(reach.answer_ms()),
            handshake: Handshake::default(),
        };
        let handshake = match ready_rx.recv_timeout(READY_WITHIN) {
            Ok(Ok(h)) => h,
            Ok(Err(why)) => return Err(fail(why + &process.shared.stderr_tail())),
            Err(_) => {
                let why = (process.shared.broken())
                    .unwrap_or_else(|| format!("no handshake within {} s", READY_WITHIN.as_secs()));
                return Err(fail(why + &process.shared.stderr_tail()));
            }
        };
        let refuse = |why: &str| LimiterError::NoClientFor {
            name: name.to_string(),
            why: why.to_string(),
        };
        if reach.cluster && !handshake.cluster {
            return Err(refuse(
                "the setup named a Redis Cluster and its handshake does not say \"cluster\": true, so it \
                 would talk to one node as to a whole server (examples/adapters/PROTOCOL.md)",
            ));
        }
        if reach.sentinel.is_some() && !handshake.sentinel {
            return Err(refuse(
                "the setup named Sentinels and its handshake does not say \"sentinel\": true, so it \
                 would stay on one server through a failover (examples/adapters/PROTOCOL.md)",
            ));
        }
        process.handshake = handshake;
        Ok(process)
    }

    /// Waits until every check a caller gave up on has had its answer: an error if one has had
    /// none within the answer time or the adapter broke. A run calls it after its last check, so
    /// an adapter that falls silent near the end is not read as a few timeouts.
    pub fn settle(&self) -> Result<(), LimiterError> {
        let fail = |why: String| LimiterError::Process {
            name: self.name.clone(),
            why: why + &self.shared.stderr_tail(),
        };
        loop {
            if let Some(why) = self.shared.broken() {
                return Err(fail(why));
            }
            match self.shared.owes(self.answer) {
                Ok(false) => return Ok(()),
                Ok(true) => std::thread::sleep(Duration::from_millis(10)),
                Err(why) => {
                    self.shared.break_with(why.clone());
                    return Err(fail(why));
                }
            }
        }
    }

    /// Asks the adapter to decide `check`.
    async fn ask(&self, check: Check<'_>) -> Result<Decision, LimiterError> {
        let fail = |why: String| LimiterError::Process {
            name: self.name.clone(),
            why: why + &self.shared.stderr_tail(),
        };
        if let Some(why) = self.shared.broken() {
            return Err(fail(why));
        }
        if let Err(why) = self.shared.owes(self.answer) {
            self.shared.break_with(why.clone());
            return Err(fail(why));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.shared.waiting).insert(id, tx);
        let mut pending = Pending {
            shared: &self.shared,
            id,
            sent: Instant::now(),
            settled: false,
        };
        let line = serde_json::json!({"id": id, "key": check.key, "cost": check.cost}).to_string();
        self.queue(line).await;
        let reply = tokio::time::timeout(self.answer, rx).await;
        pending.settled = true;
        match reply {
            Ok(Ok(reply)) => reply.map_err(LimiterError::Redis),
            Ok(Err(_woken)) => Err(fail(
                self.shared
                    .broken()
                    .unwrap_or_else(|| "it stopped answering".into()),
            )),
            Err(_elapsed) => {
                let why = format!(
                    "no answer to check {id} within {} ms (answer_ms)",
                    self.answer.as_millis()
                );
                self.shared.break_with(why.clone());
                Err(fail(why))
            }
        }
    }
}

impl Process {
    /// Queues a check's line. The first line of a turn waits for the caller's runtime to run
    /// every other task ready now, then hands the turn's lines to the writer together: checks
    /// started at once reach the adapter in one write, and so start in one tick of its event
    /// loop, as a burst started by one Node handler reaches its client (seed 001's Promise.all).
    async fn queue(&self, line: String) {
        let opens_turn = {
            let mut queued = lock(&self.queued);
            queued.push(line);
            queued.len() == 1
        };
        if opens_turn {
            // Sends on drop too, so a caller that stops waiting mid-yield strands no other check.
            let _turn = Turn(self);
            tokio::task::yield_now().await;
        }
    }

    /// Hands every queued line to the writer as one piece (holding the queue, so pieces reach
    /// the writer in the order their lines were queued); a closed stdin breaks the adapter, which
    /// wakes every check waiting for an answer.
    fn send_queued(&self) {
        let mut queued = lock(&self.queued);
        if queued.is_empty() {
            return;
        }
        let lines = std::mem::take(&mut *queued);
        let sent = lock(&self.lines)
            .as_ref()
            .is_some_and(|l| l.send(lines.join("\n")).is_ok());
        drop(queued);
        if !sent {
            self.shared.break_with("its stdin is closed".into());
        }
    }
}

/// One turn's queued lines, sent when dropped.
struct Turn<'a>(&'a Process);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.0.send_queued();
    }
}

/// A check sent and not yet settled: dropped unsettled (its caller stopped waiting), it is
/// noted among the abandoned, whose answers are still due within the answer time.
struct Pending<'a> {
    shared: &'a Shared,
    id: u64,
    sent: Instant,
    settled: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.settled {
            lock(&self.shared.abandoned).push_back((self.id, self.sent));
        }
    }
}

impl Decide for Process {
    fn link(&self) -> Link {
        Link::Own
    }

    fn settle(&self) -> Result<(), LimiterError> {
        Process::settle(self)
    }

    async fn decide<'a>(
        &'a self,
        _con: Option<&'a mut MultiplexedConnection>,
        check: Check<'a>,
    ) -> Attempt {
        Attempt {
            outcome: self.ask(check).await,
            round_trips: 0,
            noscript: false,
        }
    }
}

impl Drop for Process {
    /// Closes the adapter's stdin, gives it `EXIT_WITHIN` to exit, then kills its process group.
    fn drop(&mut self) {
        lock(&self.lines).take();
        let mut child = lock(&self.child);
        let deadline = Instant::now() + EXIT_WITHIN;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // The whole group, whether or not the adapter exited: what it started may still run.
        crate::server::kill_group(child.id());
        let _ = child.wait();
        crate::server::unregister_group(child.id());
    }
}

/// Starts limiter process `name` with the probe's limit and calls it limit + 1 times, one at a
/// time, on the fresh key `key` before anything is measured, as scripts are probed
/// ([`super::custom::probe`]): a failed start, a failed call or a first call refused is an error
/// naming the manifest. Says what it admitted and what the adapter said it is.
pub async fn probe(
    name: &str,
    reach: &Reach,
    key: &str,
) -> Result<(super::custom::Probe, Handshake), super::custom::ManifestError> {
    use super::custom::{ManifestError, PROBE_LIMIT};
    let def = super::custom::CustomName::loaded(name).and_then(|n| n.definition());
    let Some((def, command)) = def.and_then(|d| d.process.clone().map(|c| (d, c))) else {
        return Err(ManifestError {
            manifest: name.to_string(),
            line: None,
            message: "not loaded as a limiter process".into(),
        });
    };
    let fail = |message: String| ManifestError {
        manifest: def.manifest.clone(),
        line: None,
        message,
    };
    let spec = super::custom::probe_spec();
    let process = Process::start(name, def.algorithm, &command, &spec, reach)
        .map_err(|e| fail(e.to_string()))?;
    let mut admitted = 0;
    for call in 0..=PROBE_LIMIT {
        match process.ask(Check::one(key)).await {
            Ok(d) if call == 0 && !d.allowed => {
                return Err(fail(format!(
                    "the first call on a fresh key was denied (limit {PROBE_LIMIT}): does the adapter read `limit` \
                     from the setup line?"
                )))
            }
            Ok(d) => admitted += u64::from(d.allowed),
            Err(e) => return Err(fail(format!("probe call {} on a fresh key failed: {e}", call + 1))),
        }
    }
    let probe = super::custom::Probe {
        calls: PROBE_LIMIT + 1,
        admitted,
        limit: PROBE_LIMIT,
    };
    Ok((probe, process.handshake.clone()))
}

/// Spawns the adapter in its manifest's folder, its three pipes open, dying with ratelab.
fn spawn(command: &ProcessCommand) -> Result<Child, String> {
    let Some((program, args)) = command.argv.split_first() else {
        return Err("its command is empty".into());
    };
    let dir = std::path::Path::new(&command.dir);
    // A program named with a slash is the manifest's own file; a bare name is looked up on PATH.
    // Absolute, because a relative one would be resolved again from the child's working directory.
    let path = match program.contains('/') {
        true => std::path::absolute(dir.join(program))
            .map_err(|e| format!("cannot find `{program}`: {e}"))?,
        false => std::path::PathBuf::from(program),
    };
    let mut cmd = Command::new(&path);
    cmd.args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Its own process group, ended whole: a wrapper that does not exec (npm start, a venv
    // script) and a helper the adapter starts die with it.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    // Started from a runtime's blocking thread (chaos) an adapter would die when that thread
    // exits after idling: it is spawned from one that lasts.
    crate::server::spawn_lasting(cmd).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!(
            "cannot start `{}` in {}: not found (install it, or name it by its path)",
            program, command.dir
        ),
        _ => format!("cannot start `{}` in {}: {e}", program, command.dir),
    })
}

/// Keeps the last lines of the adapter's stderr.
fn keep_stderr(stderr: std::process::ChildStderr, shared: Arc<Shared>) {
    let (ended, ended_rx) = mpsc::channel();
    *lock(&shared.stderr_ended) = Some(ended_rx);
    std::thread::spawn(move || {
        let _ended = ended;
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let mut kept = lock(&shared.stderr);
            if kept.len() == STDERR_LINES {
                kept.pop_front();
            }
            kept.push_back(line);
        }
    });
}

/// A thread writing `first`, then every line sent on the returned channel, to the adapter's
/// stdin; it closes stdin when the channel closes.
fn write_lines(stdin: ChildStdin, first: String) -> mpsc::Sender<String> {
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        // Room for a burst of checks (each line is well under 200 bytes) to go out in one write;
        // the pipe itself holds 64 KiB, so a burst past that reaches the adapter in pieces.
        let mut stdin = std::io::BufWriter::with_capacity(1 << 16, stdin);
        let mut next = Some(first);
        while let Some(line) = next.take().or_else(|| rx.recv().ok()) {
            let mut written = writeln!(stdin, "{line}");
            // Lines queued behind this one go out in the same write.
            while let (Ok(()), Ok(more)) = (&written, rx.try_recv()) {
                written = writeln!(stdin, "{more}");
            }
            if written.and_then(|()| stdin.flush()).is_err() {
                return;
            }
        }
    });
    tx
}

/// A thread reading the handshake (sent on `ready`) and then every answer, handing each to the
/// check waiting for its id; anything else breaks the adapter with the reason.
fn read_answers(
    stdout: std::process::ChildStdout,
    shared: Arc<Shared>,
    child: Arc<Mutex<Child>>,
    ready: mpsc::Sender<Result<Handshake, String>>,
) {
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).split(b'\n');
        let handshake = match lines.next().map(utf8_line) {
            Some(Ok(line)) => handshake(&line),
            Some(Err(why)) => Err(why),
            None => Err(gone(
                &child,
                &shared,
                "closed its stdout before its handshake",
            )),
        };
        let ok = handshake.is_ok();
        if let Err(why) = &handshake {
            shared.break_with(why.clone());
        }
        let _ = ready.send(handshake);
        if !ok {
            return;
        }
        for line in lines {
            let answered = utf8_line(line).and_then(|line| hand_over(&line, &shared));
            if let Err(why) = answered {
                shared.break_with(why);
                return;
            }
        }
        shared.break_with(gone(&child, &shared, "closed its stdout"));
    });
}

/// One line of the adapter's stdout as text, or what it wrote that is not UTF-8 (the protocol's
/// JSON lines are).
fn utf8_line(read: std::io::Result<Vec<u8>>) -> Result<String, String> {
    let mut bytes = read.map_err(|e| format!("its stdout could not be read: {e}"))?;
    if bytes.last() == Some(&b'\r') {
        bytes.pop();
    }
    String::from_utf8(bytes).map_err(|e| {
        let lossy = String::from_utf8_lossy(e.as_bytes()).into_owned();
        format!("it wrote a line that is not UTF-8 ({e}): {}", clip(&lossy))
    })
}

/// The handshake in `line`, or why it is not one.
fn handshake(line: &str) -> Result<Handshake, String> {
    let value: serde_json::Value = serde_json::from_str(line)
        .map_err(|e| format!("its first line is not JSON ({e}): {}", clip(line)))?;
    match value.get("type").and_then(|t| t.as_str()) {
        Some("ready") => {}
        Some("fatal") => {
            let error = value
                .get("error")
                .and_then(|e| e.as_str())
                .unwrap_or("(no error text)");
            return Err(format!("it could not start: {error}"));
        }
        _ => {
            return Err(format!(
                "its first line is not a ready handshake: {}",
                clip(line)
            ))
        }
    }
    match value.get("protocol").and_then(|p| p.as_u64()) {
        Some(PROTOCOL) => {}
        other => {
            return Err(format!(
                "it speaks protocol {}, this ratelab speaks {PROTOCOL}",
                other.map_or("(none given)".to_string(), |p| p.to_string())
            ))
        }
    }
    serde_json::from_value(value)
        .map_err(|e| format!("its handshake is malformed ({e}): {}", clip(line)))
}

/// Hands the answer in `line` to the check waiting for its id.
fn hand_over(line: &str, shared: &Shared) -> Result<(), String> {
    let answer: Answer = serde_json::from_str(line).map_err(|e| {
        format!(
            "it wrote a line that is not an answer ({e}): {}",
            clip(line)
        )
    })?;
    let reply = match (answer.allowed, &answer.error) {
        (Some(allowed), None) => Ok(Decision::settled(
            allowed,
            answer.remaining.unwrap_or(0),
            answer.retry_after_ms.unwrap_or(0),
            0,
        )),
        (None, Some(error)) => Err(library_error(error, answer.kind.as_deref())?),
        _ => {
            return Err(format!(
                "its answer has neither or both of `allowed` and `error`: {}",
                clip(line)
            ))
        }
    };
    let waiting = lock(&shared.waiting).remove(&answer.id);
    match waiting {
        // A check that gave up (its caller's budget ran out) no longer listens: not an error.
        Some(tx) => {
            let _ = tx.send(reply);
            Ok(())
        }
        None => Err(format!(
            "it answered id {}, which is not in flight: {}",
            answer.id,
            clip(line)
        )),
    }
}

/// The library's failure as a Redis error of the kind it names.
fn library_error(text: &str, kind: Option<&str>) -> Result<redis::RedisError, String> {
    let io = |kind| redis::RedisError::from(std::io::Error::new(kind, text.to_string()));
    match kind {
        None | Some("connection") => Ok(io(std::io::ErrorKind::ConnectionReset)),
        Some("timeout") => Ok(io(std::io::ErrorKind::TimedOut)),
        Some("reply") => Ok(redis::RedisError::from((
            redis::ErrorKind::Extension,
            "the library's Redis reply",
            text.to_string(),
        ))),
        // Its script is gone from Redis's cache (a restart, SCRIPT FLUSH) and the library did not
        // load it again: survival reads it as such, not as any reply error.
        Some("noscript") => Ok(redis::RedisError::from((
            redis::ErrorKind::Server(redis::ServerErrorKind::NoScript),
            "the library's script is not loaded",
            text.to_string(),
        ))),
        Some(other) => Err(format!(
            "its error kind `{other}` is not timeout, connection, reply or noscript"
        )),
    }
}

/// Why the adapter is gone, with its exit status when it has one; its last words on stderr are
/// kept before this returns.
fn gone(child: &Mutex<Child>, shared: &Shared, what: &str) -> String {
    let ended = lock(&shared.stderr_ended).take();
    if let Some(ended) = ended {
        // A grandchild may hold stderr open: wait for its end only briefly.
        let _ = ended.recv_timeout(Duration::from_millis(500));
    }
    // It may still be exiting: give it a moment to have a status.
    for _ in 0..50 {
        if let Ok(Some(status)) = lock(child).try_wait() {
            return format!("it {what} and exited ({status})");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    format!("it {what}")
}

/// A line as shown in an error: at most 200 characters.
fn clip(line: &str) -> String {
    match line.char_indices().nth(200) {
        Some((at, _)) => format!("{:?}...", &line[..at]),
        None => format!("{line:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_or_refused_with_the_line() {
        let shared = Shared::default();
        let (tx, mut rx) = oneshot::channel();
        lock(&shared.waiting).insert(7, tx);
        hand_over(
            r#"{"id":7,"allowed":false,"remaining":0,"retry_after_ms":420}"#,
            &shared,
        )
        .unwrap();
        let d = rx.try_recv().unwrap().unwrap();
        assert_eq!((d.allowed, d.retry_ms), (false, 420));
        let again = hand_over(r#"{"id":7,"allowed":true}"#, &shared).unwrap_err();
        assert!(again.contains("id 7, which is not in flight"), "{again}");
        let garbage = hand_over("allowed", &shared).unwrap_err();
        assert!(garbage.contains("not an answer"), "{garbage}");
        let (tx, mut rx) = oneshot::channel();
        lock(&shared.waiting).insert(8, tx);
        hand_over(
            r#"{"id":8,"error":"Command timed out","kind":"timeout"}"#,
            &shared,
        )
        .unwrap();
        assert!(rx.try_recv().unwrap().unwrap_err().is_timeout());
        let (tx, mut rx) = oneshot::channel();
        lock(&shared.waiting).insert(10, tx);
        hand_over(
            r#"{"id":10,"error":"NoScriptError: No matching script","kind":"noscript"}"#,
            &shared,
        )
        .unwrap();
        let noscript = rx.try_recv().unwrap().unwrap_err();
        let kind = redis::ErrorKind::Server(redis::ServerErrorKind::NoScript);
        assert_eq!(noscript.kind(), kind, "{noscript}");
        let odd = hand_over(r#"{"id":11,"error":"x","kind":"gone"}"#, &shared).unwrap_err();
        assert!(odd.contains("reply or noscript"), "{odd}");
        let both = hand_over(r#"{"id":9,"allowed":true,"error":"x"}"#, &shared).unwrap_err();
        assert!(both.contains("neither or both"), "{both}");
    }

    #[test]
    fn a_check_its_caller_gave_up_on_is_still_owed_an_answer_in_time() {
        let shared = Shared::default();
        let answer = Duration::from_millis(50);
        let long_ago = Instant::now() - 2 * answer;
        for id in [1, 2] {
            let (tx, _rx) = oneshot::channel();
            lock(&shared.waiting).insert(id, tx);
            lock(&shared.abandoned).push_back((id, long_ago));
        }
        // Answered late (to nobody): not owed any more.
        hand_over(r#"{"id":1,"allowed":true}"#, &shared).unwrap();
        let why = shared.owes(answer).expect_err("check 2 is overdue");
        assert!(why.contains("no answer to check 2 within 50 ms"), "{why}");
        hand_over(r#"{"id":2,"allowed":true}"#, &shared).unwrap();
        assert_eq!(shared.owes(answer), Ok(false));
        assert!(lock(&shared.abandoned).is_empty());
        // Sent just now: owed, not yet overdue.
        let (tx, _rx) = oneshot::channel();
        lock(&shared.waiting).insert(3, tx);
        lock(&shared.abandoned).push_back((3, Instant::now()));
        assert_eq!(shared.owes(answer), Ok(true));
    }

    #[test]
    fn a_handshake_must_be_ready_and_of_this_protocol() {
        let h = handshake(
            r#"{"type":"ready","protocol":1,"adapter":"a","library":"l","version":"1.2.3"}"#,
        );
        assert_eq!(h.unwrap().version, "1.2.3");
        let old = handshake(r#"{"type":"ready","protocol":0}"#).unwrap_err();
        assert!(old.contains("protocol 0"), "{old}");
        let fatal = handshake(r#"{"type":"fatal","error":"rediss is not supported"}"#).unwrap_err();
        assert!(fatal.contains("rediss is not supported"), "{fatal}");
        assert!(handshake("hello").unwrap_err().contains("not JSON"));
        // Whose clock it decides by, when it says; a clock it cannot name is malformed.
        let said = |clock: &str| {
            handshake(&format!(
                r#"{{"type":"ready","protocol":1,"clock":"{clock}"}}"#
            ))
        };
        assert_eq!(said("caller").unwrap().clock, Some(Clock::Caller));
        assert_eq!(said("redis").unwrap().clock, Some(Clock::Redis));
        assert!(said("sundial").unwrap_err().contains("malformed"));
        let unsaid = handshake(r#"{"type":"ready","protocol":1}"#).unwrap();
        assert_eq!(unsaid.clock, None);
    }
}
