//! What each column of a row type holds, asked of the row type itself: its type from the
//! `Deserialize` impl (what the CSV reader will demand of a cell), its description from the
//! field's doc comment (collected by build.rs), its unit from the column's name (`_ms`, `_us`,
//! `_per_s`, ...). datapackage.json is written from this, so it cannot drift from the rows.

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};

/// A column's type, as the row type's `Deserialize` reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// An integer; `unsigned` when the Rust type is (a negative cell does not read).
    Integer { unsigned: bool },
    /// A float (`NaN` and `inf` read too).
    Number,
    /// `true` or `false`.
    Boolean,
    /// Any text.
    String,
    /// One of a fixed set of names (a unit-variant enum's serde names).
    Enum(&'static [&'static str]),
    /// Something the probe could not name (a custom `Deserialize`): any cell.
    Any,
}

/// One column of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub name: &'static str,
    pub kind: Kind,
    /// The row type cannot read an empty cell here (an `Option` or a text column can).
    pub required: bool,
    /// The field's doc comment, if it has one.
    pub description: Option<&'static str>,
    /// The unit its name declares (`ms`, `µs`, `s`, `B`, `%`, `1/s`, `µs/decision`, ...).
    pub unit: Option<String>,
}

/// The doc comments of one struct in src/, as build.rs found them.
pub struct RowDoc {
    pub path: &'static str,
    pub doc: &'static str,
    pub fields: &'static [(&'static str, &'static str)],
}

include!(concat!(env!("OUT_DIR"), "/row_docs.rs"));

/// The doc comments of row type `R`, if build.rs saw its definition.
pub fn row_doc<R>() -> Option<&'static RowDoc> {
    let path = std::any::type_name::<R>();
    ROW_DOCS.iter().find(|d| d.path == path)
}

/// What the columns every experiment shares mean, for a field without a doc comment of its own
/// (a row type's own doc always wins): names used the same way across the row types.
const COMMON: &[(&str, &str)] = &[
    (
        "strategy",
        "The limiter strategy (limiter::Strategy's serde name).",
    ),
    (
        "mode",
        "How the script is invoked (EVAL, EVALSHA, with fallbacks, FCALL).",
    ),
    (
        "policy",
        "What the store answers when Redis cannot: fail-open or fail-closed.",
    ),
    ("phase", "What was done to Redis before the phase's checks."),
    (
        "trial",
        "The trial's index, from 0, within its configuration.",
    ),
    ("run", "The run's index, from 0, within its configuration."),
    (
        "repeat",
        "The repetition's index, from 0, within its configuration.",
    ),
    (
        "pair",
        "The pair's index: runs of the compared tools back to back.",
    ),
    (
        "processes",
        "Load-generator processes (each one single-threaded event loop).",
    ),
    (
        "in_flight",
        "Requests in flight per process, sharing its connection.",
    ),
    ("clients", "Clients, each with its own connection."),
    ("keys", "Keys the load was spread over."),
    ("checks", "Limiter checks made."),
    ("requests", "Requests made."),
    ("offered", "Requests offered to the limiter."),
    ("decisions", "Limiter decisions made (allowed and denied)."),
    ("admitted", "Requests the limiter admitted."),
    ("allowed", "Requests the limiter allowed."),
    ("denied", "Requests the limiter denied."),
    ("refused", "Requests the limiter refused."),
    (
        "errors",
        "Checks that ended in an error instead of a decision.",
    ),
    ("limit", "The limit per window (a bucket's capacity)."),
    ("capacity", "The bucket's capacity."),
    ("count", "How many samples fell in the bucket."),
    ("seq", "The item's index, from 0, in its order."),
    (
        "elapsed_ms",
        "Wall time of the trial on the monotonic clock.",
    ),
    (
        "duration_s",
        "Wall time of the measured window on the monotonic clock.",
    ),
    (
        "decisions_per_s",
        "Decisions per second over the measured window.",
    ),
    (
        "ops_per_s",
        "Operations per second over the measured window.",
    ),
    (
        "redis_cpu_us",
        "Redis main-thread CPU (INFO used_cpu_*_main_thread) over the window.",
    ),
    ("cpu_us_per_decision", "Redis main-thread CPU per decision."),
    (
        "redis_busy_pct",
        "Redis main-thread CPU as a share of the window's wall time.",
    ),
    (
        "client_cpu_s",
        "CPU time the load generators used over the window.",
    ),
    ("p50_us", "Median latency."),
    ("p90_us", "90th-percentile latency."),
    ("p99_us", "99th-percentile latency."),
    ("p999_us", "99.9th-percentile latency."),
    ("max_us", "Highest latency."),
    ("mean_us", "Mean latency."),
    ("min_ms", "Lowest latency."),
    ("median_ms", "Median latency."),
    ("p99_ms", "99th-percentile latency."),
    ("max_ms", "Highest latency."),
    ("mean_ms", "Mean latency."),
    (
        "cooldown_ms",
        "How long the circuit breaker stays open (0 when off).",
    ),
    (
        "suspended_checks",
        "Checks during which the machine slept: their latency is not Redis's.",
    ),
];

