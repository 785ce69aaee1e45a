//! How a manifest reads the decision out of its script's reply: `allowed` is a rule such as
//! `element 0 == 1`, `reply >= 0`, `element 0 <= {limit}`, `element 0 < element 1`,
//! `length <= {limit}`, `reply == OK`, `nil` or `not nil`; `remaining` and `retry_after_ms` pick
//! a number (`element 1`, `reply`, `length`), a time in another unit saying so (`element 2 in s`).
//! A reply the rule cannot be applied to is an error showing the reply, never a silent denial.

use super::super::LimitSpec;
use redis::Value;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;

/// Where in the reply a value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pick {
    /// The reply itself (an integer, a bulk or status string).
    Reply,
    /// Element `n` (from 0) of an array reply.
    Element(usize),
    /// How many elements an array reply has (a script that answers with a log's members).
    Length,
}

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// What a value is compared with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Operand {
    Number(f64),
    /// The limit of the run (`{limit}` or `{burst}`).
    Limit,
    /// A word, compared as text (`OK`, `allowed`).
    Word(String),
    /// Another number of the same reply (`element 1`, `length`): a script answering
    /// `{count, limit}` or `{remaining, limit}` says its limit itself.
    Reply(Pick),
}

/// How `allowed` is read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// Allowed when the reply is nil (a Lua `false` or `nil`), denied otherwise.
    Nil,
    /// Allowed unless the reply is nil.
    NotNil,
    Compare(Pick, Op, Operand),
}

impl Pick {
    /// Parses `reply`, `element N` or `length`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        match words.as_slice() {
            ["reply"] => Ok(Pick::Reply),
            ["length"] => Ok(Pick::Length),
            ["element", n] => n
                .parse()
                .map(Pick::Element)
                .map_err(|_| format!("`{n}` is not an element index (0, 1, ...)")),
            _ => Err(format!(
                "`{}`: expected `reply`, `element N` or `length`",
                text.trim()
            )),
        }
    }

    /// The picked value, or why the reply has none; a length is an integer.
    fn from(self, reply: &Value) -> Result<Cow<'_, Value>, String> {
        match (self, reply) {
            (Pick::Reply, Value::Array(_)) => {
                Err("the reply is an array: say `element N` or `length`".into())
            }
            (Pick::Reply, v) => Ok(Cow::Borrowed(v)),
            (Pick::Element(n), Value::Array(items)) => items
                .get(n)
                .map(Cow::Borrowed)
                .ok_or_else(|| format!("the reply has {} elements, no element {n}", items.len())),
            (Pick::Element(n), _) => Err(format!(
                "the reply is not an array, so it has no element {n}"
            )),
            (Pick::Length, Value::Array(items)) => Ok(Cow::Owned(Value::Int(items.len() as i64))),
            (Pick::Length, _) => Err("the reply is not an array, so it has no length".into()),
        }
    }

    /// The number there, or why there is none.
    pub fn number(self, reply: &Value) -> Result<f64, String> {
        let v = self.from(reply)?;
        number(&v).ok_or_else(|| format!("{} is not a number", describe(&v)))
    }
}

/// The unit a script answers a time in; ratelab keeps ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimeUnit {
    #[default]
    Ms,
    S,
    Us,
}

impl TimeUnit {
    fn parse(text: &str) -> Result<Self, String> {
        match text {
            "ms" => Ok(TimeUnit::Ms),
            "s" => Ok(TimeUnit::S),
            "us" => Ok(TimeUnit::Us),
            other => Err(format!("unit `{other}`: valid: s, ms, us")),
        }
    }

    /// `value` of this unit in ms.
    fn to_ms(self, value: f64) -> f64 {
        match self {
            TimeUnit::Ms => value,
            TimeUnit::S => value * 1000.0,
            TimeUnit::Us => value / 1000.0,
        }
    }
}

/// A time picked from the reply and the unit the script answers it in: `element 2` (ms), or
/// `element 2 in s` for a library that answers seconds (Retry-After's unit), converted to ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimePick {
    pub pick: Pick,
    #[serde(default)]
    pub unit: TimeUnit,
}

impl TimePick {
    /// Parses a pick, then optionally `in s`, `in ms` or `in us`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (pick, unit) = match text.rsplit_once(" in ") {
            Some((pick, unit)) => (pick, TimeUnit::parse(unit.trim())?),
            None => (text, TimeUnit::Ms),
        };
        Ok(TimePick {
            pick: Pick::parse(pick)?,
            unit,
        })
    }

    /// The time there in ms, or why there is none.
    pub fn ms(self, reply: &Value) -> Result<f64, String> {
        self.pick.number(reply).map(|n| self.unit.to_ms(n))
    }
}

