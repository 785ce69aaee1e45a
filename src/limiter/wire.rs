//! A decision as bytes on the wire, for the lean pipelined client (`load::pipelined`): the one
//! command a strategy sends, encoded straight into a reused buffer (no per-request `Vec` per
//! argument, no `redis::Cmd`), and its reply read in place (no `redis::Value` tree). A strategy
//! writes its KEYS and ARGV once, against `ArgSink`, so redis-rs's call and this encoder send
//! the same bytes (a test compares them).

use super::script::Call;
use redis::ToRedisArgs;

/// One argument as Redis receives it: its bytes, formatted as redis-rs formats it (itoa, ryu).
pub trait WireArg {
    /// Calls `f` with the argument's bytes (without RESP framing).
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R;
}

macro_rules! integer_wire_arg {
    ($($t:ty),*) => {$(
        impl WireArg for $t {
            fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
                f(itoa::Buffer::new().format(*self).as_bytes())
            }
        }
    )*};
}
integer_wire_arg!(i32, i64, u32, u64, usize);

impl WireArg for f64 {
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        f(ryu::Buffer::new().format(*self).as_bytes())
    }
}

impl WireArg for &str {
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        f(self.as_bytes())
    }
}

impl WireArg for String {
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        f(self.as_bytes())
    }
}

/// Where a script call's KEYS and ARGV go: redis-rs's [`Call`], or a [`WireCommand`].
pub(super) trait ArgSink: Sized {
    /// Appends to KEYS.
    fn key<A: WireArg + ToRedisArgs>(self, key: A) -> Self;
    /// Appends to ARGV.
    fn arg<A: WireArg + ToRedisArgs>(self, arg: A) -> Self;
}

impl ArgSink for Call<'_> {
    fn key<A: WireArg + ToRedisArgs>(self, key: A) -> Self {
        Call::key(self, key)
    }
    fn arg<A: WireArg + ToRedisArgs>(self, arg: A) -> Self {
        Call::arg(self, arg)
    }
}

/// One command being encoded as RESP: `name`, then `script` if any, then the number of KEYS,
/// the KEYS and ARGV (the body is buffered, since the array's length comes first).
pub struct WireCommand<'a> {
    body: &'a mut Vec<u8>,
    keys: usize,
    args: usize,
}

impl<'a> WireCommand<'a> {
    /// Starts a command whose KEYS and ARGV are buffered in `scratch` (cleared here).
    pub(super) fn new(scratch: &'a mut Vec<u8>) -> Self {
        scratch.clear();
        WireCommand {
            body: scratch,
            keys: 0,
            args: 0,
        }
    }

    /// Writes the command to `out`: `name` and, for EVALSHA, FCALL and EVAL, `script` and the
    /// number of keys before them; a plain command (`script` None) is `name` and its KEYS.
    pub(super) fn finish(self, name: &str, script: Option<&str>, out: &mut Vec<u8>) {
        let count = 1 + self.keys + self.args + if script.is_some() { 2 } else { 0 };
        out.push(b'*');
        out.extend_from_slice(itoa::Buffer::new().format(count).as_bytes());
        out.extend_from_slice(b"\r\n");
        bulk(out, name.as_bytes());
        if let Some(script) = script {
            bulk(out, script.as_bytes());
            bulk(out, itoa::Buffer::new().format(self.keys).as_bytes());
        }
        out.extend_from_slice(self.body);
    }

    fn push<A: WireArg>(&mut self, arg: A) {
        arg.with_bytes(|bytes| bulk(self.body, bytes));
    }
}

impl ArgSink for WireCommand<'_> {
    fn key<A: WireArg + ToRedisArgs>(mut self, key: A) -> Self {
        // KEYS come before ARGV in every strategy's list, so appending keeps the order.
        self.push(key);
        self.keys += 1;
        self
    }
    fn arg<A: WireArg + ToRedisArgs>(mut self, arg: A) -> Self {
        self.push(arg);
        self.args += 1;
        self
    }
}

