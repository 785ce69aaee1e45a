//! Reading a limiter manifest: a TOML file beside a `.lua` file that says how to call the script
//! without code. Every mistake is reported with the manifest's path and the line of the field.
//!
//! ```toml
//! name = "my-limiter"               # how CSVs, charts and the report name it
//! description = "what it is and what it is expected to show"
//! algorithm = "sliding-log"         # token-bucket | gcra | fixed-window | sliding-log | sliding-window
//! script = "my_limiter.lua"         # beside the manifest; with mode = "fcall", the library file
//! mode = "evalsha-eval"             # eval | evalsha | evalsha-eval | evalsha-load | fcall | fcall-load
//! function = "my_limiter"           # mode = "fcall" or "fcall-load" only
//! anchor = "epoch"                  # windows start at: epoch | origin | first-hit (window algorithms)
//! keys = ["{key}"]                  # KEYS templates, under the run's prefix (see `under_prefix`)
//! shared_keys = []                  # keys in `keys` that are not the client's ("", "global")
//! args = ["{limit}", "{window_ms}", "{now_ms}", "{request_id}"]
//! allowed = "element 0 == 1"        # or "reply >= 0", "element 0 <= {limit}", "nil", "reply == OK",
//!                                   # "element 0 <= element 1", "length <= {limit}"
//! remaining = "element 1"           # optional
//! retry_after_ms = "element 2"      # optional; "element 2 in s" for a script answering seconds
//! ```
//!
//! A manifest with `kind = "process"` names an adapter program instead (`command`, `algorithm`,
//! `anchor`; examples/adapters/PROTOCOL.md): a real library run as itself. Either kind may declare
//! what its library promises, each quoting its documentation (`[promises.fails]`, ...: [`promise`]).
//!
//! [`promise`]: super::promise

use super::promise::{self, Promise};
use super::reply::{Pick, Rule, TimePick};
use super::template::{Piece, Placeholder, Template};
use super::{Algorithm, Anchor, CustomLimiter, ManifestError, ProcessCommand};
use crate::limiter::Invocation;
use serde::Deserialize;
use std::path::Path;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    #[allow(dead_code)]
    kind: Option<Spanned<String>>,
    name: Spanned<String>,
    #[serde(default)]
    description: String,
    algorithm: Spanned<String>,
    script: Spanned<String>,
    #[serde(default)]
    mode: Option<Spanned<String>>,
    #[serde(default)]
    function: Option<Spanned<String>>,
    #[serde(default)]
    anchor: Option<Spanned<String>>,
    keys: Spanned<Vec<Spanned<String>>>,
    #[serde(default)]
    shared_keys: Vec<Spanned<String>>,
    #[serde(default)]
    args: Vec<Spanned<String>>,
    allowed: Spanned<String>,
    #[serde(default)]
    remaining: Option<Spanned<String>>,
    #[serde(default)]
    retry_after_ms: Option<Spanned<String>>,
    #[serde(default)]
    promises: Option<Spanned<Promises>>,
}

/// `[promises.<name>]` tables, in the order of their names.
type Promises = std::collections::BTreeMap<String, promise::Written>;

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
    if let Some(kind) = kind_of(text) {
        return match kind.get_ref().as_str() {
            "process" => parse_process(path, text, &at),
            "script" => parse_script(path, text, &at),
            other => Err(at(
                kind.span(),
                format!("kind `{other}`: valid: script, process"),
            )),
        };
    }
    parse_script(path, text, &at)
}

/// The manifest's `kind`, when it names one (a manifest that is not TOML fails in its parser).
fn kind_of(text: &str) -> Option<Spanned<String>> {
    #[derive(Deserialize)]
    struct Kind {
        kind: Option<Spanned<String>>,
    }
    toml::from_str::<Kind>(text).ok().and_then(|k| k.kind)
}

/// A process manifest: the adapter's program instead of a script (examples/adapters/PROTOCOL.md).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProcessFile {
    name: Spanned<String>,
    #[serde(default)]
    description: String,
    #[allow(dead_code)]
    kind: Spanned<String>,
    command: Spanned<Vec<String>>,
    algorithm: Spanned<String>,
    #[serde(default)]
    anchor: Option<Spanned<String>>,
    #[serde(default)]
    promises: Option<Spanned<Promises>>,
}