impl Rule {
    /// Parses the text of `allowed`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let trimmed = text.trim();
        match trimmed {
            "nil" => return Ok(Rule::Nil),
            "not nil" => return Ok(Rule::NotNil),
            _ => {}
        }
        let ops = [
            ("==", Op::Eq),
            ("!=", Op::Ne),
            ("<=", Op::Le),
            (">=", Op::Ge),
            ("<", Op::Lt),
            (">", Op::Gt),
        ];
        let (at, sym, op) = (ops.iter())
            .filter_map(|&(sym, op)| trimmed.find(sym).map(|at| (at, sym, op)))
            .min_by_key(|&(at, sym, _)| (at, std::cmp::Reverse(sym.len())))
            .ok_or_else(|| {
                format!(
                    "`{text}`: expected `nil`, `not nil`, or `reply`, `element N` or `length`, \
                     then ==, !=, <, <=, > or >= and a number, {{limit}}, a word, `element N` or `length`"
                )
            })?;
        let pick = Pick::parse(&trimmed[..at])?;
        let right = trimmed[at + sym.len()..].trim();
        let operand = if right == "{limit}" || right == "{burst}" {
            Operand::Limit
        } else if let Ok(n) = right.parse::<f64>() {
            Operand::Number(n)
        } else if right.starts_with("element ") || right == "length" {
            Operand::Reply(Pick::parse(right)?)
        } else if !right.is_empty()
            && right
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            if !matches!(op, Op::Eq | Op::Ne) {
                return Err(format!("`{right}` is a word: only == and != compare words"));
            }
            Operand::Word(right.to_string())
        } else {
            return Err(format!(
                "`{right}`: expected a number, {{limit}}, a word, `element N` or `length`"
            ));
        };
        Ok(Rule::Compare(pick, op, operand))
    }

    /// Whether the reply means allowed, or why the rule cannot read it.
    pub fn allowed(&self, reply: &Value, spec: &LimitSpec) -> Result<bool, String> {
        if let Value::ServerError(e) = reply {
            return Err(format!(
                "the script answered an error: {}",
                describe_error(e)
            ));
        }
        match self {
            Rule::Nil => Ok(matches!(reply, Value::Nil)),
            Rule::NotNil => Ok(!matches!(reply, Value::Nil)),
            Rule::Compare(pick, op, operand) => {
                let v = pick.from(reply)?;
                let ordering = match operand {
                    Operand::Word(w) => {
                        let text =
                            text(&v).ok_or_else(|| format!("{} is not a word", describe(&v)))?;
                        let equal = text == *w;
                        return Ok(if *op == Op::Eq { equal } else { !equal });
                    }
                    Operand::Number(n) => compare(&v, *n)?,
                    Operand::Limit => compare(&v, spec.capacity as f64)?,
                    Operand::Reply(other) => compare(&v, other.number(reply)?)?,
                };
                use std::cmp::Ordering::*;
                Ok(match op {
                    Op::Eq => ordering == Equal,
                    Op::Ne => ordering != Equal,
                    Op::Lt => ordering == Less,
                    Op::Le => ordering != Greater,
                    Op::Gt => ordering == Greater,
                    Op::Ge => ordering != Less,
                })
            }
        }
    }
}

fn compare(v: &Value, n: f64) -> Result<std::cmp::Ordering, String> {
    let x = number(v).ok_or_else(|| format!("{} is not a number", describe(v)))?;
    x.partial_cmp(&n)
        .ok_or_else(|| format!("{x} cannot be compared"))
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Double(d) => Some(*d),
        Value::Boolean(b) => Some(f64::from(u8::from(*b))),
        other => text(other).and_then(|t| t.trim().parse().ok()),
    }
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        Value::Okay => Some("OK".into()),
        Value::Int(i) => Some(i.to_string()),
        _ => None,
    }
}

fn describe_error(e: &redis::ServerError) -> String {
    match e.details() {
        Some(d) => format!("{} {d}", e.code()),
        None => e.code().to_string(),
    }
}

