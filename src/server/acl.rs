//! The least privilege ratelab needs on a server it does not own, and the check that the user in
//! `--redis-url` has it, before anything is measured. docs/own-server.md prints
//! [`acl_setuser`]; `tests/auth.rs` runs experiments under exactly that user.
//!
//! Keys: only `ratelab:*` (every key a run writes starts with `ratelab:<experiment>:`). Commands:
//! reads, writes, scripts, transactions and the connection's own commands, minus everything
//! `@dangerous` (FLUSHALL, FLUSHDB, KEYS, CONFIG, SHUTDOWN, DEBUG, ...) and minus the scripting
//! commands that would drop the server's other scripts and functions; then, by name, the few
//! read-only commands the measurements use: TIME (the window limiters' clock), INFO (version,
//! CPU and command counters for meta.json and cost per decision), and the [`Extra`] ones an
//! experiment states it needs: MONITOR (the order in which the server ran the commands) and the
//! read-only CLUSTER subcommands (the slot map). Which experiment needs what is the experiment's
//! to say; this file knows the permissions, not the experiments.

use super::ServerError;

/// The key pattern: every key ratelab writes starts with this.
pub const KEY_PATTERN: &str = "~ratelab:*";

/// The command rules, in the order `ACL SETUSER` applies them.
pub const COMMAND_RULES: &str = "-@all +@read +@write +@scripting +@transaction +@connection \
     -@dangerous -function|flush -function|restore -script|flush \
     +time +info +monitor +cluster|info +cluster|slots +cluster|nodes +cluster|keyslot +cluster|myid";

/// The whole `ACL SETUSER` line for a user `name` with password `password`.
pub fn acl_setuser(name: &str, password: &str) -> String {
    format!(
        "ACL SETUSER {name} on >{password} resetkeys {KEY_PATTERN} resetchannels {COMMAND_RULES}"
    )
}

/// A permission beyond the ones every run needs, which an experiment states it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extra {
    /// MONITOR: the order in which the server ran the commands.
    Monitor,
    /// The read-only CLUSTER subcommands: the slot map and each key's slot.
    ClusterSlotMap,
}

/// One permission a run needs: a harmless command that uses it, and the rule that grants it.
struct Need {
    command: &'static [&'static str],
    rule: &'static str,
    /// Needed only by a run that states this extra (None: by every run).
    extra: Option<Extra>,
}

/// Stands in [`NEEDS`] for the run's own probe key (`<prefix>preflight`): inside the run's prefix,
/// so the check writes nothing outside it (probes read it, or write it with a 1 s expiry).
const PROBE_KEY: &str = "<probe key>";
/// Stands for a SCAN pattern matching only the run's own keys.
const PROBE_MATCH: &str = "<probe match>";

/// `command` with the stand-ins replaced by the run's own key and pattern.
fn concrete(command: &[&str], prefix: &str) -> Vec<String> {
    (command.iter())
        .map(|arg| match *arg {
            PROBE_KEY => format!("{prefix}preflight"),
            PROBE_MATCH => format!("{prefix}*"),
            arg => arg.to_string(),
        })
        .collect()
}