fn common(name: &str) -> Option<&'static (&'static str, &'static str)> {
    COMMON.iter().find(|f| f.0 == name)
}

/// Every column of row type `R`, in CSV order.
pub fn fields<R: for<'de> Deserialize<'de>>() -> Vec<Field> {
    let doc = row_doc::<R>();
    (super::columns::<R>().iter())
        .map(|&name| {
            let mut probe = Probe::default();
            let _ = R::deserialize(OneField {
                name,
                probe: &mut probe,
            });
            let kind = probe.kind.unwrap_or(Kind::Any);
            let required = !probe.optional && !matches!(kind, Kind::String | Kind::Any);
            let description = (doc.and_then(|d| d.fields.iter().find(|f| f.0 == name)))
                // The common meanings are counts and measures, never a flag's.
                .or_else(|| (kind != Kind::Boolean).then(|| common(name)).flatten())
                .map(|f| f.1);
            Field {
                name,
                required,
                kind,
                description,
                unit: unit_of(name),
            }
        })
        .collect()
}

/// The unit a column's name declares by the project's naming: a unit word (`us`, `usec`, `ms`,
/// `s`, `bytes`, `pct`, `mb`) optionally followed by `per <thing>`, or `per_s` for a rate.
pub fn unit_of(name: &str) -> Option<String> {
    let words: Vec<&str> = name.split('_').collect();
    let unit = |w: &str| match w {
        "us" | "usec" => Some("µs"),
        "ms" => Some("ms"),
        "s" | "seconds" => Some("s"),
        "bytes" => Some("B"),
        "pct" => Some("%"),
        "mb" => Some("MB"),
        _ => None,
    };
    let (i, u) = (words.iter().enumerate()).find_map(|(i, w)| {
        let u = unit(w)?;
        // A bare `s` is a unit only at the end or before `per` (not a word of its own).
        let fits = *w != "s" || i + 1 == words.len() || words[i + 1] == "per";
        fits.then_some((i, u))
    })?;
    if i > 0 && words[i - 1] == "per" {
        return Some(format!("1/{u}"));
    }
    if i > 0 && words[i - 1] == "unix" {
        return Some(format!("{u} since the Unix epoch"));
    }
    match words.get(i + 1..) {
        Some(["per", rest @ ..]) if !rest.is_empty() => Some(format!("{u}/{}", rest.join(" "))),
        _ => Some(u.to_string()),
    }
}

/// What the probe learnt about one field.
#[derive(Default)]
struct Probe {
    kind: Option<Kind>,
    optional: bool,
}

/// The probe's only error: it stops the row's deserialization once the field is seen.
#[derive(Debug)]
struct Seen;

impl std::fmt::Display for Seen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("type probe")
    }
}

impl std::error::Error for Seen {}

impl de::Error for Seen {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Seen
    }
}

/// A row deserializer that offers one field, `name`, and watches how its value is asked for.
struct OneField<'a> {
    name: &'static str,
    probe: &'a mut Probe,
}

