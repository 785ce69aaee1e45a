//! Parsing of `INFO` replies: `# Section` headers and `field:value` lines.

use std::collections::BTreeMap;

/// One `INFO` reply as field -> value (section headers dropped; field names are unique in Redis).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Info {
    fields: BTreeMap<String, String>,
}

impl Info {
    /// Parses the text of an `INFO` reply; malformed lines are skipped, not fatal.
    pub fn parse(text: &str) -> Self {
        let fields = text
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .filter_map(|line| line.split_once(':'))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Info { fields }
    }

    /// The raw value of a field.
    pub fn get(&self, field: &str) -> Option<&str> {
        self.fields.get(field).map(String::as_str)
    }

    /// A numeric field (counters, CPU seconds, bytes).
    pub fn get_f64(&self, field: &str) -> Option<f64> {
        self.get(field)?.parse().ok()
    }

    /// Every field, for recording.
    pub fn fields(&self) -> &BTreeMap<String, String> {
        &self.fields
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n\
        \r\n# CPU\r\nused_cpu_sys:0.123\r\nused_cpu_user_main_thread:1.5\r\n";

    #[test]
    fn parses_fields_across_sections() {
        let info = Info::parse(SAMPLE);
        assert_eq!(info.get("redis_version"), Some("7.0.15"));
        assert_eq!(info.get_f64("used_cpu_user_main_thread"), Some(1.5));
        assert_eq!(info.get("Server"), None);
    }

    #[test]
    fn keeps_colons_inside_values() {
        let info = Info::parse("executable:/usr/bin/redis-server\r\nconfig_file:\r\nkv:a:b\r\n");
        assert_eq!(info.get("kv"), Some("a:b"));
        assert_eq!(info.get("config_file"), Some(""));
    }

    #[test]
    fn non_numeric_is_none() {
        assert_eq!(Info::parse("x:abc").get_f64("x"), None);
    }
}
