//! eviction's charts: per layout and policy, the share of limiter keys and of cache keys (with and
//! without an expiry) that survived the pressure; and what the limiter let through afterwards
//! beyond an exact bucket, per user, against a full bucket's capacity.

use super::{CELLS, USERS};
use crate::charts::read_file;
use std::path::{Path, PathBuf};

use super::{CellRow, UserClass, UserRow};
use crate::charts::bars::si;
use crate::charts::spec::{color, Marker};
use crate::charts::trials::{self, Category, Column, TrialChart};
use crate::charts::{index_of, mean, write_spec, ChartError};
use crate::record::csv_text;

const CLASSES: [&str; 3] = [
    "limiter buckets",
    "cache keys with expiry",
    "cache keys without",
];
const CLASSES_OF_USERS: [(UserClass, &str); 2] = [
    (UserClass::Emptied, "users who had emptied their bucket"),
    (UserClass::New, "users first seen after the pressure"),
];

/// Renders `eviction.svg`/`.png` from keys.csv and `eviction_overadmission.svg`/`.png` from
/// eviction.csv.
pub(crate) fn render(dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let cells = read_file(&CELLS, dir)?;
    let users = read_file(&USERS, dir)?;
    let mut out = write_spec(dir, "eviction", &trials::spec(survival(&cells)))?;
    out.extend(write_spec(
        dir,
        "eviction_overadmission",
        &trials::spec(over(&users)),
    )?);
    Ok(out)
}

/// "shared (allkeys-lru)": a slot's label, the layout over its policy.
fn label(layout: &super::Layout, policy: &super::EvictionPolicy) -> String {
    format!("{} ({})", csv_text(layout), csv_text(policy))
}

/// Rows grouped by slot label in first-seen order, each with its values.
fn grouped<R, K: PartialEq>(
    rows: &[R],
    key: impl Fn(&R) -> K,
    value: impl Fn(&R) -> f64,
) -> Vec<(K, Vec<f64>)> {
    let (mut keys, mut values): (Vec<K>, Vec<Vec<f64>>) = (Vec::new(), Vec::new());
    for r in rows {
        let i = index_of(&mut keys, key(r));
        values.resize_with(keys.len(), Vec::new);
        values[i].push(value(r));
    }
    keys.into_iter().zip(values).collect()
}

fn percent(v: f64) -> String {
    format!("{v:.0}%")
}

fn survival(cells: &[CellRow]) -> TrialChart<'static> {
    let by_class: [fn(&CellRow) -> f64; 3] = [
        |r| r.limiter_survived_fraction,
        |r| r.cache_ttl_survived_fraction,
        |r| r.cache_plain_survived_fraction,
    ];
    let groups: Vec<Vec<(String, Vec<f64>)>> = by_class
        .iter()
        .map(|f| grouped(cells, |r| label(&r.layout, &r.policy), |r| 100.0 * f(r)))
        .collect();
    let categories = (0..groups[0].len()).map(|slot| {
        let columns = groups
            .iter()
            .enumerate()
            .map(|(class, g)| Column::new(color(class), g[slot].1.clone(), percent));
        Category::new(groups[0][slot].0.clone(), columns.collect())
    });
    TrialChart {
        title: "eviction: which keys survive memory pressure, per store layout and policy",
        subtitle: "share of each key class still present after cache data of several times the free memory \
                   was written (one dot per trial); buckets were idle for over a second before"
            .to_string(),
        x_desc: "store layout (maxmemory-policy)",
        y_desc: "keys surviving (%)",
        y_format: percent,
        legend: CLASSES
            .iter()
            .enumerate()
            .map(|(i, name)| (Marker::Dot(color(i)), *name))
            .collect(),
        reference: None,
        categories: categories.collect(),
    }
}