impl<'de> Deserializer<'de> for OneField<'_> {
    type Error = Seen;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Seen> {
        Err(Seen)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Seen> {
        visitor.visit_map(OneEntry {
            key: Some(self.name),
            probe: self.probe,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

struct OneEntry<'a> {
    key: Option<&'static str>,
    probe: &'a mut Probe,
}

impl<'de> MapAccess<'de> for OneEntry<'_> {
    type Error = Seen;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Seen> {
        match self.key.take() {
            Some(key) => seed
                .deserialize(de::value::BorrowedStrDeserializer::new(key))
                .map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Seen> {
        seed.deserialize(Value(self.probe))
    }
}

/// A cell's deserializer: records the first type asked for, then stops.
struct Value<'a>(&'a mut Probe);

impl Value<'_> {
    fn saw<T>(self, kind: Kind) -> Result<T, Seen> {
        self.0.kind.get_or_insert(kind);
        Err(Seen)
    }
}

macro_rules! probe_as {
    ($($method:ident => $kind:expr),* $(,)?) => {
        $(fn $method<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Seen> {
            self.saw($kind)
        })*
    };
}

impl<'de> Deserializer<'de> for Value<'_> {
    type Error = Seen;

    probe_as! {
        deserialize_bool => Kind::Boolean,
        deserialize_i8 => Kind::Integer { unsigned: false },
        deserialize_i16 => Kind::Integer { unsigned: false },
        deserialize_i32 => Kind::Integer { unsigned: false },
        deserialize_i64 => Kind::Integer { unsigned: false },
        deserialize_i128 => Kind::Integer { unsigned: false },
        deserialize_u8 => Kind::Integer { unsigned: true },
        deserialize_u16 => Kind::Integer { unsigned: true },
        deserialize_u32 => Kind::Integer { unsigned: true },
        deserialize_u64 => Kind::Integer { unsigned: true },
        deserialize_u128 => Kind::Integer { unsigned: true },
        deserialize_f32 => Kind::Number,
        deserialize_f64 => Kind::Number,
        deserialize_char => Kind::String,
        deserialize_str => Kind::String,
        deserialize_string => Kind::String,
        deserialize_any => Kind::Any,
        deserialize_bytes => Kind::Any,
        deserialize_byte_buf => Kind::Any,
        deserialize_unit => Kind::Any,
        deserialize_seq => Kind::Any,
        deserialize_map => Kind::Any,
        deserialize_identifier => Kind::Any,
        deserialize_ignored_any => Kind::Any,
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Seen> {
        self.0.optional = true;
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Seen> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Seen> {
        self.saw(Kind::Enum(variants))
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: V,
    ) -> Result<V::Value, Seen> {
        self.saw(Kind::Any)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, _: V) -> Result<V::Value, Seen> {
        self.saw(Kind::Any)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        _: V,
    ) -> Result<V::Value, Seen> {
        self.saw(Kind::Any)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Seen> {
        self.saw(Kind::Any)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, PartialEq, Eq, Debug)]
    #[serde(rename_all = "kebab-case")]
    enum Mode {
        FailOpen,
        FailClosed,
    }

    /// A row with one column of every kind.
    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct Row {
        /// Which policy.
        mode: Mode,
        note: String,
        admitted: u64,
        delta: i64,
        latency_us: f64,
        first_ms: Option<f64>,
        ok: bool,
        #[serde(rename = "match")]
        matched: u8,
    }

    #[test]
    fn every_kind_is_read_off_the_deserialize_impl() {
        let f = fields::<Row>();
        let kinds: Vec<(&str, &Kind, bool)> =
            f.iter().map(|f| (f.name, &f.kind, f.required)).collect();
        let unsigned = Kind::Integer { unsigned: true };
        assert_eq!(
            kinds,
            [
                ("mode", &Kind::Enum(&["fail-open", "fail-closed"]), true),
                ("note", &Kind::String, false),
                ("admitted", &unsigned, true),
                ("delta", &Kind::Integer { unsigned: false }, true),
                ("latency_us", &Kind::Number, true),
                ("first_ms", &Kind::Number, false),
                ("ok", &Kind::Boolean, true),
                ("match", &unsigned, true),
            ]
        );
        assert_eq!(f[0].description, Some("Which policy."));
        assert_eq!(f[1].description, None);
        // A shared column name without a doc of its own gets the common meaning.
        assert!(f[2].description.is_some_and(|d| d.contains("admitted")));
    }

    #[test]
    fn units_come_from_the_column_names() {
        let cases = [
            ("latency_us", Some("µs")),
            ("usec_per_call", Some("µs/call")),
            ("cpu_us_per_decision", Some("µs/decision")),
            ("decisions_per_s", Some("1/s")),
            ("duration_s", Some("s")),
            ("bytes_per_client", Some("B/client")),
            ("key_bytes", Some("B")),
            ("redis_busy_pct", Some("%")),
            ("mb_per_10k_clients", Some("MB/10k clients")),
            ("boundary_unix_ms", Some("ms since the Unix epoch")),
            ("admitted_per_limit", None),
            ("strategy", None),
            ("s_count", None),
        ];
        for (name, unit) in cases {
            assert_eq!(unit_of(name).as_deref(), unit, "{name}");
        }
    }
}
