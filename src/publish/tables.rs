//! Every CSV against a Table Schema: the one in datapackage.json (verify) and the row type's own
//! (publish refuses a CSV whose header is not its row type's). The cell rules are Frictionless's
//! for the types datapackage.json uses: integer, number, boolean, string, any; `required`,
//! `minimum` and `enum` constraints; the empty cell as the missing value.

use super::datapackage::frictionless_type;
use super::{Dataset, PublishError};
use crate::record::Table;
use serde::Deserialize;
use std::path::Path;

/// At most this many bad cells are named per file; the rest are counted.
const NAMED_PER_FILE: usize = 5;

/// One resource of datapackage.json, as far as verify reads it.
#[derive(Debug, Deserialize)]
pub struct Resource {
    pub name: String,
    pub path: String,
    pub bytes: Option<u64>,
    pub schema: Schema,
}

#[derive(Debug, Deserialize)]
pub struct Schema {
    pub fields: Vec<FieldSpec>,
}

/// A field descriptor.
#[derive(Debug, Deserialize)]
pub struct FieldSpec {
    pub name: String,
    #[serde(rename = "type", default = "any")]
    pub kind: String,
    #[serde(default)]
    pub constraints: Constraints,
    #[serde(rename = "trueValues", default = "true_values")]
    pub true_values: Vec<String>,
    #[serde(rename = "falseValues", default = "false_values")]
    pub false_values: Vec<String>,
}

fn any() -> String {
    "any".into()
}

fn true_values() -> Vec<String> {
    ["true", "True", "TRUE", "1"].map(String::from).to_vec()
}

fn false_values() -> Vec<String> {
    ["false", "False", "FALSE", "0"].map(String::from).to_vec()
}

#[derive(Debug, Default, Deserialize)]
pub struct Constraints {
    #[serde(default)]
    pub required: bool,
    pub minimum: Option<f64>,
    #[serde(rename = "enum")]
    pub one_of: Option<Vec<String>>,
}

impl FieldSpec {
    /// Why `cell` is not a value of this field, or None.
    fn reject(&self, cell: &str) -> Option<String> {
        if cell.is_empty() {
            return self
                .constraints
                .required
                .then(|| "is empty but required".into());
        }
        let number = match self.kind.as_str() {
            "integer" => match cell.parse::<i128>() {
                Ok(n) => Some(n as f64),
                Err(_) => return Some("is not an integer".into()),
            },
            "number" => match cell.parse::<f64>() {
                Ok(n) => Some(n),
                Err(_) => return Some("is not a number".into()),
            },
            "boolean" => {
                let known = self.true_values.iter().chain(&self.false_values);
                if !known.into_iter().any(|v| v == cell) {
                    return Some("is not a boolean".into());
                }
                None
            }
            "string" | "any" => None,
            other => return Some(format!("has a type verify does not know ({other})")),
        };
        if let (Some(n), Some(min)) = (number, self.constraints.minimum) {
            if n < min {
                return Some(format!("is below the minimum {min}"));
            }
        }
        match &self.constraints.one_of {
            Some(names) if !names.iter().any(|n| n == cell) => {
                Some(format!("is not one of {}", names.join(", ")))
            }
            _ => None,
        }
    }
}