fn over(users: &[UserRow]) -> TrialChart<'static> {
    // Per (cell, class, trial) the mean per user, so each trial is one dot on its class's bar.
    let per_trial = grouped(
        users,
        |r| (label(&r.layout, &r.policy), r.class, r.trial),
        |r| r.over_admitted as f64,
    );
    let mut labels = Vec::new();
    for r in users {
        index_of(&mut labels, label(&r.layout, &r.policy));
    }
    let categories = labels.into_iter().map(|name| {
        let columns = (CLASSES_OF_USERS.iter().enumerate())
            .map(|(i, (class, _))| {
                let dots: Vec<f64> = (per_trial.iter())
                    .filter(|((n, c, _), _)| n == &name && c == class)
                    .filter_map(|(_, v)| mean(v))
                    .collect();
                Column::new(color(i), dots, si)
            })
            .collect();
        Category::new(name, columns)
    });
    let capacity = users.first().map_or(0.0, |r| r.capacity as f64);
    TrialChart {
        title: "eviction: requests let through beyond an exact bucket, per user",
        subtitle: "after the pressure: a lost bucket comes back full; a write Redis refuses (OOM) is answered by \
                   the store's policy; one dot per trial"
            .to_string(),
        x_desc: "store layout (maxmemory-policy)",
        y_desc: "over-admitted per user",
        y_format: si,
        legend: CLASSES_OF_USERS
            .iter()
            .enumerate()
            .map(|(i, (_, name))| (Marker::Dot(color(i)), *name))
            .collect(),
        reference: Some((capacity, "capacity")),
        categories: categories.collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{EvictionPolicy, Layout};
    use super::*;

    fn cell(layout: Layout, policy: EvictionPolicy, limiter: f64) -> CellRow {
        CellRow {
            layout,
            policy,
            trial: 0,
            maxmemory_bytes: 1,
            used_before_bytes: 1,
            used_after_bytes: 1,
            cache_bytes_written: 1,
            evicted_on_limiter_server: 1,
            evicted_on_cache_server: 1,
            evicted_during_checks: 0,
            limiter_keys: 10,
            limiter_survived: (limiter * 10.0) as u64,
            limiter_lost: 10 - (limiter * 10.0) as u64,
            limiter_survived_fraction: limiter,
            cache_ttl_keys: 1,
            cache_ttl_survived: 1,
            cache_ttl_survived_fraction: 0.5,
            cache_plain_keys: 1,
            cache_plain_survived: 1,
            cache_plain_survived_fraction: 1.0,
            cache_write_errors: 0,
            cache_first_error: String::new(),
            limiter_error: String::new(),
            limiter_oom: 0,
            store_policy: "fail-open".into(),
            pressure_ms: 1.0,
            growth_users: 0,
            growth_refused: 0,
            limiter_maxmemory_bytes: 1,
        }
    }

    #[test]
    fn one_slot_per_cell_with_a_bar_per_key_class() {
        let rows = [
            cell(Layout::Shared, EvictionPolicy::AllkeysLru, 0.1),
            cell(Layout::Dedicated, EvictionPolicy::VolatileTtl, 1.0),
            cell(Layout::Shared, EvictionPolicy::AllkeysLru, 0.3),
        ];
        let c = survival(&rows);
        assert_eq!(c.categories.len(), 2);
        assert_eq!(c.categories[0].label, "shared (allkeys-lru)");
        let limiter = &c.categories[0].columns[0];
        assert!((limiter.mean - 20.0).abs() < 1e-9, "{}", limiter.mean);
        assert_eq!(limiter.trials.len(), 2);
        assert_eq!(c.categories[1].columns.len(), 3);
    }

    #[test]
    fn over_admission_is_one_dot_per_trial() {
        let user = |trial, over| UserRow {
            layout: Layout::Shared,
            policy: EvictionPolicy::AllkeysLru,
            trial,
            user: 0,
            class: UserClass::Emptied,
            capacity: 10,
            admitted_before: 10,
            key_survived: 0,
            checks_after: 10,
            allowed_after: 10,
            denied_after: 0,
            degraded_allowed_after: 0,
            degraded_denied_after: 0,
            admitted_after: 10,
            ideal_after: 0,
            over_admitted: over,
        };
        let c = over(&[user(0, 10), user(0, 0), user(1, 10)]);
        assert_eq!(c.categories.len(), 1);
        let column = &c.categories[0].columns[0];
        assert_eq!(column.trials, vec![5.0, 10.0]);
        assert!(
            c.categories[0].columns[1].trials.is_empty(),
            "no new users in these rows"
        );
        assert_eq!(c.reference.map(|r| r.0), Some(10.0));
    }
}
