//! datapackage.json: a Frictionless Data Package, one tabular resource per CSV, each with the
//! Table Schema its row type declares ([`crate::record::Field`]): names, types, constraints,
//! units (a custom `unit` property) and descriptions; and claims.json, described by a JSON Schema.

use super::{checksums, Dataset, PublishError};
use crate::analysis::claims_json;
use crate::record::{Field, Kind, Table};
use serde_json::{json, Map, Value};

/// The write-ups the experiments reproduce, by seed id, with their titles as they open.
pub const SEEDS: &[(&str, &str)] = &[
    ("000", "When Redis goes away"),
    (
        "001",
        "Redis rate limiter let 3x the limit through: read-then-write race across pods",
    ),
    ("002", "Atomic rate limiting with Redis and Lua, measured"),
    ("003", "Chaos Testing Redis Failover for Limiters"),
];

/// A seed's title, or its id when this build does not know it.
pub fn seed_title(id: &str) -> String {
    match SEEDS.iter().find(|s| s.0 == id) {
        Some((_, title)) => format!("seed {id}: {title}"),
        None => format!("seed {id}"),
    }
}

/// The Frictionless Table Schema type of a column kind.
pub fn frictionless_type(kind: &Kind) -> &'static str {
    match kind {
        Kind::Integer { .. } => "integer",
        Kind::Number => "number",
        Kind::Boolean => "boolean",
        Kind::String | Kind::Enum(_) => "string",
        Kind::Any => "any",
    }
}

/// One field descriptor.
pub fn field_descriptor(field: &Field) -> Value {
    let mut d = Map::new();
    d.insert("name".into(), json!(field.name));
    d.insert("type".into(), json!(frictionless_type(&field.kind)));
    if let Some(text) = field.description {
        d.insert("description".into(), json!(text));
    }
    if let Some(unit) = &field.unit {
        d.insert("unit".into(), json!(unit));
    }
    if field.kind == Kind::Boolean {
        // What the csv crate writes, and nothing else.
        d.insert("trueValues".into(), json!(["true"]));
        d.insert("falseValues".into(), json!(["false"]));
    }
    let mut constraints = Map::new();
    constraints.insert("required".into(), json!(field.required));
    match &field.kind {
        Kind::Integer { unsigned: true } => {
            constraints.insert("minimum".into(), json!(0));
        }
        Kind::Enum(names) => {
            constraints.insert("enum".into(), json!(names));
        }
        _ => {}
    }
    d.insert("constraints".into(), Value::Object(constraints));
    Value::Object(d)
}

/// The resource name of `<experiment>/<file>`: lower case, `[a-z0-9._-]`, unique in the package.
pub fn resource_name(experiment: &str, file: &str) -> String {
    let stem = file.strip_suffix(".csv").unwrap_or(file);
    format!("{experiment}-{stem}")
        .to_lowercase()
        .chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '.' | '_' | '-' => c,
            _ => '-',
        })
        .collect()
}

/// One CSV's resource; `experiment` is None for a file at the root (claims.csv).
fn resource(
    dataset: &Dataset,
    experiment: Option<&str>,
    summary: &str,
    table: &Table,
) -> Result<Value, PublishError> {
    let (rel, name, title) = match experiment {
        Some(id) => (
            format!("{id}/{}", table.file),
            resource_name(id, table.file),
            format!("{id}: {}", table.file),
        ),
        None => {
            let stem = table.file.trim_end_matches(".csv");
            (
                table.file.to_string(),
                stem.to_string(),
                table.file.to_string(),
            )
        }
    };
    let path = dataset.root.join(&rel);
    let bytes = std::fs::read(&path).map_err(|e| PublishError::io(&path, e))?;
    let row = table.row_doc().unwrap_or("One row.");
    Ok(json!({
        "name": name,
        "path": rel,
        "profile": "tabular-data-resource",
        "title": title,
        "description": format!("{summary}. One row: {row}"),
        "format": "csv",
        "mediatype": "text/csv",
        "encoding": "utf-8",
        "bytes": bytes.len(),
        "hash": format!("sha256:{}", checksums::sha256_hex(&bytes)),
        "schema": {
            "fields": table.fields().iter().map(field_descriptor).collect::<Vec<_>>(),
            "missingValues": [""],
        },
    }))
}

