//! The `listpack_entries` parameter: values of `zset-max-listpack-entries` to sweep, written as
//! numbers or "default" (the server's own, recorded as read back).

use crate::server::{admin, ServerError, Target};
use serde::{Deserialize, Serialize};

/// The config parameter whose value is the sliding log's cliff.
pub(super) const LISTPACK_CONFIG: &str = "zset-max-listpack-entries";

/// A value for `zset-max-listpack-entries`: the server's own, or one set with CONFIG SET.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "SettingValue", into = "SettingValue")]
pub enum ListpackSetting {
    /// Leave the server as it starts (128 on Redis 7.0) and record what it uses.
    ServerDefault,
    /// Set this many entries before the fills.
    Entries(u64),
}

/// How a setting is written in the TOML: a number, or the word "default".
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SettingValue {
    Entries(u64),
    Word(String),
}

impl TryFrom<SettingValue> for ListpackSetting {
    type Error = String;
    fn try_from(v: SettingValue) -> Result<Self, Self::Error> {
        match v {
            SettingValue::Entries(n) => Ok(ListpackSetting::Entries(n)),
            SettingValue::Word(w) if w == "default" => Ok(ListpackSetting::ServerDefault),
            SettingValue::Word(w) => Err(format!(
                "`{w}` is neither a number of entries nor \"default\""
            )),
        }
    }
}

impl From<ListpackSetting> for SettingValue {
    fn from(s: ListpackSetting) -> Self {
        match s {
            ListpackSetting::ServerDefault => SettingValue::Word("default".into()),
            ListpackSetting::Entries(n) => SettingValue::Entries(n),
        }
    }
}

/// Applies a setting (or keeps the server's own) and reads back what the server uses:
/// (zset-max-listpack-entries, "default" | "set", zset-max-listpack-value).
pub(super) fn apply_setting(
    target: &Target,
    setting: ListpackSetting,
) -> Result<(u64, &'static str, String), ServerError> {
    let mut con = target.connection()?;
    let (value, label) = match setting {
        ListpackSetting::ServerDefault => {
            (admin::config_get(&mut con, LISTPACK_CONFIG)?, "default")
        }
        ListpackSetting::Entries(n) => (
            admin::config_set(&mut con, LISTPACK_CONFIG, &n.to_string())?,
            "set",
        ),
    };
    let threshold = value
        .parse()
        .map_err(|_| ServerError::Unsupported(format!("{LISTPACK_CONFIG} = `{value}`")))?;
    let value_limit = admin::config_get(&mut con, "zset-max-listpack-value")?;
    Ok((threshold, label, value_limit))
}

impl ListpackSetting {
    /// As written in the parameters: the number, or "default".
    pub fn label(self) -> String {
        match self {
            ListpackSetting::ServerDefault => "default".into(),
            ListpackSetting::Entries(n) => n.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, Serialize)]
    struct Doc {
        s: Vec<ListpackSetting>,
    }

    #[test]
    fn settings_are_numbers_or_the_word_default() {
        let doc: Doc = toml::from_str(r#"s = [32, "default", 512]"#).unwrap();
        use ListpackSetting::*;
        assert_eq!(doc.s, [Entries(32), ServerDefault, Entries(512)]);
        assert_eq!(
            toml::to_string(&doc).unwrap().trim(),
            r#"s = [32, "default", 512]"#
        );
        let err = toml::from_str::<Doc>(r#"s = ["dflt"]"#).unwrap_err();
        assert!(err.to_string().contains("neither a number"), "{err}");
        assert_eq!(
            (ServerDefault.label(), Entries(64).label()),
            ("default".into(), "64".into())
        );
    }
}
