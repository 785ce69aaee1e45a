//! Reading a limiter manifest: a TOML file beside a `.lua` file that says how to call the script
//! without code. Every mistake is reported with the manifest's path and the line of the field.
//!
//! ```toml
//! name = "my-limiter"               # how CSVs, charts and the report name it
//! description = "what it is and what it is expected to show"
//! algorithm = "sliding-log"         # token-bucket | gcra | fixed-window | sliding-log | sliding-window
//! script = "my_limiter.lua"         # beside the manifest; with mode = "fcall", the library file
//! mode = "evalsha"                  # evalsha (EVAL on NOSCRIPT) | fcall (FUNCTION LOAD when missing)
//! function = "my_limiter"           # mode = "fcall" only
//! keys = ["{key}"]                  # KEYS templates
//! args = ["{limit}", "{window_ms}", "{now_ms}", "{request_id}"]
//! allowed = "element 0 == 1"        # or "reply >= 0", "element 0 <= {limit}", "nil", "reply == OK"
//! remaining = "element 1"           # optional
//! retry_after_ms = "element 2"      # optional
//! ```

use super::reply::{Pick, Rule};
use super::template::{Placeholder, Template};
use super::{Algorithm, CustomLimiter, ManifestError, Mode};
use serde::Deserialize;
use std::path::Path;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    name: Spanned<String>,
    #[serde(default)]
    description: String,
    algorithm: Spanned<String>,
    script: Spanned<String>,
    #[serde(default)]
    mode: Option<Spanned<String>>,
    #[serde(default)]
    function: Option<Spanned<String>>,
    keys: Spanned<Vec<Spanned<String>>>,
    #[serde(default)]
    args: Vec<Spanned<String>>,
    allowed: Spanned<String>,
    #[serde(default)]
    remaining: Option<Spanned<String>>,
    #[serde(default)]
    retry_after_ms: Option<Spanned<String>>,
}

/// Reads and checks the manifest at `path` and the script it names.
pub fn load(path: &Path) -> Result<CustomLimiter, ManifestError> {
    let text = std::fs::read_to_string(path).map_err(|e| ManifestError {
        manifest: path.display().to_string(),
        line: None,
        message: format!("cannot read it: {e}"),
    })?;
    parse(path, &text)
}

