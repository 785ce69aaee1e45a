//! The CSV schema is the row type: its field names, read from its `Deserialize` impl, are the
//! columns, so nothing else spells them out and a renamed field cannot drift from its readers.

use super::fields::Field;
use serde::de::{self, Deserialize, Deserializer, Visitor};

/// The columns of a flat row type, in declaration order (what `csv::Writer::serialize` writes).
/// Empty for a type that is not a plain struct (a `#[serde(flatten)]` row has no fixed list).
pub fn columns<'de, R: Deserialize<'de>>() -> &'static [&'static str] {
    let mut found = None;
    let _ = R::deserialize(FieldProbe(&mut found));
    found.unwrap_or(&[])
}

/// A value as its CSV cell reads (an enum's serde name, a number's digits), for labels and keys.
pub fn csv_text<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(serde_json::Value::Null) => String::new(),
        Ok(other) => other.to_string(),
        Err(_) => String::from("?"),
    }
}

/// A file an experiment writes, with its columns.
#[derive(Debug, Clone, Copy)]
pub struct Table {
    pub file: &'static str,
    pub columns: &'static [&'static str],
    /// The row type's columns with their types, units and descriptions.
    fields: fn() -> Vec<Field>,
    /// The row type's own doc comment ("One trial."), if it has one.
    doc: fn() -> Option<&'static str>,
    /// Written only when the run has custom limiters (`--limiter`): absent from other runs.
    pub custom_limiters_only: bool,
    /// Columns added after runs that are still read (each has a serde default): a CSV written
    /// before them lacks them and is still this table's.
    pub added: &'static [&'static str],
}

impl PartialEq for Table {
    fn eq(&self, other: &Self) -> bool {
        self.file == other.file && self.columns == other.columns
    }
}

impl Eq for Table {}

impl Table {
    /// The table `file` written from rows of type `R`.
    pub fn of<R: for<'de> Deserialize<'de>>(file: &'static str) -> Self {
        Table {
            file,
            columns: columns::<R>(),
            fields: super::fields::fields::<R>,
            doc: || {
                super::fields::row_doc::<R>()
                    .map(|d| d.doc)
                    .filter(|d| !d.is_empty())
            },
            custom_limiters_only: false,
            added: &[],
        }
    }

    /// The table `file` of rows `R` that only a run with custom limiters writes.
    pub fn of_custom_limiters<R: for<'de> Deserialize<'de>>(file: &'static str) -> Self {
        Table {
            custom_limiters_only: true,
            ..Table::of::<R>(file)
        }
    }

    /// The same table, written only when the run has custom limiters (a [`CsvFile`]'s table,
    /// with the columns it added).
    ///
    /// [`CsvFile`]: super::CsvFile
    pub fn of_custom_limiters_only(self) -> Self {
        Table {
            custom_limiters_only: true,
            ..self
        }
    }

    /// The same table, `columns` of which were added after runs that are still read.
    pub fn with_added(self, columns: &'static [&'static str]) -> Self {
        Table {
            added: columns,
            ..self
        }
    }

    /// Every column with its type, unit and description, read off the row type.
    pub fn fields(&self) -> Vec<Field> {
        (self.fields)()
    }

    /// What one row is, in the row type's doc comment.
    pub fn row_doc(&self) -> Option<&'static str> {
        (self.doc)()
    }

    /// Why a CSV header is not this table's, or Ok: its columns in order, less any of the
    /// `added` ones (an older run's CSV).
    pub fn check_header(&self, header: &[&str]) -> Result<(), String> {
        let older = (self.columns.iter().copied())
            .filter(|c| header.contains(c) || !self.added.contains(c))
            .eq(header.iter().copied());
        if header == self.columns || older {
            return Ok(());
        }
        let missing: Vec<_> = self
            .columns
            .iter()
            .filter(|c| !header.contains(c))
            .collect();
        let extra: Vec<_> = header
            .iter()
            .filter(|c| !self.columns.contains(c))
            .collect();
        Err(format!(
            "{}: columns differ from the row type (missing {missing:?}, unexpected {extra:?})",
            self.file
        ))
    }
}

/// A deserializer that answers nothing but remembers the field list it was asked for.
struct FieldProbe<'a>(&'a mut Option<&'static [&'static str]>);

#[derive(Debug)]
struct Probed;

impl std::fmt::Display for Probed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("field probe")
    }
}

impl std::error::Error for Probed {}

impl de::Error for Probed {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Probed
    }
}

impl<'de> Deserializer<'de> for FieldProbe<'_> {
    type Error = Probed;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Probed> {
        Err(Probed)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Probed> {
        *self.0 = Some(fields);
        Err(Probed)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct Row {
        strategy: String,
        admitted: u64,
        note: Option<String>,
    }

    #[test]
    fn columns_are_the_fields_in_order() {
        assert_eq!(columns::<Row>(), ["strategy", "admitted", "note"]);
        assert!(columns::<u64>().is_empty());
        let t = Table::of::<Row>("t.csv");
        assert!(t.check_header(&["strategy", "admitted", "note"]).is_ok());
        let err = t
            .check_header(&["strategy", "admitted_n", "note"])
            .unwrap_err();
        assert!(
            err.contains("admitted") && err.contains("admitted_n"),
            "{err}"
        );
        // A column added later may be missing (an older run's CSV), nothing else.
        let later = t.with_added(&["note"]);
        assert!(later.check_header(&["strategy", "admitted"]).is_ok());
        assert!(later.check_header(&["strategy"]).is_err());
        assert!(t.check_header(&["strategy", "admitted"]).is_err());
    }
}