/// Any command as RESP, its arguments given whole (set-up commands: AUTH, SELECT, SCRIPT LOAD).
pub fn command(args: &[&[u8]], out: &mut Vec<u8>) {
    out.push(b'*');
    out.extend_from_slice(itoa::Buffer::new().format(args.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    for arg in args {
        bulk(out, arg);
    }
}

/// One decision's command with its key left out: for limiters whose every other argument is the
/// same for every decision, so the lean client copies bytes instead of formatting numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyTemplate {
    head: Vec<u8>,
    tail: Vec<u8>,
}

impl KeyTemplate {
    /// Splits `command` (encoded for `key`) around the key's bulk string; None if it has none.
    pub(super) fn split(command: &[u8], key: &str) -> Option<Self> {
        let mut framed = Vec::with_capacity(key.len() + 16);
        bulk(&mut framed, key.as_bytes());
        let at = command.windows(framed.len()).position(|w| w == framed)?;
        Some(KeyTemplate {
            head: command[..at].to_vec(),
            tail: command[at + framed.len()..].to_vec(),
        })
    }

    /// Appends the command for `key`: the same bytes as encoding it whole.
    pub fn encode(&self, key: &str, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.head);
        bulk(out, key.as_bytes());
        out.extend_from_slice(&self.tail);
    }
}

