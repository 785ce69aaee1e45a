//! An error and its causes as text, each cause once. ratelab's error variants either display
//! their cause or expose it as `source()`, never both; some foreign errors (redis, serde_json)
//! do both, so a cause the message before it already ends with is dropped here.

use std::error::Error;

/// The messages of `err` and of every cause under it, outermost first, without repeats.
pub fn messages<'a>(chain: impl IntoIterator<Item = &'a (dyn Error + 'static)>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for err in chain {
        let text = err.to_string();
        let repeated = out.last().is_some_and(|last| last.ends_with(&text));
        if !repeated && !text.is_empty() {
            out.push(text);
        }
    }
    out
}

/// `err` and its causes on one line, `outer: inner: innermost`: for a reason kept in a report
/// or a CSV, where the lines main prints for a failed command do not fit.
pub fn one_line(err: &(dyn Error + 'static)) -> String {
    messages(std::iter::successors(Some(err), |&e| e.source())).join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("reading {path}")]
    struct Reading {
        path: &'static str,
        source: std::io::Error,
    }

    /// Displays its source and exposes it too, as some foreign errors do.
    #[derive(Debug, thiserror::Error)]
    #[error("wrapped: {0}")]
    struct Doubling(#[source] std::io::Error);

    #[test]
    fn every_cause_is_named_once() {
        let io = || std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let err = Reading {
            path: "x.csv",
            source: io(),
        };
        assert_eq!(one_line(&err), "reading x.csv: no such file");
        assert_eq!(one_line(&Doubling(io())), "wrapped: no such file");
    }
}
