//! `ratelab params <id>`: every parameter of an experiment with its type, its value in each
//! profile (and with `--set`), its unit and what it means, read from where the parameters are
//! defined: the `Params` struct (field types via build.rs, doc comments) and the experiment's
//! TOML (values, and the comment above a key where the field has no doc). `--set` is checked
//! exactly as `run` checks it.

use super::frame::Validate;
use super::params::{self, ParamError};
use super::{Definition, ExperimentError};
use crate::context::Profile;
use std::collections::BTreeMap;
use std::fmt::Write as _;

include!(concat!(env!("OUT_DIR"), "/param_types.rs"));

/// One parameter as `ratelab params` shows it.
#[derive(Debug, Clone)]
pub struct Parameter {
    pub name: String,
    /// The field's Rust type as written (`u64`, `Vec<Strategy>`).
    pub rust_type: String,
    pub quick: toml::Value,
    pub full: toml::Value,
    /// Its value in the profile asked for, after `--set`.
    pub chosen: toml::Value,
    /// The unit its name declares (`_ms`, `_bytes`, ...), as CSV columns get theirs.
    pub unit: Option<String>,
    /// The field's doc comment, else the TOML comment above the key.
    pub meaning: Option<String>,
}

/// Every parameter of one experiment, in the order its `Params` struct declares them.
#[derive(Debug, Clone)]
pub struct Parameters {
    pub id: &'static str,
    pub summary: String,
    pub profile: Profile,
    /// The `--set` names, as given.
    pub set: Vec<String>,
    pub parameters: Vec<Parameter>,
}

/// `D`'s parameters in `profile` with `sets` applied; a bad name or value is the error `run`
/// gives for it.
pub fn parameters<D: Definition>(
    profile: Profile,
    sets: &[(String, String)],
) -> Result<Parameters, ExperimentError> {
    let (chosen, table): (D::Params, _) = params::resolve(D::ID, D::TOML, profile, sets)?;
    chosen.validate().map_err(|reason| ParamError::Invalid {
        experiment: D::ID.into(),
        reason,
    })?;
    let (_, quick): (D::Params, _) = params::resolve(D::ID, D::TOML, Profile::Quick, &[])?;
    let (_, full): (D::Params, _) = params::resolve(D::ID, D::TOML, Profile::Full, &[])?;
    let path = std::any::type_name::<D::Params>();
    let types = (PARAM_TYPES.iter().find(|(p, _)| *p == path)).map_or(&[][..], |(_, t)| *t);
    let docs = crate::record::fields::row_doc::<D::Params>().map_or(&[][..], |d| d.fields);
    let comments = toml_comments(D::TOML);
    // The struct's order; a key the build did not see (no Params struct found) after it.
    let declared: Vec<&str> = types.iter().map(|(n, _)| *n).collect();
    let undeclared = (table.keys().map(String::as_str)).filter(|k| !declared.contains(k));
    let names: Vec<&str> = declared.iter().copied().chain(undeclared).collect();
    let value = |t: &toml::Table, name: &str| t.get(name).cloned().unwrap_or(toml::Value::from(""));
    let parameters = (names.into_iter())
        .map(|name| Parameter {
            name: name.to_string(),
            rust_type: (types.iter().find(|(n, _)| *n == name))
                .map_or("?", |(_, t)| t)
                .into(),
            quick: value(&quick, name),
            full: value(&full, name),
            chosen: value(&table, name),
            unit: crate::record::fields::unit_of(name),
            meaning: (docs.iter().find(|(n, _)| *n == name))
                .map(|(_, d)| d.to_string())
                .or_else(|| comments.get(name).cloned()),
        })
        .collect();
    Ok(Parameters {
        id: D::ID,
        summary: params::info(D::TOML).map(|i| i.summary).unwrap_or_default(),
        profile,
        set: sets.iter().map(|(n, _)| n.clone()).collect(),
        parameters,
    })
}

/// The comment lines right above each key of the profile tables (`[full]` first), one line; a
/// key without one gets the first such comment that names it in backticks (a comment above a
/// group of keys often describes the others too).
fn toml_comments(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut keys = Vec::new();
    let (mut in_profile, mut pending) = (false, Vec::new());
    for line in text.lines().map(str::trim) {
        if let Some(comment) = line.strip_prefix('#') {
            pending.push(comment.trim().to_string());
        } else if line.starts_with('[') {
            in_profile = line == "[full]" || line == "[quick]";
            pending.clear();
        } else if let (true, Some((key, _))) = (in_profile, line.split_once('=')) {
            keys.push(key.trim().to_string());
            if !pending.is_empty() {
                out.entry(key.trim().to_string())
                    .or_insert_with(|| pending.join(" "));
            }
            pending.clear();
        } else {
            pending.clear();
        }
    }
    let comments: Vec<String> = out.values().cloned().collect();
    for key in keys {
        let named = format!("`{key}`");
        if let Some(comment) = comments.iter().find(|c| c.contains(&named)) {
            out.entry(key).or_insert_with(|| comment.clone());
        }
    }
    out
}