/// claims.json's resource: not a table (Frictionless reads JSON tables only with an extra
/// package), so a data resource whose JSON Schema describes every field.
fn claims_json_resource(dataset: &Dataset) -> Result<Value, PublishError> {
    let path = dataset.root.join(claims_json::FILE);
    let bytes = std::fs::read(&path).map_err(|e| PublishError::io(&path, e))?;
    let properties: Map<String, Value> = (claims_json::FIELDS.iter())
        .map(|(name, kind, description)| {
            let types: Vec<&str> = kind.split('|').collect();
            (
                name.to_string(),
                json!({ "type": types, "description": description }),
            )
        })
        .collect();
    let required: Vec<&str> = claims_json::FIELDS.iter().map(|f| f.0).collect();
    Ok(json!({
        "name": "claims-json",
        "path": claims_json::FILE,
        "profile": "data-resource",
        "title": claims_json::FILE,
        "description": "The report's verdicts with their numbers as numbers: one entry per claim \
            of analysis/claims.toml (as in claims.csv), with the judged statistic's n, mean, min, \
            max and 95% interval, what the claim accepts and the unit.",
        "format": "json",
        "mediatype": "application/json",
        "encoding": "utf-8",
        "bytes": bytes.len(),
        "hash": format!("sha256:{}", checksums::sha256_hex(&bytes)),
        "jsonschema": {
            "type": "array",
            "items": {
                "type": "object",
                "required": required,
                "additionalProperties": false,
                "properties": properties,
            },
        },
    }))
}

/// The whole package.
pub fn build(dataset: &Dataset, created: &str) -> Result<Value, PublishError> {
    let mut seeds: Vec<String> = Vec::new();
    let mut resources = Vec::new();
    for p in &dataset.present {
        let info = p.experiment.info().ok();
        let summary = info.as_ref().map(|i| i.summary.clone()).unwrap_or_default();
        for seed in info.iter().flat_map(|i| i.seeds.iter()) {
            if !seeds.contains(seed) {
                seeds.push(seed.clone());
            }
        }
        for table in &p.tables {
            resources.push(resource(dataset, Some(p.experiment.id()), &summary, table)?);
        }
    }
    for table in super::root_tables(&dataset.root) {
        let what =
            "The report's verdicts: every claim of analysis/claims.toml judged on these CSVs";
        resources.push(resource(dataset, None, what, &table)?);
    }
    if dataset.root.join(claims_json::FILE).is_file() {
        resources.push(claims_json_resource(dataset)?);
    }
    seeds.sort();
    let ids: Vec<&str> = dataset.present.iter().map(|p| p.experiment.id()).collect();
    Ok(json!({
        // Not "tabular-data-package": claims.json is a JSON resource, described by a JSON Schema.
        "profile": "data-package",
        "name": dataset.name(),
        "title": dataset.title(),
        "description": format!(
            "Raw measurements (one CSV row per trial, request, second or sample), meta.json per \
             run, charts and the judged REPORT.md of the experiments {}. Charts, REPORT.md and \
             claims.csv redraw from the CSVs alone: `ratelab verify` checks that they do.",
            ids.join(", ")),
        "version": env!("CARGO_PKG_VERSION"),
        "created": created,
        "licenses": [{ "name": env!("CARGO_PKG_LICENSE"), "path": super::LICENSE,
            "title": format!("{} License", env!("CARGO_PKG_LICENSE")) }],
        "sources": seeds.iter().map(|s| json!({ "title": seed_title(s) })).collect::<Vec<_>>(),
        "keywords": ["redis", "rate limiting", "lua", "benchmark", "reproduction"],
        "ratelab": {
            "harness_version": env!("CARGO_PKG_VERSION"),
            "published_by_commit": crate::record::git_commit(),
            "experiments": ids,
        },
        "resources": resources,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_carry_types_constraints_and_units() {
        let field = Field {
            name: "latency_us",
            kind: Kind::Number,
            required: true,
            description: Some("The whole check."),
            unit: Some("µs".into()),
        };
        let d = field_descriptor(&field);
        assert_eq!(d["type"], "number");
        assert_eq!(d["unit"], "µs");
        assert_eq!(d["constraints"]["required"], true);
        let e = field_descriptor(&Field {
            name: "policy",
            kind: Kind::Enum(&["fail-open", "fail-closed"]),
            required: true,
            description: None,
            unit: None,
        });
        assert_eq!(e["type"], "string");
        assert_eq!(e["constraints"]["enum"][1], "fail-closed");
        assert_eq!(
            resource_name("window-edge", "window-edge.csv"),
            "window-edge-window-edge"
        );
    }
}