/// A reply as a person reads it in an error message.
pub fn describe(v: &Value) -> String {
    struct Shown<'a>(&'a Value);
    impl fmt::Display for Shown<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self.0 {
                Value::Nil => f.write_str("nil"),
                Value::Int(i) => write!(f, "(integer) {i}"),
                Value::BulkString(b) => write!(f, "{:?}", String::from_utf8_lossy(b)),
                Value::SimpleString(s) => write!(f, "{s} (status)"),
                Value::Okay => f.write_str("OK (status)"),
                Value::Double(d) => write!(f, "(double) {d}"),
                Value::Boolean(b) => write!(f, "(boolean) {b}"),
                Value::Array(items) => {
                    f.write_str("[")?;
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            f.write_str(", ")?;
                        }
                        write!(f, "{}", Shown(item))?;
                    }
                    f.write_str("]")
                }
                Value::ServerError(e) => write!(f, "(error) {}", describe_error(e)),
                other => write!(f, "{other:?}"),
            }
        }
    }
    Shown(v).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int_array(v: &[i64]) -> Value {
        Value::Array(v.iter().map(|&i| Value::Int(i)).collect())
    }

    #[test]
    fn rules_read_arrays_integers_nil_and_status() {
        let spec = LimitSpec::default();
        let r = Rule::parse("element 0 == 1").unwrap();
        assert!(r.allowed(&int_array(&[1, 99, 0]), &spec).unwrap());
        assert!(!r.allowed(&int_array(&[0, 0, 5]), &spec).unwrap());
        let r = Rule::parse("element 0 <= {limit}").unwrap();
        assert!(r.allowed(&int_array(&[100]), &spec).unwrap());
        assert!(!r.allowed(&int_array(&[101]), &spec).unwrap());
        let r = Rule::parse("reply >= 0").unwrap();
        assert!(r.allowed(&Value::Int(0), &spec).unwrap());
        assert!(!r.allowed(&Value::Int(-1), &spec).unwrap());
        assert!(Rule::parse("nil")
            .unwrap()
            .allowed(&Value::Nil, &spec)
            .unwrap());
        assert!(!Rule::parse("nil")
            .unwrap()
            .allowed(&Value::Int(3), &spec)
            .unwrap());
        let r = Rule::parse("reply == OK").unwrap();
        assert!(r.allowed(&Value::Okay, &spec).unwrap());
        assert!(!r.allowed(&Value::Nil, &spec).is_ok_and(|a| a));
    }

    #[test]
    fn rules_compare_two_elements_and_read_an_arrays_length() {
        let spec = LimitSpec::default();
        // `{count, limit}` after counting this request: allowed while the count is within it.
        let r = Rule::parse("element 0 <= element 1").unwrap();
        assert!(r.allowed(&int_array(&[5, 5]), &spec).unwrap());
        assert!(!r.allowed(&int_array(&[6, 5]), &spec).unwrap());
        // A log's members: allowed while it holds at most the limit.
        let r = Rule::parse("length <= {limit}").unwrap();
        assert!(r.allowed(&int_array(&[1; 100]), &spec).unwrap());
        assert!(!r.allowed(&int_array(&[1; 101]), &spec).unwrap());
        let err = r.allowed(&Value::Nil, &spec).unwrap_err();
        assert!(err.contains("not an array, so it has no length"), "{err}");
        let err = Rule::parse("element 0 < element 2")
            .unwrap()
            .allowed(&int_array(&[1, 2]), &spec)
            .unwrap_err();
        assert!(err.contains("2 elements, no element 2"), "{err}");
    }

    #[test]
    fn picked_times_are_converted_to_ms() {
        let reply = Value::Array(vec![Value::Int(0), Value::BulkString(b"1.5".to_vec())]);
        let ms = |text: &str| TimePick::parse(text).unwrap().ms(&reply).unwrap();
        assert_eq!(ms("element 1 in s"), 1500.0);
        assert_eq!(ms("element 1"), 1.5);
        assert_eq!(ms("element 1 in us"), 0.0015);
        assert_eq!(ms("length in s"), 2000.0);
    }

    #[test]
    fn a_reply_the_rule_cannot_read_is_an_error_showing_it() {
        let spec = LimitSpec::default();
        let err = Rule::parse("element 3 == 1")
            .unwrap()
            .allowed(&int_array(&[1, 2]), &spec)
            .unwrap_err();
        assert!(err.contains("2 elements, no element 3"), "{err}");
        let err = Rule::parse("reply == 1")
            .unwrap()
            .allowed(&int_array(&[1]), &spec)
            .unwrap_err();
        assert!(err.contains("array"), "{err}");
        let err = Rule::parse("element 0 == 1")
            .unwrap()
            .allowed(&Value::Okay, &spec)
            .unwrap_err();
        assert!(err.contains("not an array"), "{err}");
        assert_eq!(describe(&int_array(&[1, 2])), "[(integer) 1, (integer) 2]");
    }

    #[test]
    fn bad_rules_say_what_was_expected() {
        assert!(Rule::parse("first == 1")
            .unwrap_err()
            .contains("expected `reply`, `element N` or `length`"));
        let err = Rule::parse("len(reply) <= 5").unwrap_err();
        assert!(
            err.contains("`len(reply)`: expected `reply`, `element N` or `length`"),
            "{err}"
        );
        let err = Rule::parse("element 0 < element one").unwrap_err();
        assert!(err.contains("`one` is not an element index"), "{err}");
        let err = Rule::parse("element 0 < [1]").unwrap_err();
        assert!(err.contains("`element N` or `length`"), "{err}");
        assert!(TimePick::parse("element 2 in hours")
            .unwrap_err()
            .contains("unit `hours`: valid: s, ms, us"));
        assert!(Rule::parse("reply").unwrap_err().contains("expected `nil`"));
        assert!(Rule::parse("reply < OK")
            .unwrap_err()
            .contains("only == and !="));
        assert!(Rule::parse("element x == 1")
            .unwrap_err()
            .contains("not an element index"));
        assert_eq!(
            Rule::parse("reply>=0").unwrap(),
            Rule::Compare(Pick::Reply, Op::Ge, Operand::Number(0.0))
        );
    }
}
