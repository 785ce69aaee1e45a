//! Experiment parameters: each experiment's TOML (embedded in the binary) holds a `quick` and a
//! `full` profile; `--set name=value` overrides one by name. Unknown names and bad values are
//! rejected with the list of valid names.

use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::context::Profile;

/// A parameter problem, phrased for the person who typed the command.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ParamError {
    #[error("unknown parameter `{name}` for {experiment}; valid names: {valid}")]
    Unknown {
        experiment: String,
        name: String,
        valid: String,
    },
    #[error("bad value for {experiment} parameter `{name}` ({value}): {reason}; {hint}")]
    BadValue {
        experiment: String,
        name: String,
        value: String,
        reason: String,
        /// What the parameter takes, with its profile's value as the example to follow.
        hint: String,
    },
    #[error("{experiment}: {reason}")]
    Invalid { experiment: String, reason: String },
    #[error("`--set {0}` must look like name=value")]
    Syntax(String),
    #[error("{experiment}: embedded parameter file is broken: {reason}")]
    Embedded { experiment: String, reason: String },
}

/// What `name` takes, shown by its profile's own value in `--set` form; a list or a text is quoted
/// for the shell, which would otherwise take its brackets and quotes.
fn value_hint(name: &str, current: &toml::Value) -> String {
    let kind = match current {
        toml::Value::Integer(_) => "an integer",
        toml::Value::Float(_) => "a number",
        toml::Value::Boolean(_) => "true or false",
        toml::Value::String(_) => "a text",
        toml::Value::Array(_) => "a list in TOML's brackets, its texts in double quotes",
        _ => "a value like its profile's",
    };
    let example = format!("{name}={current}");
    match current {
        toml::Value::Array(_) | toml::Value::String(_) => {
            format!("`{name}` takes {kind}, quoted for the shell: --set '{example}'")
        }
        _ => format!("`{name}` takes {kind}: --set {example}"),
    }
}

/// The header of an experiment's TOML.
#[derive(Debug, Clone, Deserialize)]
pub struct ExperimentInfo {
    pub id: String,
    pub seeds: Vec<String>,
    pub summary: String,
    /// What the experiment asks, in one sentence, for the report.
    #[serde(default)]
    pub question: String,
    /// Sentences meta.json carries for the reader; `{name}` is the parameter's value in the run.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// Reads the header (id, seeds, summary) of an embedded parameter file.
pub fn info(toml_text: &str) -> Result<ExperimentInfo, ParamError> {
    toml::from_str(toml_text).map_err(|e| ParamError::Embedded {
        experiment: "?".into(),
        reason: e.to_string(),
    })
}

/// A note with every `{name}` replaced by that parameter's value (strings without quotes).
pub fn fill_in(note: &str, table: &toml::Table) -> String {
    let mut out = note.to_string();
    for (name, value) in table {
        let text = match value {
            toml::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out = out.replace(&format!("{{{name}}}"), &text);
    }
    out
}

/// Splits `name=value`.
pub fn parse_set(arg: &str) -> Result<(String, String), ParamError> {
    match arg.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_string(), value.trim().to_string()))
        }
        _ => Err(ParamError::Syntax(arg.to_string())),
    }
}

