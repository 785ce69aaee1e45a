//! MONITOR capture on a connection of its own: every command the server runs, in the order it ran
//! them, with the client it came from. It is how the read, read, write, write order is shown, not
//! told. The connection is opened like every other (credentials, db, TLS from the URL).

use super::RecordError;
use std::thread::JoinHandle;
use std::time::Duration;

/// One command seen by MONITOR.
#[derive(Debug, Clone, PartialEq)]
pub struct MonitorLine {
    /// Server time in seconds, as MONITOR prints it.
    pub time: f64,
    /// `ip:port` of the client, or `lua` for commands a script ran.
    pub client: String,
    /// The command name, upper-cased.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
}

/// Parses `+1700000000.123456 [0 127.0.0.1:51358] "HMGET" "wire" "tokens"`.
pub fn parse_monitor_line(line: &str) -> Option<MonitorLine> {
    parse_monitor_entry(line.trim_end().strip_prefix('+')?)
}

/// Parses one MONITOR entry as the client library hands it over (a status reply, without `+`).
fn parse_monitor_entry(line: &str) -> Option<MonitorLine> {
    let (time, rest) = line.split_once(' ')?;
    let rest = rest.strip_prefix('[')?;
    let (bracket, rest) = rest.split_once(']')?;
    let client = bracket
        .split_once(' ')
        .map(|(_, c)| c)
        .unwrap_or(bracket)
        .to_string();
    let mut words = quoted_words(rest.trim_start())?;
    if words.is_empty() {
        return None;
    }
    let command = words.remove(0).to_uppercase();
    Some(MonitorLine {
        time: time.parse().ok()?,
        client,
        command,
        args: words,
    })
}

/// Splits `"a" "b\"c"` into its unescaped words (MONITOR uses C-style escapes and \xNN).
fn quoted_words(mut s: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    while let Some(body) = s.strip_prefix('"') {
        let mut word = Vec::<u8>::new();
        let mut chars = body.char_indices();
        let end = loop {
            let (i, c) = chars.next()?;
            match c {
                '"' => break i,
                '\\' => {
                    let (_, e) = chars.next()?;
                    match e {
                        'n' => word.push(b'\n'),
                        'r' => word.push(b'\r'),
                        't' => word.push(b'\t'),
                        'a' => word.push(7),
                        'b' => word.push(8),
                        'x' => {
                            let hi = chars.next()?.1.to_digit(16)?;
                            let lo = chars.next()?.1.to_digit(16)?;
                            word.push((hi * 16 + lo) as u8);
                        }
                        other => word.extend(other.to_string().as_bytes()),
                    }
                }
                c => word.extend(c.to_string().as_bytes()),
            }
        };
        words.push(String::from_utf8_lossy(&word).into_owned());
        s = body[end + 1..].trim_start();
    }
    s.is_empty().then_some(words)
}

/// A running MONITOR session; `finish` stops it and returns what it saw.
pub struct MonitorCapture {
    reader: JoinHandle<Result<Vec<MonitorLine>, RecordError>>,
    url: String,
    sentinel: String,
}

impl MonitorCapture {
    /// Starts MONITOR on its own connection to the server `url` names.
    pub fn start(url: &str) -> Result<Self, RecordError> {
        let address = crate::server::host_port(url);
        let err = |e: redis::RedisError| RecordError::Monitor(format!("{address}: {e}"));
        let client = crate::server::endpoint::client(url).map_err(err)?;
        let mut con = client
            .get_connection_with_timeout(crate::server::ADMIN_TIMEOUT)
            .map_err(err)?;
        // Long enough for the quietest stretch of a run; a lost server ends the capture with an error.
        con.set_read_timeout(Some(Duration::from_secs(30)))
            .map_err(err)?;
        redis::cmd("MONITOR")
            .query::<()>(&mut con)
            .map_err(|e| RecordError::Monitor(format!("starting MONITOR on {address}: {e}")))?;
        let sentinel = format!("ratelab-monitor-end-{}", std::process::id());
        let marker = sentinel.clone();
        let reader = std::thread::spawn(move || {
            let mut seen = Vec::new();
            loop {
                let entry = match con.recv_response() {
                    Ok(redis::Value::SimpleString(entry)) => entry,
                    Ok(_) => continue,
                    Err(e) => return Err(RecordError::Monitor(e.to_string())),
                };
                let Some(parsed) = parse_monitor_entry(&entry) else {
                    continue;
                };
                if parsed.args.iter().any(|a| a == &marker) {
                    return Ok(seen);
                }
                seen.push(parsed);
            }
        });
        Ok(MonitorCapture {
            reader,
            url: url.to_string(),
            sentinel,
        })
    }

    /// Sends the end marker (an ECHO) and returns every command seen before it.
    pub fn finish(self) -> Result<Vec<MonitorLine>, RecordError> {
        let mut con = crate::server::admin_connection(&self.url)
            .map_err(|e| RecordError::Monitor(e.to_string()))?;
        redis::cmd("ECHO")
            .arg(&self.sentinel)
            .query::<String>(&mut con)
            .map_err(|e| RecordError::Monitor(e.to_string()))?;
        self.reader
            .join()
            .map_err(|_| RecordError::Monitor("reader thread panicked".into()))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_seed_000_line() {
        let l =
            parse_monitor_line(r#"+1700000000.123456 [0 127.0.0.1:51358] "HMGET" "wire" "tokens""#)
                .unwrap();
        assert_eq!(l.client, "127.0.0.1:51358");
        assert_eq!(l.command, "HMGET");
        assert_eq!(l.args, vec!["wire", "tokens"]);
        assert!((l.time - 1_700_000_000.123456).abs() < 1e-6);
    }

    #[test]
    fn parses_escapes_and_lua_client() {
        let l = parse_monitor_line(r#"+1.5 [0 lua] "set" "a\"b" "x\x41\n""#).unwrap();
        assert_eq!(l.client, "lua");
        assert_eq!(l.command, "SET");
        assert_eq!(l.args, vec!["a\"b", "xA\n"]);
    }

    #[test]
    fn rejects_non_monitor_lines() {
        assert_eq!(parse_monitor_line("+OK"), None);
        assert_eq!(parse_monitor_line("-ERR x"), None);
        assert_eq!(
            parse_monitor_line(r#"+1.0 [0 1.2.3.4:5] "unterminated"#),
            None
        );
    }
}