fn bulk(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'$');
    out.extend_from_slice(itoa::Buffer::new().format(bytes.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
}

/// One RESP2 reply, borrowed from the read buffer. Arrays keep only what decisions need: their
/// length and their first three elements when those are integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply<'a> {
    /// `+OK`.
    Status(&'a [u8]),
    /// `-ERR ...`: Redis refused the command.
    Error(&'a [u8]),
    /// `:1`.
    Int(i64),
    /// `$3 foo` or the nil bulk.
    Bulk(Option<&'a [u8]>),
    /// `*3 :1 :2 :3`: the length, and the first three elements if they are integers.
    Array { len: usize, ints: [Option<i64>; 3] },
}

/// A reply that is not RESP2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed reply at byte {at}: {what}")]
pub struct WireError {
    pub at: usize,
    pub what: &'static str,
}

/// Parses the first reply in `buf`: the reply and the bytes it took, or None when `buf` holds
/// only part of it (read more and try again).
pub fn parse(buf: &[u8]) -> Result<Option<(Reply<'_>, usize)>, WireError> {
    parse_at(buf, 0, 0)
}

/// Deepest nesting accepted (decision scripts return flat arrays).
const MAX_DEPTH: usize = 8;

fn parse_at(buf: &[u8], at: usize, depth: usize) -> Result<Option<(Reply<'_>, usize)>, WireError> {
    let Some(end) = line_end(buf, at) else {
        return Ok(None);
    };
    let bad = |what| WireError { at, what };
    let line = &buf[at + 1..end];
    let next = end + 2;
    match buf[at] {
        b'+' => Ok(Some((Reply::Status(line), next - at))),
        b'-' => Ok(Some((Reply::Error(line), next - at))),
        b':' => Ok(Some((
            Reply::Int(int(line).ok_or(bad("integer"))?),
            next - at,
        ))),
        b'$' => {
            let len = int(line).ok_or(bad("bulk length"))?;
            if len < 0 {
                return Ok(Some((Reply::Bulk(None), next - at)));
            }
            let stop = next + len as usize;
            if buf.len() < stop + 2 {
                return Ok(None);
            }
            if &buf[stop..stop + 2] != b"\r\n" {
                return Err(bad("bulk terminator"));
            }
            Ok(Some((Reply::Bulk(Some(&buf[next..stop])), stop + 2 - at)))
        }
        b'*' => {
            let len = int(line).ok_or(bad("array length"))?;
            if len < 0 {
                return Ok(Some((Reply::Bulk(None), next - at)));
            }
            if depth >= MAX_DEPTH {
                return Err(bad("nesting too deep"));
            }
            let mut ints = [None; 3];
            let mut pos = next;
            for i in 0..len as usize {
                let Some((element, used)) = parse_at(buf, pos, depth + 1)? else {
                    return Ok(None);
                };
                if let (Some(slot), Reply::Int(v)) = (ints.get_mut(i), element) {
                    *slot = Some(v);
                }
                pos += used;
            }
            let reply = Reply::Array {
                len: len as usize,
                ints,
            };
            Ok(Some((reply, pos - at)))
        }
        _ => Err(bad("unknown type byte")),
    }
}

/// Index of the `\r` of the first `\r\n` at or after `at` (a stray `\r` stays in the line, so
/// its parse says what is wrong with it instead of waiting for bytes that never come).
fn line_end(buf: &[u8], at: usize) -> Option<usize> {
    let mut from = at;
    loop {
        let cr = from + buf.get(from..)?.iter().position(|&b| b == b'\r')?;
        match buf.get(cr + 1) {
            Some(b'\n') => return Some(cr),
            Some(_) => from = cr + 1,
            None => return None,
        }
    }
}

/// A RESP integer: an optional `-`, then decimal digits (no UTF-8 check, no `str` parse).
fn int(digits: &[u8]) -> Option<i64> {
    let (negative, digits) = match digits.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, digits),
    };
    if digits.is_empty() {
        return None;
    }
    let mut value: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        // Accumulated negative so that i64::MIN parses.
        value = value.checked_mul(10)?.checked_sub(i64::from(d - b'0'))?;
    }
    match negative {
        true => Some(value),
        false => value.checked_neg(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_is_a_resp_array_of_bulk_strings() {
        let mut scratch = Vec::new();
        let mut out = Vec::new();
        let cmd = WireCommand::new(&mut scratch)
            .key("k:1")
            .arg(5u64)
            .arg(0.5f64);
        cmd.finish("EVALSHA", Some("abc"), &mut out);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "*6\r\n$7\r\nEVALSHA\r\n$3\r\nabc\r\n$1\r\n1\r\n$3\r\nk:1\r\n$1\r\n5\r\n$3\r\n0.5\r\n"
        );
        let mut out = Vec::new();
        WireCommand::new(&mut scratch)
            .key("0123456789")
            .finish("GET", None, &mut out);
        assert_eq!(out, b"*2\r\n$3\r\nGET\r\n$10\r\n0123456789\r\n");
    }

    #[test]
    fn replies_are_read_whole_or_not_at_all() {
        let all = b"+OK\r\n-ERR no\r\n:42\r\n$3\r\nfoo\r\n$-1\r\n*3\r\n:1\r\n:-7\r\n:0\r\n";
        let mut pos = 0;
        let mut got = Vec::new();
        while let Some((reply, used)) = parse(&all[pos..]).unwrap() {
            got.push(reply);
            pos += used;
        }
        assert_eq!(pos, all.len());
        assert_eq!(
            got,
            [
                Reply::Status(b"OK"),
                Reply::Error(b"ERR no"),
                Reply::Int(42),
                Reply::Bulk(Some(b"foo")),
                Reply::Bulk(None),
                Reply::Array {
                    len: 3,
                    ints: [Some(1), Some(-7), Some(0)]
                },
            ]
        );
        // Every strict prefix of a reply is incomplete, never an error or a shorter reply.
        let array = b"*2\r\n$2\r\nab\r\n*1\r\n:5\r\n";
        for cut in 0..array.len() {
            assert_eq!(parse(&array[..cut]), Ok(None), "cut at {cut}");
        }
        let (reply, used) = parse(array).unwrap().unwrap();
        assert_eq!(used, array.len());
        assert_eq!(
            reply,
            Reply::Array {
                len: 2,
                ints: [None, None, None]
            }
        );
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(parse(b"?what\r\n").is_err());
        assert!(parse(b":x1\r\n").is_err());
        assert!(parse(b"$1\r\nab\r\n").is_err());
        // A stray CR inside a line is the line's error, not a reply still arriving.
        assert!(parse(b":1\r2\r\n").is_err());
        assert_eq!(
            parse(b"+O\rK\r\n").unwrap(),
            Some((Reply::Status(b"O\rK"), 6))
        );
        assert_eq!(parse(b":12\r").unwrap(), None);
    }

    #[test]
    fn integers_parse_to_the_edges_of_i64_and_no_further() {
        let cases: [(&[u8], Option<i64>); 9] = [
            (b"0", Some(0)),
            (b"-0", Some(0)),
            (b"42", Some(42)),
            (b"-17", Some(-17)),
            (b"9223372036854775807", Some(i64::MAX)),
            (b"-9223372036854775808", Some(i64::MIN)),
            (b"9223372036854775808", None),
            (b"", None),
            (b"1a", None),
        ];
        for (digits, want) in cases {
            assert_eq!(int(digits), want, "{}", String::from_utf8_lossy(digits));
        }
        assert_eq!(int(b"-"), None);
        assert_eq!(int(b"+1"), None);
    }

    #[test]
    fn a_key_template_rebuilds_the_command_for_any_key() {
        let mut whole = Vec::new();
        command(
            &[b"EVALSHA", b"abc", b"1", b"rl:k:1", b"100", b"2.5"],
            &mut whole,
        );
        let template = KeyTemplate::split(&whole, "rl:k:1").unwrap();
        let mut out = Vec::new();
        template.encode("rl:k:1", &mut out);
        assert_eq!(out, whole);
        out.clear();
        template.encode("rl:other:000000000123", &mut out);
        let mut expected = Vec::new();
        command(
            &[
                b"EVALSHA",
                b"abc",
                b"1",
                b"rl:other:000000000123",
                b"100",
                b"2.5",
            ],
            &mut expected,
        );
        assert_eq!(out, expected);
        assert_eq!(KeyTemplate::split(&whole, "absent"), None);
    }
}
