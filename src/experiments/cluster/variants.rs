//! The script variants, the keys each gives a user, and one phase's calls: per variant and user
//! one EVAL, sent to the node owning `KEYS[1]`, and a row with both keys' placement and the reply.
//!
//! The harness routes each EVAL itself rather than through redis-rs's cluster client: the client
//! would send it to the same node (scripts route by their first key), but it follows MOVED and
//! ASK redirections and refreshes its slot map on the way, which would hide the node that answered;
//! sending to the owner by the map read for the phase records that node and its reply verbatim.

use super::topology::Topology;
use super::CallRow;
use crate::limiter::{unix_ms, LimitSpec, Limiter, Strategy};
use crate::record::CsvSink;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How the script finds its counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// The counter `KEYS[1] .. ':' .. window` built inside, no shebang (Redis's legacy mode:
    /// undeclared keys allowed when local, cross-slot allowed).
    Undeclared,
    /// The same with `#!lua`: undeclared keys in another slot than `KEYS[1]` are refused too.
    UndeclaredShebang,
    /// The same with `#!lua flags=allow-cross-slot-keys`: back to "local is enough".
    UndeclaredShebangAllowCrossSlot,
    /// The caller names the window's counter and passes it as `KEYS[1]` (the lua-window script).
    Declared,
    /// Undeclared, with a hash tag on the base key (`{user:42}`): the derived key shares its slot.
    Hashtag,
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::record::csv_text(self))
    }
}

const BUILT_INSIDE: &str = include_str!("lua/window_built_inside.lua");

impl Variant {
    /// The script's text: the shebang line is what tells the variants apart.
    fn script(self) -> String {
        match self {
            Variant::Undeclared | Variant::Hashtag => BUILT_INSIDE.to_string(),
            Variant::UndeclaredShebang => format!("#!lua\n{BUILT_INSIDE}"),
            Variant::UndeclaredShebangAllowCrossSlot => {
                format!("#!lua flags=allow-cross-slot-keys\n{BUILT_INSIDE}")
            }
            Variant::Declared => {
                let lua_window = Limiter::new(Strategy::LuaWindow, LimitSpec::default());
                lua_window
                    .script()
                    .map(|(source, _)| source)
                    .unwrap_or_default()
                    .to_string()
            }
        }
    }

    /// A user's base key.
    fn base_key(self, prefix: &str, user: u64) -> String {
        match self {
            Variant::Hashtag => format!("{prefix}{{user:{user}}}"),
            _ => format!("{prefix}user:{user}"),
        }
    }

    /// Whether placement says the call fails: on a cluster, an undeclared key elsewhere than
    /// `KEYS[1]`'s node (any script), or in another slot (`#!lua` without the flag).
    pub fn predicted_fail(self, cluster: bool, same_node: bool, same_slot: bool) -> bool {
        cluster
            && match self {
                Variant::Declared => false,
                Variant::UndeclaredShebang => !same_slot,
                Variant::Undeclared
                | Variant::UndeclaredShebangAllowCrossSlot
                | Variant::Hashtag => !same_node,
            }
    }
}

/// The window every phase of the run uses, fixed at the start so that every phase touches the
/// same derived keys (a change after the reshard is then one of placement only).
pub(super) struct Window {
    spec: LimitSpec,
    now_ms: u64,
}

impl Window {
    pub fn new(limit: u64, window_ms: u64) -> Window {
        let spec = LimitSpec {
            capacity: limit,
            window_ms,
            ..LimitSpec::default()
        };
        Window {
            spec,
            now_ms: unix_ms(),
        }
    }

    /// The counter of `base`'s window and the window's name (`w<index>`).
    fn derived(&self, base: &str) -> (String, String) {
        let derived = self.spec.window_key(base, self.now_ms);
        let name = derived[base.len() + 1..].to_string();
        (derived, name)
    }
}

/// Each call's outcome by (variant, user): whether it ran, and whether placement said it must fail.
pub(super) type Outcomes = BTreeMap<(String, u64), (u8, u8)>;

/// What one phase did.
pub(super) struct PhaseCalls {
    pub calls: u64,
    pub outcomes: Outcomes,
}

/// Calls sent to one node in one pipeline, at most: replies come back in order, errors included.
const PIPELINE: usize = 500;

/// Every variant for every user in `phase`, one row each. A variant's calls go to each node in
/// pipelines (each EVAL is answered on its own, errors included), so a phase takes a few round
/// trips instead of one per call.
pub(super) fn run_phase(
    topology: &mut Topology,
    phase: &str,
    variants: &[Variant],
    users: u64,
    prefix: &str,
    window: &Window,
    sink: &mut CsvSink<CallRow>,
) -> Result<PhaseCalls, crate::experiments::PhaseError> {
    let keys: Vec<String> = (variants.iter())
        .flat_map(|v| (0..users).map(move |u| v.base_key(prefix, u)))
        .flat_map(|base| [window.derived(&base).0, base])
        .collect();
    topology
        .check_slots(&keys)
        .map_err(crate::experiments::PhaseError::Invalid)?;
    let mut calls = 0;
    let mut outcomes = Outcomes::new();
    for &variant in variants {
        let script = variant.script();
        let mut rows: Vec<CallRow> = (0..users)
            .map(|u| placed(topology, phase, variant, u, prefix, window))
            .collect();
        let mut by_node: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, row) in rows.iter().enumerate() {
            by_node.entry(row.sent_to.clone()).or_default().push(i);
        }
        for (node, members) in by_node {
            for chunk in members.chunks(PIPELINE) {
                let mut pipe = redis::pipe();
                for &i in chunk {
                    pipe.add_command(eval(&script, &rows[i], window));
                }
                let replies: Vec<redis::RedisResult<Vec<i64>>> =
                    pipe.ignore_errors().query(topology.con(&node)?)?;
                for (&i, reply) in chunk.iter().zip(replies) {
                    record(&mut rows[i], reply)?;
                }
            }
        }
        for row in &rows {
            sink.write(row)?;
            let call = (crate::record::csv_text(&row.variant), row.user);
            outcomes.insert(call, (row.ok, row.predicted_fail));
        }
        calls += rows.len() as u64;
    }
    Ok(PhaseCalls { calls, outcomes })
}

