//! cluster's charts, from cluster.csv alone: the outcome of every variant per phase, the
//! undeclared script's outcome per (base node, derived node) pair, and who changed at the reshard.

use super::{CallRow, Variant, CALLS};
use crate::charts::spec::Rgb;
use crate::charts::stacked::{self, Panel, StackedChart};
use crate::charts::{index_of, read_file, write_spec, ChartError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const OK: Rgb = Rgb(76, 175, 80);
const NON_LOCAL: Rgb = Rgb(229, 57, 53);
const CROSS_SLOT: Rgb = Rgb(255, 152, 0);
const OTHER: Rgb = Rgb(120, 120, 120);

/// Renders outcome, node_pairs and (when the run resharded) reshard, as SVG and PNG.
pub(crate) fn render(dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let rows = read_file(&CALLS, dir)?;
    let mut written = write_spec(dir, "outcome", &stacked::spec(outcome(&rows)))?;
    if rows.iter().any(|r| r.nodes > 1) {
        written.extend(write_spec(
            dir,
            "node_pairs",
            &stacked::spec(node_pairs(&rows)),
        )?);
    }
    if let Some(chart) = reshard(&rows) {
        written.extend(write_spec(dir, "reshard", &stacked::spec(chart))?);
    }
    Ok(written)
}

/// One panel per phase, a bar per variant split by outcome.
fn outcome(rows: &[CallRow]) -> StackedChart<'static> {
    let mut phases: Vec<String> = Vec::new();
    let mut counts: Vec<Vec<(Variant, [f64; 4])>> = Vec::new();
    for r in rows {
        let p = index_of(&mut phases, r.phase.clone());
        if p == counts.len() {
            counts.push(Vec::new());
        }
        let v = match counts[p].iter().position(|c| c.0 == r.variant) {
            Some(v) => v,
            None => {
                counts[p].push((r.variant, [0.0; 4]));
                counts[p].len() - 1
            }
        };
        let segment = match r.error_kind.as_str() {
            "" => 0,
            "non-local-key" => 1,
            "cross-slot" => 2,
            _ => 3,
        };
        counts[p][v].1[segment] += 1.0;
    }
    let panels = phases.into_iter().zip(counts).map(|(name, bars)| Panel {
        name,
        bars: bars
            .into_iter()
            .map(|(v, c)| {
                let note = failed_note(c[1] + c[2] + c[3], c.iter().sum());
                (v.to_string(), c.to_vec(), note)
            })
            .collect(),
    });
    StackedChart {
        title: "cluster: what each script variant answered, per phase",
        subtitle:
            "users per outcome: one call per user and variant; errors named by the server's text"
                .into(),
        x_desc: "script variant",
        y_desc: "users",
        segments: vec![
            ("ok", OK),
            ("non local key in a cluster node", NON_LOCAL),
            ("keys that do not hash to the same slot", CROSS_SLOT),
            ("other error", OTHER),
        ],
        panels: panels.collect(),
    }
}

/// The undeclared script per (base node -> derived node), one panel per cluster phase.
fn node_pairs(rows: &[CallRow]) -> StackedChart<'static> {
    let mut panels: Vec<Panel> = Vec::new();
    let mut phases: Vec<String> = Vec::new();
    let mut pairs: Vec<BTreeMap<(String, String), [f64; 2]>> = Vec::new();
    for r in rows
        .iter()
        .filter(|r| r.nodes > 1 && r.variant == Variant::Undeclared)
    {
        let p = index_of(&mut phases, r.phase.clone());
        if p == pairs.len() {
            pairs.push(BTreeMap::new());
        }
        let pair = (port(&r.base_node), port(&r.derived_node));
        pairs[p].entry(pair).or_insert([0.0; 2])[usize::from(r.ok == 0)] += 1.0;
    }
    for (name, by_pair) in phases.into_iter().zip(pairs) {
        let bars = by_pair.into_iter().map(|((b, d), c)| {
            (
                format!("{b} -> {d}"),
                c.to_vec(),
                failed_note(c[1], c[0] + c[1]),
            )
        });
        panels.push(Panel {
            name,
            bars: bars.collect(),
        });
    }
    StackedChart {
        title: "cluster: the undeclared script per node pair",
        subtitle:
            "users by the node of their base key -> the node of the derived window key (ports)"
                .into(),
        x_desc: "base key's node -> derived key's node",
        y_desc: "users",
        segments: vec![("ok", OK), ("failed", NON_LOCAL)],
        panels,
    }
}