const NEEDS: &[Need] = &[
    Need {
        command: &["INFO", "server"],
        rule: "+info",
        extra: None,
    },
    Need {
        command: &["TIME"],
        rule: "+time",
        extra: None,
    },
    Need {
        command: &["GET", PROBE_KEY],
        rule: "+@read",
        extra: None,
    },
    Need {
        command: &["SET", PROBE_KEY, "1", "PX", "1000"],
        rule: "+@write",
        extra: None,
    },
    Need {
        command: &["SCAN", "0", "MATCH", PROBE_MATCH, "COUNT", "1"],
        rule: "+@read",
        extra: None,
    },
    Need {
        command: &["UNLINK", PROBE_KEY],
        rule: "+@write",
        extra: None,
    },
    Need {
        command: &["EVAL", "return 1", "0"],
        rule: "+@scripting",
        extra: None,
    },
    Need {
        command: &[
            "SCRIPT",
            "EXISTS",
            "0000000000000000000000000000000000000000",
        ],
        rule: "+@scripting",
        extra: None,
    },
    Need {
        command: &["WATCH", PROBE_KEY],
        rule: "+@transaction",
        extra: None,
    },
    Need {
        command: &["UNWATCH"],
        rule: "+@transaction",
        extra: None,
    },
    Need {
        command: &["MONITOR"],
        rule: "+monitor",
        extra: Some(Extra::Monitor),
    },
    Need {
        command: &["CLUSTER", "INFO"],
        rule: "+cluster|info",
        extra: Some(Extra::ClusterSlotMap),
    },
    Need {
        command: &["CLUSTER", "SLOTS"],
        rule: "+cluster|slots",
        extra: Some(Extra::ClusterSlotMap),
    },
    Need {
        command: &["CLUSTER", "KEYSLOT", PROBE_KEY],
        rule: "+cluster|keyslot",
        extra: Some(Extra::ClusterSlotMap),
    },
];

/// A permission the `--redis-url` user lacks: the command, and the rule that grants it.
#[derive(Debug, thiserror::Error)]
#[error(
    "user `{user}` may not run `{command}`, which {experiment} needs: add `{rule}` to its ACL \
     (ACL SETUSER {user} {rule}; docs/own-server.md has the whole line); the server said: \
     {denied}"
)]
pub struct Denied {
    pub user: String,
    pub experiment: String,
    pub command: String,
    pub rule: String,
    pub denied: String,
}

/// How the permissions were checked, for meta.json.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckedBy {
    /// `ACL DRYRUN` (Redis 7+, and the user may run ACL).
    DryRun,
    /// Each command run once in a harmless form, NOPERM meaning missing.
    Probe,
}

/// Checks that the server `url` names can take the writes of the run `experiment` names (a
/// primary; a cluster node only for a run on one) and that its user may run what every run needs
/// and the `extras` this one states, touching no key outside the run's `prefix`; the first missing
/// permission is an error naming the command and the rule to add.
pub fn preflight(
    url: &str,
    experiment: &str,
    prefix: &str,
    on_cluster_node: bool,
    extras: &[Extra],
) -> Result<CheckedBy, ServerError> {
    let shown = super::endpoint::masked(url);
    let mut con = super::admin_connection(url)
        .and_then(|mut con| {
            redis::cmd("PING").query::<()>(&mut con)?;
            Ok(con)
        })
        .map_err(|e| unreachable(&shown, url, e))?;
    let role = super::admin::info(&mut con, "replication")?;
    if role.get("role") == Some("slave") {
        return Err(ServerError::NotPrimary {
            url: shown,
            primary: format!(
                "{}:{}",
                role.get("master_host").unwrap_or("?"),
                role.get("master_port").unwrap_or("?")
            ),
        });
    }
    let cluster = super::admin::info(&mut con, "cluster")?;
    if !on_cluster_node && cluster.get("cluster_enabled") == Some("1") {
        return Err(ServerError::ClusterNode {
            url: shown,
            experiment: experiment.to_string(),
        });
    }
    permissions(url, &mut con, experiment, prefix, extras)
}

fn permissions(
    url: &str,
    con: &mut redis::Connection,
    experiment: &str,
    prefix: &str,
    extras: &[Extra],
) -> Result<CheckedBy, ServerError> {
    let user = url::Url::parse(url)
        .ok()
        .map(|u| u.username().to_string())
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "default".into());
    let needs = NEEDS
        .iter()
        .filter(|n| n.extra.is_none_or(|extra| extras.contains(&extra)));
    let mut by = CheckedBy::DryRun;
    for need in needs {
        let command = concrete(need.command, prefix);
        let denied = |denied: &str| missing(&user, experiment, &command, need.rule, denied);
        if by == CheckedBy::DryRun {
            match dry_run(con, &user, &command) {
                Ok(None) => continue,
                Ok(Some(reason)) => return Err(denied(&reason)),
                // No ACL DRYRUN (Redis < 7), or this user may not run ACL: probe instead.
                Err(_) => by = CheckedBy::Probe,
            }
        }
        if let Some(reason) = probe(url, con, &command)? {
            return Err(denied(&reason));
        }
    }
    Ok(by)
}

