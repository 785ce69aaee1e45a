//! The fault proxy against a real redis-server: for each fault, what a client on a raw socket sees
//! (bytes, silence, EOF, RST, refusal) and what Redis itself saw, read on a direct connection.
//!
//! Silence is asserted only as "nothing arrived before the heal": a slow machine can delay bytes,
//! never invent them, so waiting longer can only make such a check pass. Delay bounds come from
//! the injected delay itself (no timer fires early), never from a fixed time.

use crate::common;

use ratelab::fault::{Direction, Fault, Proxy};
use ratelab::server::RedisServer;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a held reply gets to show itself: silence during it is what a blackhole promises.
const QUIET: Duration = Duration::from_millis(200);
/// How long anything that must arrive may take on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(10);

fn upstream(server: &RedisServer) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], server.port()))
}

/// One RESP command as bytes.
fn resp(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend(format!("${}\r\n", a.len()).into_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Reads until `want` bytes arrived or `wait` passed; what arrived (possibly nothing).
async fn read_for(s: &mut TcpStream, want: usize, wait: Duration) -> std::io::Result<Vec<u8>> {
    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + wait;
    while got.len() < want {
        let mut buf = [0u8; 4096];
        match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
            Err(_) => break,
            Ok(Ok(0)) => break,
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Ok(Err(e)) => return Err(e),
        }
    }
    Ok(got)
}

/// A direct GET on the server, past the proxy.
fn direct_get(server: &RedisServer, key: &str) -> Option<String> {
    let mut con = server.connection().expect("direct connection");
    redis::cmd("GET").arg(key).query(&mut con).expect("GET")
}

async fn connect(proxy: &Proxy) -> TcpStream {
    TcpStream::connect(proxy.addr()).await.expect("connect")
}

#[tokio::test(flavor = "current_thread")]
async fn healed_forwards_every_byte_unchanged_both_ways() {
    let server = common::start_server();
    let proxy = Proxy::start(upstream(&server), 1).await.unwrap();
    let mut s = connect(&proxy).await;
    // Every byte value, 1 MiB in all: bigger than one chunk and than the socket buffers.
    let value: Vec<u8> = (0..1 << 20).map(|i: u32| (i * 7 % 251) as u8).collect();
    let mut pipeline = resp(&[b"SET", b"proxy:blob", &value]);
    pipeline.extend(resp(&[b"GET", b"proxy:blob"]));
    s.write_all(&pipeline).await.unwrap();
    let mut want = b"+OK\r\n".to_vec();
    want.extend(format!("${}\r\n", value.len()).into_bytes());
    want.extend_from_slice(&value);
    want.extend_from_slice(b"\r\n");
    let got = read_for(&mut s, want.len(), PATIENCE).await.unwrap();
    assert!(
        got == want,
        "{} bytes back, {} expected",
        got.len(),
        want.len()
    );
    let mut con = server.connection().unwrap();
    let stored: Vec<u8> = redis::cmd("GET").arg("proxy:blob").query(&mut con).unwrap();
    assert!(stored == value, "Redis stored what the client sent");
    assert_eq!(proxy.accepted(), 1);
    assert_eq!(proxy.live_pumps(), 2, "two pumps for the open connection");
}

/// Sends SET key v during a blackhole of `direction` and reports (reply before heal, value Redis
/// held before heal, reply after heal, value after heal).
async fn blackholed_set(
    direction: Direction,
) -> (Vec<u8>, Option<String>, Vec<u8>, Option<String>) {
    let server = common::start_server();
    let proxy = Proxy::start(upstream(&server), 1).await.unwrap();
    let mut s = connect(&proxy).await;
    s.write_all(&resp(&[b"PING"])).await.unwrap();
    assert_eq!(read_for(&mut s, 7, PATIENCE).await.unwrap(), b"+PONG\r\n");
    proxy.set(Fault::Blackhole(direction));
    s.write_all(&resp(&[b"SET", b"proxy:k", b"v"]))
        .await
        .unwrap();
    let before = read_for(&mut s, 5, QUIET)
        .await
        .expect("the connection stays open");
    let held_value = direct_get(&server, "proxy:k");
    proxy.heal();
    let after = read_for(&mut s, 5, PATIENCE).await.unwrap();
    (before, held_value, after, direct_get(&server, "proxy:k"))
}

#[tokio::test(flavor = "current_thread")]
async fn blackhole_to_server_holds_the_command_and_delivers_it_on_heal() {
    let (before, held, after, healed) = blackholed_set(Direction::ToServer).await;
    assert!(before.is_empty(), "a reply came through: {before:?}");
    assert_eq!(held, None, "Redis never saw the command while blackholed");
    assert_eq!(after, b"+OK\r\n", "the held command ran once healed");
    assert_eq!(healed.as_deref(), Some("v"));
}

#[tokio::test(flavor = "current_thread")]
async fn blackhole_to_client_runs_the_command_and_holds_the_reply() {
    let (before, held, after, _) = blackholed_set(Direction::ToClient).await;
    assert!(before.is_empty(), "a reply came through: {before:?}");
    assert_eq!(
        held.as_deref(),
        Some("v"),
        "Redis ran it: only the reply is held"
    );
    assert_eq!(after, b"+OK\r\n");
}

#[tokio::test(flavor = "current_thread")]
async fn blackhole_both_neither_runs_nor_replies_until_healed() {
    let (before, held, after, healed) = blackholed_set(Direction::Both).await;
    assert!(before.is_empty(), "a reply came through: {before:?}");
    assert_eq!(held, None);
    assert_eq!(after, b"+OK\r\n");
    assert_eq!(healed.as_deref(), Some("v"));
}

#[tokio::test(flavor = "current_thread")]
async fn refuse_turns_new_connections_away_and_keeps_open_ones() {
    let server = common::start_server();
    let proxy = Proxy::start(upstream(&server), 1).await.unwrap();
    let mut open = connect(&proxy).await;
    // Accepted by the proxy before the switch (one still in the listen backlog is reset when
    // the listener closes, as with any server that stops listening).
    open.write_all(&resp(&[b"PING"])).await.unwrap();
    assert_eq!(
        read_for(&mut open, 7, PATIENCE).await.unwrap(),
        b"+PONG\r\n"
    );
    proxy.set(Fault::Refuse);
    // The listener closes when the accept task sees the switch; until then a connect may land.
    let refused = tokio::time::timeout(PATIENCE, async {
        loop {
            match TcpStream::connect(proxy.addr()).await {
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => return,
                _ => tokio::time::sleep(Duration::from_millis(5)).await,
            }
        }
    })
    .await
    .is_ok();
    assert!(refused, "a new connection was not refused");
    open.write_all(&resp(&[b"PING"])).await.unwrap();
    assert_eq!(
        read_for(&mut open, 7, PATIENCE).await.unwrap(),
        b"+PONG\r\n"
    );
    proxy.heal();
    let mut again = None;
    for _ in 0..1000 {
        if let Ok(s) = TcpStream::connect(proxy.addr()).await {
            again = Some(s);
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut again = again.expect("accepted again after heal");
    again.write_all(&resp(&[b"PING"])).await.unwrap();
    assert_eq!(
        read_for(&mut again, 7, PATIENCE).await.unwrap(),
        b"+PONG\r\n"
    );
}

/// PING round trips through the proxy, one at a time.
async fn ping_times(s: &mut TcpStream, n: usize) -> Vec<Duration> {
    let mut out = Vec::new();
    for _ in 0..n {
        let t0 = tokio::time::Instant::now();
        s.write_all(&resp(&[b"PING"])).await.unwrap();
        assert_eq!(read_for(s, 7, PATIENCE).await.unwrap(), b"+PONG\r\n");
        out.push(t0.elapsed());
    }
    out
}

#[tokio::test(flavor = "current_thread")]
async fn delay_adds_at_least_the_delay_per_reply_and_replies_overlap() {
    let server = common::start_server();
    let proxy = Proxy::start(upstream(&server), 7).await.unwrap();
    let mut s = connect(&proxy).await;
    let fixed = Duration::from_millis(60);
    proxy.set(Fault::Delay {
        fixed,
        jitter: Duration::ZERO,
    });
    for took in ping_times(&mut s, 5).await {
        assert!(
            took >= fixed,
            "a reply came back in {took:?}, under the {fixed:?} delay"
        );
    }
    // 20 commands at once: a delay line returns them together, a queue would take 20 delays.
    let n = 20;
    let t0 = tokio::time::Instant::now();
    s.write_all(&resp(&[b"PING"]).repeat(n)).await.unwrap();
    let got = read_for(&mut s, 7 * n, PATIENCE).await.unwrap();
    let took = t0.elapsed();
    assert_eq!(got, b"+PONG\r\n".repeat(n));
    assert!(took >= fixed);
    assert!(
        took < fixed * (n as u32) / 2,
        "{n} pipelined replies took {took:?}: delays queued instead of overlapping"
    );
    proxy.heal();
    // Healed: no reply waits for the delay any more (the injected delay is the scale).
    let healed = ping_times(&mut s, 5).await;
    assert!(healed.iter().all(|t| *t < fixed), "{healed:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn jitter_stays_within_its_range_and_spreads_replies() {
    let server = common::start_server();
    let proxy = Proxy::start(upstream(&server), 11).await.unwrap();
    let mut s = connect(&proxy).await;
    let (fixed, jitter) = (Duration::from_millis(20), Duration::from_millis(40));
    proxy.set(Fault::Delay { fixed, jitter });
    let times = ping_times(&mut s, 20).await;
    assert!(times.iter().all(|t| *t >= fixed), "{times:?}");
    // Uniform on [0, 40] ms: the mean extra is 20 ms, its sd over 20 replies ~2.6 ms, so a mean
    // extra under 10 ms (> 3.8 sd below) means the jitter was not applied.
    let extra = times
        .iter()
        .map(|t| (*t - fixed).as_secs_f64())
        .sum::<f64>()
        / times.len() as f64;
    assert!(
        extra >= jitter.as_secs_f64() / 4.0,
        "mean extra {extra} s: {times:?}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn reset_sends_rst_to_open_and_new_connections_then_heals() {
    let server = common::start_server();
    let proxy = Proxy::start(upstream(&server), 1).await.unwrap();
    let mut s = connect(&proxy).await;
    s.write_all(&resp(&[b"PING"])).await.unwrap();
    assert_eq!(read_for(&mut s, 7, PATIENCE).await.unwrap(), b"+PONG\r\n");
    proxy.set(Fault::Reset);
    let err = read_for(&mut s, 1, PATIENCE).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset, "{err}");
    // A connection made while resetting is reset too (the handshake itself completes first).
    let mut new = connect(&proxy).await;
    let _ = new.write_all(&resp(&[b"PING"])).await;
    match read_for(&mut new, 7, PATIENCE).await {
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
        Ok(got) => assert!(got.is_empty(), "a reset proxy answered: {got:?}"),
    }
    proxy.heal();
    let mut healed = connect(&proxy).await;
    healed.write_all(&resp(&[b"PING"])).await.unwrap();
    assert_eq!(
        read_for(&mut healed, 7, PATIENCE).await.unwrap(),
        b"+PONG\r\n"
    );
    let switches: Vec<String> = proxy
        .switches()
        .iter()
        .map(|s| s.fault.to_string())
        .collect();
    assert_eq!(switches, ["healed", "reset", "healed"]);
    let at: Vec<_> = proxy.switches().iter().map(|s| s.at).collect();
    assert!(
        at.windows(2).all(|w| w[0] <= w[1]),
        "switch instants in order"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn dropping_the_proxy_ends_its_tasks_and_closes_its_port() {
    let server = common::start_server();
    let proxy = Proxy::start(upstream(&server), 1).await.unwrap();
    let addr = proxy.addr();
    let mut s = connect(&proxy).await;
    s.write_all(&resp(&[b"PING"])).await.unwrap();
    assert_eq!(read_for(&mut s, 7, PATIENCE).await.unwrap(), b"+PONG\r\n");
    // Held inside a blackhole: only the abort can end these pumps.
    proxy.set(Fault::Blackhole(Direction::Both));
    drop(proxy);
    // The pumps held the only handles on the proxy's sockets: once aborted, the client's
    // connection ends (EOF or RST) and the port is closed.
    let ended = read_for(&mut s, 1, PATIENCE).await;
    assert!(ended.as_ref().map_or(true, |b| b.is_empty()), "{ended:?}");
    let refused = TcpStream::connect(addr).await.unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
    let mut con = server.connection().unwrap();
    let clients: String = redis::cmd("CLIENT").arg("LIST").query(&mut con).unwrap();
    assert!(
        common::wait_for(PATIENCE, || {
            let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut con).unwrap();
            list.lines().count() == 1
        }),
        "the proxy's upstream connection to Redis stayed open: {clients}"
    );
}
