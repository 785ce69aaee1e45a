//! What a library promises, not its algorithm: whether it fails open or closed on its own while
//! Redis is dead or hung, reconnects by itself, survives the loss of its script, follows a
//! promotion. A manifest declares each once, quoting the library's own documentation:
//!
//! ```toml
//! [promises.fails]
//! value = "open"                    # open | closed
//! quote = "the library's own words" # copied from its documentation, word for word
//! source = "where they are written"  # a URL or a path in its repository
//!
//! [promises.survives-script-loss]
//! value = false                     # reconnects | survives-script-loss | follows-promotion: bool
//! quote = "..."
//! source = "..."
//! ```
//!
//! Undeclared, the recoveries are ratelab's baseline (a limiter that never decides again is
//! broken whatever its documentation says) and failing open or closed is not judged (either is a
//! choice). Declared true or a side, the claim carries the quote; declared false, the limiter is
//! not judged on it.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// What a promise is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Promised {
    /// While Redis is dead or hung, the library answers by itself: `open` admits, `closed` denies.
    Fails,
    /// After Redis restarts or resumes, it decides again without the application's help.
    Reconnects,
    /// After its script is lost (a restart, SCRIPT FLUSH, a replica that never loaded it), it
    /// loads it again by itself.
    SurvivesScriptLoss,
    /// After a Sentinel promotion, its client finds the new primary and decides there.
    FollowsPromotion,
}

impl Promised {
    const NAMES: &'static [(&'static str, Promised)] = &[
        ("fails", Promised::Fails),
        ("reconnects", Promised::Reconnects),
        ("survives-script-loss", Promised::SurvivesScriptLoss),
        ("follows-promotion", Promised::FollowsPromotion),
    ];

    pub fn name(self) -> &'static str {
        (Self::NAMES.iter())
            .find(|(_, p)| *p == self)
            .map_or("?", |(n, _)| n)
    }

    /// The values a manifest may give it.
    fn values(self) -> &'static [&'static str] {
        match self {
            Promised::Fails => &["open", "closed"],
            _ => &["true", "false"],
        }
    }
}

impl fmt::Display for Promised {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Promised {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        (Self::NAMES.iter())
            .find(|(n, _)| *n == s)
            .map(|(_, p)| *p)
            .ok_or_else(|| {
                let valid: Vec<&str> = Self::NAMES.iter().map(|(n, _)| *n).collect();
                format!("promises.{s}: valid: {}", valid.join(", "))
            })
    }
}

/// One promise as the manifest declares it and promises.csv records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Promise {
    pub promise: Promised,
    /// `open` or `closed` for `fails`; `true` or `false` for the others.
    pub value: String,
    /// The library's own documentation, word for word.
    pub quote: String,
    /// Where the quote is written (a URL, or a path in the library's repository).
    pub source: String,
}

impl Promise {
    /// Whether it promises the behaviour (a side of `fails` is a promise too).
    pub fn is_made(&self) -> bool {
        self.value != "false"
    }
}

/// A manifest's `[promises.<name>]` table, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Written {
    pub value: toml::Value,
    pub quote: String,
    pub source: String,
}

/// Checks one declared promise; the message names what is wrong.
pub fn parse(name: &str, written: &Written) -> Result<Promise, String> {
    let promise: Promised = name.parse()?;
    let value = match &written.value {
        toml::Value::String(s) => s.clone(),
        toml::Value::Boolean(b) => b.to_string(),
        other => other.to_string(),
    };
    if !promise.values().contains(&value.as_str()) {
        return Err(format!(
            "promises.{name}.value = {}: valid: {}",
            written.value,
            promise.values().join(", ")
        ));
    }
    let quote = written.quote.trim();
    if quote.is_empty() || written.source.trim().is_empty() {
        return Err(format!(
            "promises.{name}: `quote` (the library's own words) and `source` (where they are written) are \
             both needed: a promise is judged as the documentation states it"
        ));
    }
    Ok(Promise {
        promise,
        value,
        quote: quote.to_string(),
        source: written.source.trim().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(value: toml::Value, quote: &str) -> Written {
        Written {
            value,
            quote: quote.into(),
            source: "README.md".into(),
        }
    }

    #[test]
    fn a_promise_needs_a_known_name_a_valid_value_and_its_quote() {
        let open = parse("fails", &written("open".into(), "it fails open")).unwrap();
        assert!(open.is_made() && open.value == "open");
        let no = parse("reconnects", &written(false.into(), "call reconnect()")).unwrap();
        assert!(!no.is_made());
        let err = parse("fails", &written(true.into(), "x")).unwrap_err();
        assert!(err.contains("valid: open, closed"), "{err}");
        let err = parse("heals", &written(true.into(), "x")).unwrap_err();
        assert!(err.contains("valid: fails, reconnects"), "{err}");
        let err = parse("reconnects", &written(true.into(), " ")).unwrap_err();
        assert!(err.contains("`quote`"), "{err}");
    }
}