/// Checks one CSV against its resource: size, header, every cell. Returns the rows read, or
/// every problem found (each a sentence naming the file).
pub fn check_csv(root: &Path, resource: &Resource) -> Result<u64, Vec<String>> {
    let path = root.join(&resource.path);
    let rel = &resource.path;
    let bytes = match std::fs::metadata(&path) {
        Ok(m) => m.len(),
        Err(_) => {
            return Err(vec![format!(
                "{rel}: missing (a resource of datapackage.json)"
            )])
        }
    };
    let mut problems = Vec::new();
    if let Some(expected) = resource.bytes.filter(|&b| b != bytes) {
        let how = if bytes < expected {
            "shorter: truncated or edited"
        } else {
            "longer: edited"
        };
        problems.push(format!(
            "{rel}: {bytes} bytes, datapackage.json says {expected} ({how})"
        ));
    }
    let mut reader = match csv::Reader::from_path(&path) {
        Ok(r) => r,
        Err(e) => return Err(vec![format!("{rel}: {e}")]),
    };
    let header: Vec<String> = match reader.headers() {
        Ok(h) => h.iter().map(str::to_string).collect(),
        Err(e) => return Err(vec![format!("{rel}: unreadable header: {e}")]),
    };
    let names: Vec<&str> = resource
        .schema
        .fields
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    if let Some(why) = header_differs(&header, &names) {
        problems.push(format!("{rel}: {why} (schema drift)"));
        return Err(problems);
    }
    let mut bad = 0usize;
    let mut rows = 0u64;
    for record in reader.records() {
        rows += 1;
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                problems.push(format!("{rel}: {e}"));
                return Err(problems);
            }
        };
        for (field, cell) in resource.schema.fields.iter().zip(record.iter()) {
            if let Some(why) = field.reject(cell) {
                bad += 1;
                if bad <= NAMED_PER_FILE {
                    let line = record.position().map_or(0, |p| p.line());
                    problems.push(format!(
                        "{rel} line {line}, column `{}`: {cell:?} {why} ({} in datapackage.json)",
                        field.name, field.kind
                    ));
                }
            }
        }
    }
    if bad > NAMED_PER_FILE {
        problems.push(format!("{rel}: {} more bad cells", bad - NAMED_PER_FILE));
    }
    if problems.is_empty() {
        Ok(rows)
    } else {
        Err(problems)
    }
}

/// A sentence on how a header differs from the expected column names, or None.
pub fn header_differs(header: &[String], expected: &[&str]) -> Option<String> {
    if header
        .iter()
        .map(String::as_str)
        .eq(expected.iter().copied())
    {
        return None;
    }
    let mut parts = Vec::new();
    for (i, (found, want)) in header.iter().zip(expected).enumerate() {
        if found != want {
            parts.push(format!(
                "column {} is `{found}` where the schema has `{want}`",
                i + 1
            ));
        }
    }
    if header.len() != expected.len() {
        parts.push(format!(
            "{} columns where the schema has {}",
            header.len(),
            expected.len()
        ));
    }
    Some(parts.join("; "))
}

/// Publishing refuses a CSV whose header is not its row type's: its schema would be a lie.
pub fn check_headers_against_row_types(dataset: &Dataset) -> Result<(), PublishError> {
    let mut problems = Vec::new();
    let experiment_tables = (dataset.present.iter()).flat_map(|p| {
        p.tables
            .iter()
            .map(|t| (format!("{}/{}", p.experiment.id(), t.file), *t))
    });
    let root_tables =
        (super::root_tables(&dataset.root).into_iter()).map(|t| (t.file.to_string(), t));
    for (rel, table) in experiment_tables.chain(root_tables) {
        {
            let header = csv::Reader::from_path(dataset.root.join(&rel)).and_then(|mut r| {
                r.headers()
                    .map(|h| h.iter().map(str::to_string).collect::<Vec<String>>())
            });
            match header {
                Ok(header) => {
                    if let Some(why) = header_differs(&header, table.columns) {
                        problems.push(format!("{rel}: {why}"));
                    }
                }
                Err(e) => problems.push(format!("{rel}: {e}")),
            }
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(PublishError::Drift(format!(
        "the CSVs are not what this build's row types write, so their schema cannot be \
         published (re-run the experiment, or publish with the ratelab that wrote them): {}",
        problems.join("; ")
    )))
}

/// How the schema in datapackage.json differs from this build's row type, or None.
pub fn schema_differs_from_row_type(resource: &Resource, table: &Table) -> Option<String> {
    let ours = table.fields();
    let theirs: Vec<(&str, &str)> = (resource.schema.fields.iter())
        .map(|f| (f.name.as_str(), f.kind.as_str()))
        .collect();
    let mine: Vec<(&str, &str)> = ours
        .iter()
        .map(|f| (f.name, frictionless_type(&f.kind)))
        .collect();
    if theirs == mine {
        return None;
    }
    let show = |v: &[(&str, &str)]| {
        v.iter()
            .map(|(n, t)| format!("{n}:{t}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Some(format!(
        "{}: datapackage.json's schema [{}] is not this build's row type [{}]",
        resource.path,
        show(&theirs),
        show(&mine)
    ))
}
