//! What each side executed over the calls: INFO commandstats before and after on the primary and
//! the replica, and what MONITOR on the replica showed arriving from the primary's link.

use super::StreamRow;
use crate::record::MonitorLine;
use crate::server::{admin, command_stats, RedisServer, ServerError};
use std::collections::{BTreeMap, BTreeSet};

/// Calls per command (INFO commandstats names) at one moment.
pub(super) type Calls = BTreeMap<String, u64>;

/// Calls on each side, (before, after).
pub(super) struct Sides<'a> {
    pub primary: (&'a Calls, &'a Calls),
    pub replica: (&'a Calls, &'a Calls),
}

/// What the harness itself sends while measuring (its INFO samples, MONITOR), left out.
const HARNESS_COMMANDS: [&str; 2] = ["info", "monitor"];
/// An example longer than this is cut (a key and four fields fit).
const EXAMPLE_CHARS: usize = 200;

/// The server's INFO commandstats calls per command now.
pub(super) fn command_calls(server: &RedisServer) -> Result<Calls, ServerError> {
    let mut con = server.connection()?;
    let info = admin::info(&mut con, "commandstats")?;
    Ok(command_stats(&info)
        .into_iter()
        .map(|(name, (calls, _usec))| (name, calls))
        .collect())
}

fn delta((before, after): (&Calls, &Calls), command: &str) -> u64 {
    let at = |calls: &Calls| calls.get(command).copied().unwrap_or(0);
    at(after).saturating_sub(at(before))
}

/// One row per command either side ran or MONITOR saw from `link` (the primary's `host:port`),
/// busiest first.
pub(super) fn stream_rows(sides: &Sides, monitor: &[MonitorLine], link: &str) -> Vec<StreamRow> {
    let from_primary: Vec<&MonitorLine> = monitor.iter().filter(|l| l.client == link).collect();
    let names: BTreeSet<String> = (sides.primary.1.keys())
        .chain(sides.replica.1.keys())
        .cloned()
        .chain(from_primary.iter().map(|l| l.command.to_lowercase()))
        .filter(|name| !HARNESS_COMMANDS.contains(&name.as_str()))
        .collect();
    let mut rows: Vec<StreamRow> = names
        .into_iter()
        .map(|command| {
            let seen: Vec<&&MonitorLine> = (from_primary.iter())
                .filter(|l| l.command.eq_ignore_ascii_case(&command))
                .collect();
            let example = seen.first().map(|l| l.args.join(" ")).unwrap_or_default();
            StreamRow {
                calls_on_primary: delta(sides.primary, &command),
                calls_on_replica: delta(sides.replica, &command),
                monitor_on_replica: seen.len() as u64,
                example_on_replica: example.chars().take(EXAMPLE_CHARS).collect(),
                command,
            }
        })
        .filter(|r| r.calls_on_primary + r.calls_on_replica + r.monitor_on_replica > 0)
        .collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.calls_on_primary.max(r.calls_on_replica)));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(pairs: &[(&str, u64)]) -> Calls {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    fn line(client: &str, command: &str, args: &[&str]) -> MonitorLine {
        MonitorLine {
            time: 1.0,
            client: client.into(),
            command: command.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
        }
    }

    #[test]
    fn counts_each_side_over_the_window_and_what_came_from_the_link() {
        let primary_before = calls(&[("evalsha", 5), ("info", 3)]);
        let primary_after = calls(&[("evalsha", 105), ("hset", 90), ("info", 9)]);
        let replica_before = calls(&[("info", 2)]);
        let replica_after = calls(&[
            ("hset", 90),
            ("pexpireat", 100),
            ("info", 8),
            ("monitor", 1),
        ]);
        let sides = Sides {
            primary: (&primary_before, &primary_after),
            replica: (&replica_before, &replica_after),
        };
        let link = "127.0.0.1:7000";
        let monitor = [
            line(link, "HSET", &["k", "tokens", "4.5", "ts", "17"]),
            line(link, "HSET", &["k", "tokens", "3.5", "ts", "18"]),
            line("127.0.0.1:5555", "ECHO", &["x"]),
        ];
        let rows = stream_rows(&sides, &monitor, link);
        let names: Vec<&str> = rows.iter().map(|r| r.command.as_str()).collect();
        assert_eq!(names, ["evalsha", "pexpireat", "hset"]);
        assert_eq!(
            (rows[0].calls_on_primary, rows[0].calls_on_replica),
            (100, 0)
        );
        let hset = &rows[2];
        assert_eq!(
            (
                hset.calls_on_primary,
                hset.calls_on_replica,
                hset.monitor_on_replica
            ),
            (90, 90, 2)
        );
        assert_eq!(hset.example_on_replica, "k tokens 4.5 ts 17");
    }
}