/// A user's row before the call: both keys, their slots and nodes, and where the EVAL goes.
fn placed(
    topology: &Topology,
    phase: &str,
    variant: Variant,
    user: u64,
    prefix: &str,
    window: &Window,
) -> CallRow {
    let base_key = variant.base_key(prefix, user);
    let (derived_key, _) = window.derived(&base_key);
    let (base_slot, base_node) = topology.place(&base_key);
    let (derived_slot, derived_node) = topology.place(&derived_key);
    let declares_derived = variant == Variant::Declared;
    let sent_to = topology
        .place(if declares_derived {
            &derived_key
        } else {
            &base_key
        })
        .1;
    let nodes = topology.nodes();
    let (same_node, same_slot) = (base_node == derived_node, base_slot == derived_slot);
    let predicted = variant.predicted_fail(topology.map.is_some(), same_node, same_slot);
    CallRow {
        phase: phase.to_string(),
        variant,
        user,
        nodes,
        expected_fail_fraction: f64::from(nodes - 1) / f64::from(nodes),
        declared: if declares_derived { "derived" } else { "base" }.to_string(),
        base_key,
        base_slot,
        base_node,
        derived_key,
        derived_slot,
        derived_node,
        same_node: u8::from(same_node),
        same_slot: u8::from(same_slot),
        sent_to,
        ok: 0,
        allowed: None,
        error_kind: String::new(),
        non_local_key: 0,
        error: String::new(),
        predicted_fail: u8::from(predicted),
        as_predicted: 0,
    }
}

/// The EVAL of `row`'s call: `KEYS[1]` is the derived key when declared, else the base key.
fn eval(script: &str, row: &CallRow, window: &Window) -> redis::Cmd {
    let declared = if row.declared == "derived" {
        &row.derived_key
    } else {
        &row.base_key
    };
    let window_name = &row.derived_key[row.base_key.len() + 1..];
    let spec = &window.spec;
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(script)
        .arg(1)
        .arg(declared)
        .arg(spec.capacity)
        .arg(spec.window_ttl_ms())
        .arg(spec.ms_to_window_end(window.now_ms))
        .arg(window_name);
    cmd
}

/// Fills in the outcome: only a reply from the server is one; a lost connection or a timeout
/// ends the phase.
fn record(row: &mut CallRow, reply: redis::RedisResult<Vec<i64>>) -> Result<(), redis::RedisError> {
    match reply {
        Ok(reply) => {
            row.ok = 1;
            row.allowed = reply.first().map(|&a| u8::from(a == 1));
        }
        Err(e) if e.code().is_some() => row.error = server_text(&e),
        Err(e) => return Err(e),
    }
    row.error_kind = error_kind(&row.error).to_string();
    row.non_local_key = u8::from(row.error.contains(NON_LOCAL));
    row.as_predicted = u8::from((row.predicted_fail == 1) != (row.ok == 1));
    Ok(())
}

/// The error seed 002 quotes.
pub const NON_LOCAL: &str = "Script attempted to access a non local key in a cluster node";

/// The server's error reply as it sent it: its code, then its message.
fn server_text(e: &redis::RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        (Some(code), None) => code.to_string(),
        _ => e.to_string(),
    }
}

fn error_kind(error: &str) -> &'static str {
    match error {
        "" => "",
        e if e.contains(NON_LOCAL) => "non-local-key",
        e if e.contains("do not hash to the same slot") => "cross-slot",
        e if e.starts_with("MOVED") || e.starts_with("ASK") => "moved",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebangs_tell_the_undeclared_variants_apart_and_hash_tags_share_a_slot() {
        assert!(!Variant::Undeclared.script().starts_with("#!"));
        assert!(Variant::UndeclaredShebang.script().starts_with("#!lua\n"));
        let flagged = Variant::UndeclaredShebangAllowCrossSlot.script();
        assert!(flagged.starts_with("#!lua flags=allow-cross-slot-keys\n"));
        assert!(Variant::Declared.script().contains("INCR', KEYS[1]"));
        let window = Window::new(100, 60_000);
        let base = Variant::Hashtag.base_key("p:", 42);
        assert_eq!(base, "p:{user:42}");
        let (derived, name) = window.derived(&base);
        assert_eq!(derived, format!("{base}:{name}"));
        let slot = |k: &str| crate::server::key_slot(k.as_bytes());
        assert_eq!(slot(&derived), slot(&base));
    }

    #[test]
    fn placement_predicts_failures_per_variant() {
        use Variant::*;
        // (cluster, same node, same slot)
        assert!(
            !Undeclared.predicted_fail(false, false, false),
            "one Redis never fails"
        );
        assert!(Undeclared.predicted_fail(true, false, false));
        assert!(!Undeclared.predicted_fail(true, true, false));
        assert!(UndeclaredShebang.predicted_fail(true, true, false));
        assert!(!UndeclaredShebang.predicted_fail(true, true, true));
        assert!(!UndeclaredShebangAllowCrossSlot.predicted_fail(true, true, false));
        assert!(!Declared.predicted_fail(true, false, false));
        assert_eq!(
            error_kind(&format!("ERR {NON_LOCAL} script: x")),
            "non-local-key"
        );
        assert_eq!(error_kind("MOVED 1 127.0.0.1:7000"), "moved");
    }
}