/// A `--set` value as TOML (`5`, `1.5`, `true`, `["1x1","1x2"]`), else as a plain string.
fn parse_value(value: &str) -> toml::Value {
    toml::from_str::<toml::Table>(&format!("v = {value}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(value.to_string()))
}

/// Resolves a profile plus overrides into the experiment's Params, and the effective table.
/// Strategy names must be built-in ones or loaded custom limiters: a typo is an error.
pub fn resolve<P: DeserializeOwned>(
    experiment: &str,
    toml_text: &str,
    profile: Profile,
    sets: &[(String, String)],
) -> Result<(P, toml::Table), ParamError> {
    crate::limiter::with_strict_names(|| resolve_names(experiment, toml_text, profile, sets))
}

fn resolve_names<P: DeserializeOwned>(
    experiment: &str,
    toml_text: &str,
    profile: Profile,
    sets: &[(String, String)],
) -> Result<(P, toml::Table), ParamError> {
    let embedded = |reason: String| ParamError::Embedded {
        experiment: experiment.into(),
        reason,
    };
    let mut doc: toml::Table = toml::from_str(toml_text).map_err(|e| embedded(e.to_string()))?;
    let mut table = match doc.remove(profile.name()) {
        Some(toml::Value::Table(t)) => t,
        _ => return Err(embedded(format!("no [{}] table", profile.name()))),
    };
    let valid = table.keys().cloned().collect::<Vec<_>>().join(", ");
    for (name, value) in sets {
        if !table.contains_key(name) {
            return Err(ParamError::Unknown {
                experiment: experiment.into(),
                name: name.clone(),
                valid,
            });
        }
        let parsed = parse_value(value);
        // Check this one value in isolation so the error names it, not the whole table.
        let mut probe = table.clone();
        probe.insert(name.clone(), parsed.clone());
        if let Err(e) = toml::Value::Table(probe.clone()).try_into::<P>() {
            return Err(ParamError::BadValue {
                experiment: experiment.into(),
                name: name.clone(),
                value: value.clone(),
                reason: e.message().to_string(),
                hint: value_hint(name, &table[name]),
            });
        }
        table = probe;
    }
    let params = toml::Value::Table(table.clone())
        .try_into::<P>()
        .map_err(|e| embedded(e.to_string()))?;
    Ok((params, table))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct P {
        trials: u32,
        configs: Vec<String>,
        name: String,
    }

    const TOML: &str = r#"
id = "t"
seeds = ["000"]
summary = "s"
[quick]
trials = 2
configs = ["1x1"]
name = "a"
[full]
trials = 10
configs = ["1x1", "1x2"]
name = "a"
"#;

    fn sets(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn profiles_and_overrides() {
        let (p, _): (P, _) = resolve("t", TOML, Profile::Full, &[]).unwrap();
        assert_eq!(p.trials, 10);
        let s = sets(&[
            ("trials", "4"),
            ("configs", r#"["4x8"]"#),
            ("name", "plain words"),
        ]);
        let (p, table): (P, _) = resolve("t", TOML, Profile::Quick, &s).unwrap();
        assert_eq!(
            p,
            P {
                trials: 4,
                configs: vec!["4x8".into()],
                name: "plain words".into()
            }
        );
        assert_eq!(table["trials"].as_integer(), Some(4));
    }

    #[test]
    fn unknown_name_lists_valid_ones() {
        let err = resolve::<P>("t", TOML, Profile::Quick, &sets(&[("trails", "3")])).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("unknown parameter `trails`"), "{msg}");
        assert!(msg.contains("configs, name, trials"), "{msg}");
    }

    #[test]
    fn bad_value_names_the_parameter() {
        let err =
            resolve::<P>("t", TOML, Profile::Quick, &sets(&[("trials", "many")])).unwrap_err();
        assert!(
            matches!(err, ParamError::BadValue { ref name, .. } if name == "trials"),
            "{err}"
        );
        // The name was right: the message shows what it takes, not the list of names.
        let msg = err.to_string();
        assert!(
            msg.contains("`trials` takes an integer: --set trials="),
            "{msg}"
        );
        assert!(!msg.contains("valid names"), "{msg}");
    }

    #[test]
    fn set_syntax() {
        assert_eq!(parse_set("a=1").unwrap(), ("a".into(), "1".into()));
        assert_eq!(parse_set("a = x=y").unwrap(), ("a".into(), "x=y".into()));
        assert!(parse_set("novalue").is_err());
        assert!(parse_set("=3").is_err());
    }

    #[test]
    fn notes_take_the_parameters_of_the_run() {
        let table: toml::Table = toml::from_str("trials = 4\nname = \"a b\"").unwrap();
        assert_eq!(
            fill_in("{trials} trials of {name}, {other}", &table),
            "4 trials of a b, {other}"
        );
    }

    #[test]
    fn header_is_read() {
        assert_eq!(info(TOML).unwrap().seeds, vec!["000".to_string()]);
    }
}