/// Checks a manifest's text; `path` names it in errors and places the script.
pub fn parse(path: &Path, text: &str) -> Result<CustomLimiter, ManifestError> {
    let at = |span: std::ops::Range<usize>, message: String| ManifestError {
        manifest: path.display().to_string(),
        line: Some(line_of(text, span.start)),
        message,
    };
    let file: File = toml::from_str(text).map_err(|e| ManifestError {
        manifest: path.display().to_string(),
        line: e.span().map(|s| line_of(text, s.start)),
        message: e.message().to_string(),
    })?;

    let name = file.name.get_ref();
    valid_name(name).map_err(|m| at(file.name.span(), m))?;
    let algorithm: Algorithm =
        (file.algorithm.get_ref().parse()).map_err(|m| at(file.algorithm.span(), m))?;
    let mode = match &file.mode {
        None => Mode::Evalsha,
        Some(m) => m.get_ref().parse().map_err(|e| at(m.span(), e))?,
    };
    let function = match (mode, &file.function) {
        (Mode::Fcall, Some(f)) => Some(f.get_ref().clone()),
        (Mode::Fcall, None) => {
            return Err(at(
                file.script.span(),
                "mode = \"fcall\" needs `function`".into(),
            ))
        }
        (Mode::Evalsha, Some(f)) => {
            return Err(at(
                f.span(),
                "`function` is for mode = \"fcall\" only".into(),
            ));
        }
        (Mode::Evalsha, None) => None,
    };

    let script_path = path
        .parent()
        .unwrap_or(Path::new("."))
        .join(file.script.get_ref());
    let source = std::fs::read_to_string(&script_path).map_err(|e| {
        at(
            file.script.span(),
            format!("cannot read {}: {e}", script_path.display()),
        )
    })?;
    if mode == Mode::Fcall && !source.starts_with("#!lua") {
        return Err(at(
            file.script.span(),
            "a function library must start with `#!lua name=<library>`".into(),
        ));
    }

    let template = |s: &Spanned<String>, what: String| {
        Template::parse(s.get_ref()).map_err(|m| at(s.span(), format!("{what}: {m}")))
    };
    if file.keys.get_ref().is_empty() {
        return Err(at(
            file.keys.span(),
            "at least one key: the limiter's state lives somewhere".into(),
        ));
    }
    let mut keys = Vec::new();
    for (i, k) in file.keys.get_ref().iter().enumerate() {
        let t = template(k, format!("keys[{i}]"))?;
        // Everything a run writes stays under its prefix, so it is deleted and never collides.
        if !t.uses(Placeholder::Key) && !t.uses(Placeholder::Prefix) {
            return Err(at(
                k.span(),
                format!(
                    "keys[{i}] = {:?} must contain {{key}} or {{prefix}}",
                    k.get_ref()
                ),
            ));
        }
        keys.push(t);
    }
    let args = (file.args.iter().enumerate())
        .map(|(i, a)| template(a, format!("args[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    let allowed = Rule::parse(file.allowed.get_ref())
        .map_err(|m| at(file.allowed.span(), format!("allowed: {m}")))?;
    let pick = |p: &Option<Spanned<String>>, what: &str| -> Result<Option<Pick>, ManifestError> {
        p.as_ref()
            .map(|s| Pick::parse(s.get_ref()).map_err(|m| at(s.span(), format!("{what}: {m}"))))
            .transpose()
    };
    Ok(CustomLimiter {
        name: name.clone(),
        description: file.description.trim().to_string(),
        algorithm,
        manifest: path.display().to_string(),
        script: file.script.get_ref().clone(),
        source,
        mode,
        function,
        keys,
        args,
        allowed_text: file.allowed.get_ref().clone(),
        allowed_line: line_of(text, file.allowed.span().start),
        allowed,
        remaining: pick(&file.remaining, "remaining")?,
        retry_after_ms: pick(&file.retry_after_ms, "retry_after_ms")?,
    })
}

/// A name CSVs and charts can carry: lowercase letters, digits, `-`, `_`, `.`; not a built-in's.
pub fn valid_name(name: &str) -> Result<(), String> {
    let ok_chars = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c));
    let starts = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric());
    if name.is_empty() || name.len() > 40 || !ok_chars || !starts {
        return Err(format!(
            "name `{name}`: 1-40 lowercase letters, digits, `-`, `_` or `.`, starting with a letter or digit"
        ));
    }
    if crate::limiter::Strategy::ALL
        .iter()
        .any(|s| s.name() == name)
    {
        return Err(format!(
            "name `{name}` is a built-in strategy's: name yours apart"
        ));
    }
    Ok(())
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"name = "t"
algorithm = "token-bucket"
script = "s.lua"
keys = ["{key}"]
args = ["{limit}", "{rate_per_s}"]
allowed = "element 0 == 1"
"#;

    fn with_script(manifest: &str) -> Result<CustomLimiter, ManifestError> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("s.lua"), "return {1}").unwrap();
        parse(&dir.path().join("m.toml"), manifest)
    }

    #[test]
    fn a_good_manifest_is_read() {
        let c = with_script(GOOD).unwrap();
        assert_eq!(
            (c.name.as_str(), c.algorithm, c.mode),
            ("t", Algorithm::TokenBucket, Mode::Evalsha)
        );
        assert_eq!((c.keys.len(), c.args.len(), c.allowed_line), (1, 2, 6));
        assert_eq!(c.source, "return {1}");
    }

    #[test]
    fn mistakes_name_the_line() {
        let cases = [
            (
                GOOD.replace("{rate_per_s}", "{rate}"),
                5,
                "unknown placeholder `{rate}`",
            ),
            (
                GOOD.replace("element 0 == 1", "first == 1"),
                6,
                "allowed: `first",
            ),
            (
                GOOD.replace("\"{key}\"", "\"fixed\""),
                4,
                "must contain {key} or {prefix}",
            ),
            (
                GOOD.replace("token-bucket", "leaky"),
                2,
                "unknown algorithm `leaky`",
            ),
            (GOOD.replace("s.lua", "missing.lua"), 3, "cannot read"),
            (
                GOOD.replace("name = \"t\"", "name = \"lua-bucket\""),
                1,
                "built-in",
            ),
            (format!("{GOOD}colour = 1\n"), 7, "unknown field `colour`"),
            (
                GOOD.replace("keys = [\"{key}\"]", "keys = []"),
                4,
                "at least one key",
            ),
            (
                format!("{GOOD}function = \"f\"\n"),
                7,
                "for mode = \"fcall\" only",
            ),
        ];
        for (text, line, needle) in cases {
            let err = with_script(&text).unwrap_err();
            assert_eq!(err.line, Some(line), "{err}");
            assert!(err.to_string().contains(needle), "{err}");
            assert!(
                err.to_string().contains(&format!("m.toml line {line}")),
                "{err}"
            );
        }
    }
}