/// Per variant, how each user's outcome changed from the cluster phase to after the reshard.
fn reshard(rows: &[CallRow]) -> Option<StackedChart<'static>> {
    let before: BTreeMap<(Variant, u64), u8> = (rows.iter())
        .filter(|r| r.phase == "cluster")
        .map(|r| ((r.variant, r.user), r.ok))
        .collect();
    let mut variants: Vec<Variant> = Vec::new();
    let mut counts: Vec<[f64; 4]> = Vec::new();
    for r in rows.iter().filter(|r| r.phase == "reshard") {
        let Some(&was) = before.get(&(r.variant, r.user)) else {
            continue;
        };
        let v = index_of(&mut variants, r.variant);
        if v == counts.len() {
            counts.push([0.0; 4]);
        }
        let segment = match (was, r.ok) {
            (1, 1) => 0,
            (0, 0) => 1,
            (1, _) => 2,
            _ => 3,
        };
        counts[v][segment] += 1.0;
    }
    if variants.is_empty() {
        return None;
    }
    let bars = variants.iter().zip(counts).map(|(v, c)| {
        (
            v.to_string(),
            c.to_vec(),
            format!("{} changed", c[2] + c[3]),
        )
    });
    Some(StackedChart {
        title: "cluster: who changed when slots moved",
        subtitle:
            "users by their outcome before the reshard -> after it; the same keys in both phases"
                .into(),
        x_desc: "script variant",
        y_desc: "users",
        segments: vec![
            ("passed, passes", OK),
            ("failed, fails", OTHER),
            ("passed, now fails", NON_LOCAL),
            ("failed, now passes", Rgb(33, 150, 243)),
        ],
        panels: vec![Panel {
            name: "cluster -> reshard".into(),
            bars: bars.collect(),
        }],
    })
}

/// "662 of 1000 failed", or "all 1000 ok".
fn failed_note(failed: f64, users: f64) -> String {
    match failed {
        0.0 => format!("all {users} ok"),
        _ => format!("{failed} of {users} failed"),
    }
}

/// `host:port` -> `:port` (every node is on one host here; the port tells them apart).
fn port(node: &str) -> String {
    node.rsplit_once(':')
        .map_or(node.to_string(), |(_, p)| format!(":{p}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::csv_text;

    fn row(phase: &str, variant: Variant, user: u64, ok: bool, nodes: (&str, &str)) -> CallRow {
        CallRow {
            phase: phase.into(),
            variant,
            user,
            nodes: 3,
            expected_fail_fraction: 2.0 / 3.0,
            declared: "base".into(),
            base_key: format!("user:{user}"),
            base_slot: 1,
            base_node: nodes.0.into(),
            derived_key: format!("user:{user}:w1"),
            derived_slot: 2,
            derived_node: nodes.1.into(),
            same_node: u8::from(nodes.0 == nodes.1),
            same_slot: 0,
            sent_to: nodes.0.into(),
            ok: u8::from(ok),
            allowed: ok.then_some(1),
            error_kind: if ok { "" } else { "non-local-key" }.into(),
            non_local_key: u8::from(!ok),
            error: String::new(),
            predicted_fail: u8::from(!ok),
            as_predicted: 1,
        }
    }

    #[test]
    fn renders_every_chart_from_the_csv() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = ("127.0.0.1:7000", "127.0.0.1:7001");
        let rows = [
            row("cluster", Variant::Undeclared, 0, true, (a, a)),
            row("cluster", Variant::Undeclared, 1, false, (a, b)),
            row("reshard", Variant::Undeclared, 0, false, (b, a)),
            row("reshard", Variant::Undeclared, 1, true, (b, b)),
        ];
        let mut writer = csv::Writer::from_writer(Vec::new());
        for r in &rows {
            writer.serialize(r).unwrap();
        }
        let text = String::from_utf8(writer.into_inner().unwrap()).unwrap();
        let dir = crate::charts::csv_dir(tmp.path(), "cluster", CALLS.name(), &text);
        let paths = render(&dir).unwrap();
        assert_eq!(paths.len(), 6, "{paths:?}");
        let pairs = std::fs::read_to_string(dir.join("node_pairs.svg")).unwrap();
        assert!(pairs.contains(":7000 -&gt; :7001") || pairs.contains(":7000 -> :7001"));
        let change = reshard(&rows).unwrap();
        assert_eq!(change.panels[0].bars[0].1, [0.0, 0.0, 1.0, 1.0]);
        assert_eq!(change.panels[0].bars[0].2, "2 changed");
        assert_eq!(
            csv_text(&Variant::UndeclaredShebangAllowCrossSlot),
            "undeclared-shebang-allow-cross-slot"
        );
    }
}