/// A Rust type in the words of a parameter file.
pub fn type_words(rust: &str) -> String {
    if let Some(inner) = (rust.strip_prefix("Vec<")).and_then(|r| r.strip_suffix('>')) {
        return format!("list of {}", type_words(inner));
    }
    if let Some(inner) = (rust.strip_prefix("Option<")).and_then(|r| r.strip_suffix('>')) {
        return format!("{} (optional)", type_words(inner));
    }
    match rust {
        // An experiment may ask more (`trials` >= 1): its own check says so when a value is run.
        "u8" | "u16" | "u32" | "u64" | "usize" | "i8" | "i16" | "i32" | "i64" | "isize" => {
            "integer".into()
        }
        "f32" | "f64" => "number".into(),
        "bool" => "true or false".into(),
        "String" => "text".into(),
        other => other.to_string(),
    }
}

impl Parameters {
    /// The table `ratelab params` prints: name, type, unit, quick, full (and the run's values
    /// when `--set` changed any), each meaning on the line under its parameter.
    pub fn render(&self) -> String {
        let show_set = !self.set.is_empty();
        // The values as --set takes them (TOML); quick's only where it differs.
        let mut head: Vec<String> = ["name", "type", "unit", "quick", "full"]
            .map(String::from)
            .into();
        if show_set {
            head.push(format!("{} with --set", self.profile.name()));
        }
        let rows: Vec<Vec<String>> = (self.parameters.iter())
            .map(|p| {
                let mut row = vec![
                    p.name.clone(),
                    type_words(&p.rust_type),
                    p.unit.clone().unwrap_or_else(|| "-".into()),
                    match p.quick == p.full {
                        true => "= full".into(),
                        false => p.quick.to_string(),
                    },
                    p.full.to_string(),
                ];
                if show_set && self.set.contains(&p.name) {
                    row.push(p.chosen.to_string());
                }
                row
            })
            .collect();
        let widths: Vec<usize> = (0..head.len())
            .map(|i| {
                let cells = rows
                    .iter()
                    .filter_map(|r| r.get(i))
                    .map(|c| c.chars().count());
                cells.chain([head[i].len()]).max().unwrap_or(0)
            })
            .collect();
        let line = |cells: &[String]| {
            let padded: Vec<String> = (cells.iter().zip(&widths))
                .map(|(c, w)| format!("{c:<w$}"))
                .collect();
            padded.join("  ").trim_end().to_string()
        };
        let mut out = format!("{}: {}\n", self.id, self.summary);
        let _ = writeln!(
            out,
            "parameters of experiments/{}.toml, values as --set takes them; run with --profile {}\n",
            self.id,
            self.profile.name()
        );
        let _ = writeln!(out, "{}", line(&head));
        for (p, row) in self.parameters.iter().zip(&rows) {
            let _ = writeln!(out, "{}", line(row));
            let meaning = p
                .meaning
                .as_deref()
                .unwrap_or("(not described: give its Params field a doc comment)");
            let _ = writeln!(out, "    {meaning}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_means_the_comment_above_it_or_one_naming_it() {
        let text = "# header, not a parameter\nid = \"t\"\n[full]\n# Checks per trial.\nchecks = 5\n\
                    # The trace: `trace_in_flight` in flight.\ntrace_capacity = 3\ntrace_in_flight = 2\n\
                    trials = 4\n[quick]\n# Said only in quick.\ntrials = 1\n";
        let comments = toml_comments(text);
        assert_eq!(comments["checks"], "Checks per trial.");
        assert_eq!(comments["trace_capacity"], comments["trace_in_flight"]);
        assert_eq!(comments["trials"], "Said only in quick.");
        assert!(!comments.contains_key("id"));
    }

    #[test]
    fn types_read_as_a_parameter_file_would() {
        assert_eq!(type_words("Vec<u64>"), "list of integer");
        assert_eq!(type_words("Option<f64>"), "number (optional)");
        assert_eq!(type_words("Vec<Strategy>"), "list of Strategy");
    }
}
