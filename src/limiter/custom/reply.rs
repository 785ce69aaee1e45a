//! How a manifest reads the decision out of its script's reply: `allowed` is a rule such as
//! `element 0 == 1`, `reply >= 0`, `element 0 <= {limit}`, `reply == OK`, `nil` or `not nil`;
//! `remaining` and `retry_after_ms` pick a number (`element 1`, `reply`). A reply the rule cannot
//! be applied to is an error showing the reply, never a silent denial.

use super::super::LimitSpec;
use redis::Value;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Where in the reply a value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pick {
    /// The reply itself (an integer, a bulk or status string).
    Reply,
    /// Element `n` (from 0) of an array reply.
    Element(usize),
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
    /// Parses `reply` or `element N`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        match words.as_slice() {
            ["reply"] => Ok(Pick::Reply),
            ["element", n] => n
                .parse()
                .map(Pick::Element)
                .map_err(|_| format!("`{n}` is not an element index (0, 1, ...)")),
            _ => Err(format!("`{text}`: expected `reply` or `element N`")),
        }
    }

    /// The picked value, or why the reply has none.
    fn from(self, reply: &Value) -> Result<&Value, String> {
        match (self, reply) {
            (Pick::Reply, Value::Array(_)) => Err("the reply is an array: say `element N`".into()),
            (Pick::Reply, v) => Ok(v),
            (Pick::Element(n), Value::Array(items)) => items
                .get(n)
                .ok_or_else(|| format!("the reply has {} elements, no element {n}", items.len())),
            (Pick::Element(n), _) => Err(format!(
                "the reply is not an array, so it has no element {n}"
            )),
        }
    }

    /// The number there, or why there is none.
    pub fn number(self, reply: &Value) -> Result<f64, String> {
        let v = self.from(reply)?;
        number(v).ok_or_else(|| format!("{} is not a number", describe(v)))
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
                    "`{text}`: expected `nil`, `not nil`, or `reply` or `element N`, \
                     then ==, !=, <, <=, > or >= and a value"
                )
            })?;
        let pick = Pick::parse(&trimmed[..at])?;
        let right = trimmed[at + sym.len()..].trim();
        let operand = if right == "{limit}" || right == "{burst}" {
            Operand::Limit
        } else if let Ok(n) = right.parse::<f64>() {
            Operand::Number(n)
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
            return Err(format!("`{right}`: expected a number, {{limit}} or a word"));
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
                            text(v).ok_or_else(|| format!("{} is not a word", describe(v)))?;
                        let equal = text == *w;
                        return Ok(if *op == Op::Eq { equal } else { !equal });
                    }
                    Operand::Number(n) => compare(v, *n)?,
                    Operand::Limit => compare(v, spec.capacity as f64)?,
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
            .contains("expected `reply` or `element N`"));
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