fn parse_process(path: &Path, text: &str, at: &At) -> Result<CustomLimiter, ManifestError> {
    let file: ProcessFile = toml::from_str(text).map_err(|e| ManifestError {
        manifest: path.display().to_string(),
        line: e.span().map(|s| line_of(text, s.start)),
        message: e.message().to_string(),
    })?;
    let name = file.name.get_ref();
    valid_name(name).map_err(|m| at(file.name.span(), m))?;
    let algorithm: Algorithm =
        (file.algorithm.get_ref().parse()).map_err(|m| at(file.algorithm.span(), m))?;
    let anchor = anchor(file.anchor.as_ref(), algorithm, at)?;
    if file.command.get_ref().first().is_none_or(|p| p.is_empty()) {
        return Err(at(
            file.command.span(),
            "command: the adapter's program and its arguments".into(),
        ));
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    Ok(CustomLimiter {
        name: name.clone(),
        description: file.description.trim().to_string(),
        algorithm,
        manifest: path.display().to_string(),
        script: file.command.get_ref().join(" "),
        source: String::new(),
        anchor,
        mode: Invocation::default(),
        function: None,
        keys: Vec::new(),
        key_notes: Vec::new(),
        args: Vec::new(),
        allowed: Rule::NotNil,
        allowed_text: String::new(),
        allowed_line: 0,
        remaining: None,
        retry_after_ms: None,
        process: Some(ProcessCommand {
            argv: file.command.get_ref().clone(),
            dir: dir.display().to_string(),
        }),
        promises: promises(file.promises.as_ref(), at)?,
    })
}

fn parse_script(path: &Path, text: &str, at: &At) -> Result<CustomLimiter, ManifestError> {
    let file: File = toml::from_str(text).map_err(|e| ManifestError {
        manifest: path.display().to_string(),
        line: e.span().map(|s| line_of(text, s.start)),
        message: e.message().to_string(),
    })?;

    let name = file.name.get_ref();
    valid_name(name).map_err(|m| at(file.name.span(), m))?;
    let algorithm: Algorithm =
        (file.algorithm.get_ref().parse()).map_err(|m| at(file.algorithm.span(), m))?;
    let anchor = anchor(file.anchor.as_ref(), algorithm, at)?;
    let (mode, function) = invocation(&file, at)?;

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
    if mode.uses_function() && !source.starts_with("#!lua") {
        return Err(at(
            file.script.span(),
            "a function library must start with `#!lua name=<library>`".into(),
        ));
    }

    let template = |s: &Spanned<String>, what: String| {
        Template::parse(s.get_ref()).map_err(|m| at(s.span(), format!("{what}: {m}")))
    };
    let (keys, key_notes) = keys(&file, at)?;
    let args = (file.args.iter().enumerate())
        .map(|(i, a)| template(a, format!("args[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    let allowed = Rule::parse(file.allowed.get_ref())
        .map_err(|m| at(file.allowed.span(), format!("allowed: {m}")))?;
    let remaining = (file.remaining.as_ref())
        .map(|s| remaining(s.get_ref()).map_err(|m| at(s.span(), format!("remaining: {m}"))))
        .transpose()?;
    let retry_after_ms = (file.retry_after_ms.as_ref())
        .map(|s| {
            TimePick::parse(s.get_ref()).map_err(|m| at(s.span(), format!("retry_after_ms: {m}")))
        })
        .transpose()?;
    Ok(CustomLimiter {
        name: name.clone(),
        description: file.description.trim().to_string(),
        algorithm,
        manifest: path.display().to_string(),
        script: file.script.get_ref().clone(),
        source,
        mode,
        anchor,
        function,
        keys,
        key_notes,
        args,
        allowed_text: file.allowed.get_ref().clone(),
        allowed_line: line_of(text, file.allowed.span().start),
        allowed,
        remaining,
        retry_after_ms,
        process: None,
        promises: promises(file.promises.as_ref(), at)?,
    })
}

/// The declared promises, each checked (its line is the `[promises]` table's).
fn promises(written: Option<&Spanned<Promises>>, at: &At) -> Result<Vec<Promise>, ManifestError> {
    let Some(written) = written else {
        return Ok(Vec::new());
    };
    (written.get_ref().iter())
        .map(|(name, w)| promise::parse(name, w).map_err(|m| at(written.span(), m)))
        .collect()
}

/// `remaining`: a count of requests, so a unit (`in s`) is a mistake said as one.
fn remaining(text: &str) -> Result<Pick, String> {
    match text.contains(" in ") {
        true => Err(format!(
            "`{text}`: a count of requests takes no unit (units are for retry_after_ms)"
        )),
        false => Pick::parse(text),
    }
}

/// Makes a manifest error at a span of the manifest's text.
type At<'a> = dyn Fn(std::ops::Range<usize>, String) -> ManifestError + 'a;

/// Where the windows start: only algorithms with windows take an anchor.
fn anchor(
    written: Option<&Spanned<String>>,
    algorithm: Algorithm,
    at: &At,
) -> Result<Anchor, ManifestError> {
    match written {
        None => Ok(Anchor::default()),
        Some(a) if !algorithm.has_windows() => Err(at(
            a.span(),
            format!(
                "anchor is for fixed-window and sliding-window; a {} has no windows",
                algorithm.name()
            ),
        )),
        Some(a) => a.get_ref().parse().map_err(|e| at(a.span(), e)),
    }
}

/// The invocation and, for FCALL, the function it calls.
fn invocation(file: &File, at: &At) -> Result<(Invocation, Option<String>), ManifestError> {
    let mode = match &file.mode {
        None => Invocation::EvalshaEval,
        Some(m) => m.get_ref().parse().map_err(|e| at(m.span(), e))?,
    };
    let mode_line = file.mode.as_ref().map_or(file.script.span(), |m| m.span());
    match (mode.uses_function(), &file.function) {
        (true, Some(f)) => Ok((mode, Some(f.get_ref().clone()))),
        (true, None) => Err(at(mode_line, format!("mode = \"{mode}\" needs `function`"))),
        (false, Some(f)) => Err(at(
            f.span(),
            "`function` is for mode = \"fcall\" or \"fcall-load\" only".into(),
        )),
        (false, None) => Ok((mode, None)),
    }
}

/// The KEYS templates, each under the run's prefix, with what was done to keep them there.
fn keys(file: &File, at: &At) -> Result<(Vec<Template>, Vec<String>), ManifestError> {
    let written = file.keys.get_ref();
    if written.is_empty() {
        return Err(at(
            file.keys.span(),
            "at least one key: the limiter's state lives somewhere".into(),
        ));
    }
    let shared: Vec<&str> = (file.shared_keys.iter())
        .map(|k| k.get_ref().as_str())
        .collect();
    if let Some(k) =
        (file.shared_keys.iter()).find(|k| !written.iter().any(|t| t.get_ref() == k.get_ref()))
    {
        return Err(at(
            k.span(),
            format!("shared_keys: {:?} is not one of `keys`", k.get_ref()),
        ));
    }
    let mut keys = Vec::new();
    let mut notes = Vec::new();
    for (i, k) in written.iter().enumerate() {
        let t =
            Template::parse(k.get_ref()).map_err(|m| at(k.span(), format!("keys[{i}]: {m}")))?;
        let (t, note) = under_prefix(t, i, k.get_ref(), &shared).map_err(|m| at(k.span(), m))?;
        keys.push(t);
        notes.extend(note);
    }
    Ok((keys, notes))
}

/// Keeps everything a run writes under its prefix (`ratelab:<id>:<start>:<pid>:`), so it is
/// deleted afterwards and stays inside a `--redis-url` user's `~ratelab:*`: a key template that
/// starts with `{key}` or `{prefix}` is used as written; one that names the client's key
/// elsewhere (`rate:{key}`, `{{key}}:tokens`) is written after `{prefix}`, and the note says so.
/// A key that is not the client's (a global key, a literal name, the empty string a library
/// passes for a disabled feature) must be declared in `shared_keys`: the empty string is sent as
/// it is, any other is written after `{prefix}` too.
fn under_prefix(
    t: Template,
    i: usize,
    text: &str,
    shared: &[&str],
) -> Result<(Template, Option<String>), String> {
    let starts_inside = matches!(
        t.pieces.first(),
        Some(Piece::Value(Placeholder::Key | Placeholder::Prefix))
    );
    if starts_inside {
        return Ok((t, None));
    }
    let clients = t.uses(Placeholder::Key) || t.uses(Placeholder::Prefix);
    let declared = shared.contains(&text);
    if !clients && !declared {
        return Err(format!(
            "keys[{i}] = {text:?} is not the client's key: it must contain {{key}} or {{prefix}}, or, if the \
             library passes it for every client, be declared in shared_keys = [{text:?}]"
        ));
    }
    if text.is_empty() {
        return Ok((
            t,
            Some(format!(
                "keys[{i}] = \"\" is sent as the empty string, as declared"
            )),
        ));
    }
    let mut pieces = vec![Piece::Value(Placeholder::Prefix)];
    pieces.extend(
        t.pieces
            .into_iter()
            .filter(|p| *p != Piece::Text(String::new())),
    );
    let note = format!(
        "keys[{i}] = {text:?} is written as \"{{prefix}}{text}\", under the run's key prefix{}",
        if clients {
            ""
        } else {
            " (a shared key, as declared)"
        }
    );
    Ok((Template { pieces }, Some(note)))
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
            ("t", Algorithm::TokenBucket, Invocation::EvalshaEval)
        );
        assert_eq!((c.keys.len(), c.args.len(), c.allowed_line), (1, 2, 6));
        assert_eq!(c.source, "return {1}");
    }

    #[test]
    fn keys_outside_the_prefix_are_written_under_it_and_said_so() {
        let text = GOOD.replace(
            "keys = [\"{key}\"]",
            "keys = [\"rate:{key}\", \"{{key}}:t\", \"global\", \"\", \"{prefix}x\"]\nshared_keys = [\"global\", \"\"]",
        );
        let c = with_script(&text).unwrap();
        let spec = crate::limiter::LimitSpec::default();
        let fill = super::super::template::Fill {
            key: "ratelab:race:abc:42:m:1",
            cost: 1,
            spec: &spec,
            now_us: 0,
            request_id: String::new(),
            rand: 0,
            rate_per_s: 0.0,
        };
        let keys: Vec<String> = (c.keys.iter())
            .map(|t| String::from_utf8(t.render(&fill)).unwrap())
            .collect();
        assert_eq!(
            keys,
            [
                "ratelab:race:abc:42:rate:ratelab:race:abc:42:m:1",
                "ratelab:race:abc:42:{ratelab:race:abc:42:m:1}:t",
                "ratelab:race:abc:42:global",
                "",
                "ratelab:race:abc:42:x",
            ]
        );
        assert_eq!(c.key_notes.len(), 4, "{:?}", c.key_notes);
        assert!(c.key_notes[0].contains("\"rate:{key}\" is written as \"{prefix}rate:{key}\""));
        assert!(c.key_notes[3].contains("empty string"));
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
                "must contain {key} or {prefix}, or, if the library passes it for every client, be declared",
            ),
            (
                format!("{GOOD}anchor = \"first-hit\"\n"),
                7,
                "a token-bucket has no windows",
            ),
            (
                format!("{GOOD}shared_keys = [\"other\"]\n"),
                7,
                "shared_keys: \"other\" is not one of `keys`",
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
                "for mode = \"fcall\" or \"fcall-load\" only",
            ),
            (
                format!("{GOOD}retry_after_ms = \"element 1 in minutes\"\n"),
                7,
                "retry_after_ms: unit `minutes`: valid: s, ms, us",
            ),
            (
                format!("{GOOD}remaining = \"element 1 in s\"\n"),
                7,
                "remaining: `element 1 in s`: a count of requests takes no unit",
            ),
            (
                GOOD.replace("element 0 == 1", "element 0 < elem 1"),
                6,
                "allowed: `elem 1`: expected a number, {limit}, a word, `element N` or `length`",
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