/// `ACL DRYRUN user command...`: None when allowed, else the server's reason.
fn dry_run(
    con: &mut redis::Connection,
    user: &str,
    command: &[String],
) -> Result<Option<String>, redis::RedisError> {
    let reply: String = redis::cmd("ACL")
        .arg("DRYRUN")
        .arg(user)
        .arg(command)
        .query(con)?;
    Ok((reply != "OK").then_some(reply))
}

/// Runs the command; None when the server ran it or refused it for another reason than
/// permissions (CLUSTER INFO on a server without cluster mode), else the NOPERM message.
fn probe(
    url: &str,
    con: &mut redis::Connection,
    command: &[String],
) -> Result<Option<String>, ServerError> {
    let outcome = if command == ["MONITOR"] {
        // On a connection of its own, closed at once: a monitoring connection takes no commands.
        let mut own = super::admin_connection(url)?;
        redis::cmd("MONITOR").query::<()>(&mut own)
    } else {
        let mut cmd = redis::cmd(&command[0]);
        cmd.arg(&command[1..]);
        cmd.query::<redis::Value>(con).map(|_| ())
    };
    match outcome {
        Err(e) if e.code() == Some("NOPERM") => Ok(Some(e.to_string())),
        _ => Ok(None),
    }
}

/// A server that could not be reached or would not let us in, with what to check.
#[derive(Debug, thiserror::Error)]
#[error("cannot use --redis-url {url}: {hint} ({cause})")]
pub struct Unreachable {
    pub url: String,
    pub hint: String,
    pub cause: String,
}

fn unreachable(shown: &str, url: &str, e: ServerError) -> ServerError {
    let cause = e.to_string();
    let redis = match &e {
        ServerError::Redis(r) => Some(r),
        _ => None,
    };
    let code = redis.and_then(|r| r.code());
    let kind = redis.map(|r| r.kind());
    let refused = redis.is_some_and(|r| r.is_connection_refusal());
    let hint = if kind == Some(redis::ErrorKind::AuthenticationFailed) {
        "the server refused the user or password in the URL (redis://user:password@host:port/db)"
    } else if code == Some("NOAUTH") {
        "the server asks for a password: put it in the URL (redis://:password@host:port/, or \
         redis://user:password@host:port/ for an ACL user)"
    } else if code == Some("NOPERM") {
        "the user may not even PING: see docs/own-server.md for the ACL line"
    } else if refused {
        "nothing accepts connections there: is the server running, on this host and port?"
    } else if super::endpoint::is_tls(url) {
        "no TLS session with the server: does it listen for TLS on this port (tls-port), and is its \
         certificate signed by the --tls-ca given (and by a name or IP matching the URL's host)?"
    } else {
        "the server did not answer as Redis does: is this the server's port, and does it speak \
         plain TCP (for TLS use rediss:// with --tls-ca)?"
    };
    ServerError::Unreachable(Box::new(Unreachable {
        url: shown.to_string(),
        hint: hint.to_string(),
        cause,
    }))
}

fn missing(
    user: &str,
    experiment: &str,
    command: &[String],
    rule: &str,
    denied: &str,
) -> ServerError {
    // A refused key, not a refused command: the key pattern is what is missing.
    let rule = match denied.contains(" key") {
        true => KEY_PATTERN,
        false => rule,
    };
    ServerError::Permission(Box::new(Denied {
        user: user.to_string(),
        experiment: experiment.to_string(),
        command: command[..command.len().min(2)].join(" "),
        rule: rule.to_string(),
        denied: denied.to_string(),
    }))
}
