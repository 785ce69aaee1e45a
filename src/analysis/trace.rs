//! Seed 000's MONITOR trace judged: the order of the commands on the traced bucket, and the
//! values its writes store.

use super::claim::Verdict;
use super::table::Row;

/// The commands MONITOR saw on the traced key, in order.
fn on_trace_key<'a>(rows: &[&'a Row]) -> Vec<&'a Row> {
    rows.iter()
        .copied()
        .filter(|r| r.get("on_trace_key").map(String::as_str) == Some("true"))
        .collect()
}

/// Seed 000's order: on the traced key, HMGET, HMGET, HSET, HSET from one client.
pub(super) fn order(rows: &[&Row]) -> Verdict {
    let on_key = on_trace_key(rows);
    if on_key.len() < 4 {
        return Verdict::no_data(format!("{} commands on the trace key", on_key.len()));
    }
    let first: Vec<&str> = on_key[..4]
        .iter()
        .map(|r| r.get("command").map(String::as_str).unwrap_or(""))
        .collect();
    // Later commands may come from the harness reading the final state; the order is about these four.
    let clients: std::collections::BTreeSet<&str> = on_key[..4]
        .iter()
        .map(|r| r.get("client").map(String::as_str).unwrap_or(""))
        .collect();
    let holds = first == ["HMGET", "HMGET", "HSET", "HSET"] && clients.len() == 1;
    Verdict {
        measured: format!(
            "first four: {}; {} client(s)",
            first.join(", "),
            clients.len()
        ),
        holds: Some(holds),
        ..Verdict::default()
    }
}

/// Seed 000's "both writes store the same decremented value": the HSETs on the traced key come
/// in pairs (two requests in flight), the two writes of a pair store one value, and each pair
/// stores one token less than the pair before (two requests spent one token), all from one
/// connection.
pub(super) fn writes(rows: &[&Row]) -> Verdict {
    let hsets: Vec<&Row> = on_trace_key(rows)
        .into_iter()
        .filter(|r| r.get("command").map(String::as_str) == Some("HSET"))
        .collect();
    let clients: std::collections::BTreeSet<Option<&String>> =
        hsets.iter().map(|r| r.get("client")).collect();
    let values: Vec<Option<f64>> = hsets
        .iter()
        .map(|r| r.get("args")?.split_whitespace().last()?.parse().ok())
        .collect();
    if values.len() < 2 {
        return Verdict::no_data(format!("{} writes on the trace key", values.len()));
    }
    let Some(values) = values.into_iter().collect::<Option<Vec<f64>>>() else {
        return Verdict::fails("a write on the trace key stores no number");
    };
    let pairs: Vec<&[f64]> = values.chunks(2).collect();
    let same = pairs
        .iter()
        .filter(|p| p.len() == 2 && p[0] == p[1])
        .count();
    let one_less = pairs
        .windows(2)
        .filter(|w| w[1][0] == w[0][0] - 1.0)
        .count();
    let shown: Vec<String> = pairs
        .iter()
        .map(|p| {
            p.iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(" = ")
        })
        .collect();
    Verdict {
        measured: format!(
            "writes stored {}; {same} of {} pairs store one value, {one_less} of {} one token below \
             the pair before; {} client(s)",
            shown.join(", "),
            pairs.len(),
            pairs.len() - 1,
            clients.len()
        ),
        holds: Some(same == pairs.len() && one_less == pairs.len() - 1 && clients.len() == 1),
        ..Verdict::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mk(cmd: &str, client: &str, args: &str) -> Row {
        [
            ("command", cmd),
            ("client", client),
            ("args", args),
            ("on_trace_key", "true"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
    }

    fn refs(rows: &[Row]) -> Vec<&Row> {
        rows.iter().collect()
    }

    #[test]
    fn trace_order_needs_one_client() {
        let good = [
            mk("HMGET", "a", "k tokens"),
            mk("HMGET", "a", "k tokens"),
            mk("HSET", "a", "k tokens 2"),
            mk("HSET", "a", "k tokens 2"),
        ];
        assert_eq!(order(&refs(&good)).holds, Some(true));
        let mut two = good.clone();
        two[1].insert("client".into(), "b".into());
        assert_eq!(order(&refs(&two)).holds, Some(false));
        let mut alternating = good.clone();
        alternating.swap(1, 2);
        assert_eq!(order(&refs(&alternating)).holds, Some(false));
    }

    #[test]
    fn writes_pair_on_one_value_a_token_apart() {
        let hset = |v: &str| mk("HSET", "a", &format!("k tokens {v}"));
        let good = [hset("2"), hset("2"), hset("1"), hset("1")];
        let v = writes(&refs(&good));
        assert_eq!(v.holds, Some(true), "{}", v.measured);
        // Two writes of different values: each request spent its own token.
        let apart = [hset("2"), hset("1"), hset("0"), hset("-1")];
        assert_eq!(writes(&refs(&apart)).holds, Some(false));
        // Pairs that skip a token, or a write left without its pair.
        let skip = [hset("2"), hset("2"), hset("0"), hset("0")];
        assert_eq!(writes(&refs(&skip)).holds, Some(false));
        let odd = [hset("2"), hset("2"), hset("1")];
        assert_eq!(writes(&refs(&odd)).holds, Some(false));
        let mut two_clients = good.clone();
        two_clients[1].insert("client".into(), "b".into());
        assert_eq!(writes(&refs(&two_clients)).holds, Some(false));
    }
}
