//! KEYS and ARGV templates of a manifest: literal text with `{placeholders}` the harness fills in
//! per call from the client's key, the experiment's limit and the caller's clock. `{{key}}` is a
//! hash tag: the value between literal braces, so derived keys share the base key's slot.

use super::super::LimitSpec;
use serde::{Deserialize, Serialize};

/// A value the harness fills in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placeholder {
    /// The client's key, as the experiment names it (inside the run's prefix).
    Key,
    /// The run's key prefix: everything ratelab writes starts with it and is deleted afterwards.
    Prefix,
    /// Index of the fixed window containing the caller's now (windows from `window_origin_ms`).
    Window,
    /// Index of the window before it: -1 in window 0, so it never names the current window.
    WindowPrev,
    /// Index of the epoch-aligned window containing the caller's now: `floor(now / window)`.
    WindowEpoch,
    /// Index of the epoch-aligned window before it.
    WindowEpochPrev,
    /// The limit: requests per window, bucket capacity, GCRA burst.
    Limit,
    WindowMs,
    WindowS,
    /// Tokens per second for a bucket; limit / window for the window algorithms and GCRA.
    RatePerS,
    /// The most requests that may pass back to back (the limit).
    Burst,
    /// Tokens this request takes: the check's cost (1, or race's and atomic's `cost`).
    Cost,
    /// The caller's clock, Unix time.
    NowMs,
    NowUs,
    NowS,
    /// A per-request id unique across processes.
    RequestId,
    /// A random unsigned integer.
    Rand,
    /// Start of window 0 in Unix ms.
    WindowOriginMs,
    /// ms until the current window ends.
    WindowEndMs,
    /// Expiry ratelab's bucket gives its key: time to refill plus a second.
    BucketTtlMs,
    /// Expiry ratelab's window counter gives its key: two windows.
    WindowTtlMs,
    /// GCRA's emission interval in µs: window / limit.
    EmissionUs,
}

impl Placeholder {
    const ALL: &'static [(&'static str, Placeholder)] = &[
        ("key", Placeholder::Key),
        ("prefix", Placeholder::Prefix),
        ("window", Placeholder::Window),
        ("window-1", Placeholder::WindowPrev),
        ("window_epoch", Placeholder::WindowEpoch),
        ("window_epoch-1", Placeholder::WindowEpochPrev),
        ("limit", Placeholder::Limit),
        ("window_ms", Placeholder::WindowMs),
        ("window_s", Placeholder::WindowS),
        ("rate_per_s", Placeholder::RatePerS),
        ("burst", Placeholder::Burst),
        ("cost", Placeholder::Cost),
        ("now_ms", Placeholder::NowMs),
        ("now_us", Placeholder::NowUs),
        ("now_s", Placeholder::NowS),
        ("request_id", Placeholder::RequestId),
        ("rand", Placeholder::Rand),
        ("window_origin_ms", Placeholder::WindowOriginMs),
        ("window_end_ms", Placeholder::WindowEndMs),
        ("bucket_ttl_ms", Placeholder::BucketTtlMs),
        ("window_ttl_ms", Placeholder::WindowTtlMs),
        ("emission_us", Placeholder::EmissionUs),
    ];

    fn parse(name: &str) -> Result<Self, String> {
        (Self::ALL.iter())
            .find(|(n, _)| *n == name)
            .map(|&(_, p)| p)
            .ok_or_else(|| {
                let names: Vec<String> =
                    Self::ALL.iter().map(|(n, _)| format!("{{{n}}}")).collect();
                format!(
                    "unknown placeholder `{{{name}}}`; valid: {}",
                    names.join(", ")
                )
            })
    }

    /// Whether it reads the caller's clock (tsmember says so: the script trusts the caller).
    pub fn is_clock(self) -> bool {
        use Placeholder::*;
        matches!(
            self,
            NowMs
                | NowUs
                | NowS
                | Window
                | WindowPrev
                | WindowEpoch
                | WindowEpochPrev
                | WindowEndMs
        )
    }
}

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Piece {
    Text(String),
    Value(Placeholder),
    /// `{{name}}`: the value inside literal braces, a Redis Cluster hash tag.
    Tagged(Placeholder),
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Template {
    pub pieces: Vec<Piece>,
}

/// What one call's templates are filled in from.
pub struct Fill<'a> {
    pub key: &'a str,
    /// What the request costs (`{cost}`): the check's, 1 unless the experiment asks more.
    pub cost: u32,
    pub spec: &'a LimitSpec,
    /// The caller's clock, read once per call, in µs since the Unix epoch.
    pub now_us: u64,
    pub request_id: String,
    pub rand: u64,
    /// Steady rate of the algorithm: refill for a bucket, limit / window otherwise.
    pub rate_per_s: f64,
}

impl Template {
    /// Parses `text`; an unknown placeholder or an unbalanced brace is an error saying which.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(open) = rest.find(['{', '}']) {
            literal.push_str(&rest[..open]);
            let tail = &rest[open..];
            if tail.starts_with('}') {
                return Err(format!("`}}` without a `{{` in `{text}`"));
            }
            let tagged = tail.starts_with("{{");
            let (start, close) = if tagged { (2, "}}") } else { (1, "}") };
            let end = tail[start..]
                .find(close)
                .ok_or_else(|| format!("`{}` is not closed in `{text}`", &tail[..start]))?;
            let name = &tail[start..start + end];
            let placeholder = Placeholder::parse(name)?;
            if !literal.is_empty() {
                pieces.push(Piece::Text(std::mem::take(&mut literal)));
            }
            pieces.push(match tagged {
                true => Piece::Tagged(placeholder),
                false => Piece::Value(placeholder),
            });
            rest = &tail[start + end + close.len()..];
        }
        literal.push_str(rest);
        if !literal.is_empty() || pieces.is_empty() {
            pieces.push(Piece::Text(literal));
        }
        Ok(Template { pieces })
    }

    /// Whether it uses `p`.
    pub fn uses(&self, p: Placeholder) -> bool {
        (self.pieces.iter())
            .any(|piece| matches!(piece, Piece::Value(q) | Piece::Tagged(q) if *q == p))
    }

    /// The placeholders it uses.
    pub fn placeholders(&self) -> impl Iterator<Item = Placeholder> + '_ {
        self.pieces.iter().filter_map(|piece| match piece {
            Piece::Value(p) | Piece::Tagged(p) => Some(*p),
            Piece::Text(_) => None,
        })
    }

    /// The template filled in; numbers are written as redis-rs writes them, so a manifest of a
    /// built-in script sends exactly the built-in's arguments.
    pub fn render(&self, fill: &Fill) -> Vec<u8> {
        let mut out = Vec::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => out.extend_from_slice(t.as_bytes()),
                Piece::Value(p) => out.extend(value(*p, fill)),
                Piece::Tagged(p) => {
                    out.push(b'{');
                    out.extend(value(*p, fill));
                    out.push(b'}');
                }
            }
        }
        out
    }
}

fn arg(v: impl redis::ToRedisArgs) -> Vec<u8> {
    v.to_redis_args().concat()
}

fn value(p: Placeholder, fill: &Fill) -> Vec<u8> {
    let spec = fill.spec;
    let now_ms = fill.now_us / 1000;
    let window_ms = spec.window_ms.max(1);
    // Signed: the window before window 0 is -1, a key of its own (never the current window's).
    let window = (now_ms.saturating_sub(spec.window_origin_ms) / window_ms) as i64;
    let window_epoch = (now_ms / window_ms) as i64;
    match p {
        Placeholder::Key => arg(fill.key),
        Placeholder::Prefix => arg(run_prefix(fill.key)),
        Placeholder::Window => arg(window),
        Placeholder::WindowPrev => arg(window - 1),
        Placeholder::WindowEpoch => arg(window_epoch),
        Placeholder::WindowEpochPrev => arg(window_epoch - 1),
        Placeholder::Limit | Placeholder::Burst => arg(spec.capacity),
        Placeholder::WindowMs => arg(window_ms),
        Placeholder::WindowS => match window_ms % 1000 {
            0 => arg(window_ms / 1000),
            _ => arg(window_ms as f64 / 1000.0),
        },
        Placeholder::RatePerS => arg(fill.rate_per_s),
        Placeholder::Cost => arg(fill.cost),
        Placeholder::NowMs => arg(now_ms),
        Placeholder::NowUs => arg(fill.now_us),
        Placeholder::NowS => arg(fill.now_us / 1_000_000),
        Placeholder::RequestId => arg(fill.request_id.as_str()),
        Placeholder::Rand => arg(fill.rand),
        Placeholder::WindowOriginMs => arg(spec.window_origin_ms),
        Placeholder::WindowEndMs => arg(spec.ms_to_window_end(now_ms)),
        Placeholder::BucketTtlMs => arg(spec.bucket_ttl_ms()),
        Placeholder::WindowTtlMs => arg(spec.window_ttl_ms()),
        Placeholder::EmissionUs => arg(window_ms as f64 * 1000.0 / spec.capacity.max(1) as f64),
    }
}

/// The run's prefix of a key ratelab names (`ratelab:<id>:<start>:<pid>:`), else the key and a
/// colon, so a fixed key written after `{prefix}` never leaves the run's namespace.
pub fn run_prefix(key: &str) -> String {
    if key.starts_with("ratelab:") {
        if let Some((end, _)) = key.match_indices(':').nth(3) {
            return key[..=end].to_string();
        }
    }
    format!("{key}:")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(spec: &LimitSpec) -> Fill<'_> {
        Fill {
            key: "ratelab:race:abc:42:m:1",
            cost: 1,
            spec,
            now_us: 1_700_000_123_456_789,
            request_id: "r-1".into(),
            rand: 7,
            rate_per_s: 0.0,
        }
    }

    fn text(t: &str, spec: &LimitSpec) -> String {
        String::from_utf8(Template::parse(t).unwrap().render(&fill(spec))).unwrap()
    }

    #[test]
    fn cost_is_the_checks_cost() {
        let spec = LimitSpec::default();
        assert_eq!(text("{cost}", &spec), "1");
        let five = Fill {
            cost: 5,
            ..fill(&spec)
        };
        assert_eq!(Template::parse("{cost}").unwrap().render(&five), b"5");
    }

    #[test]
    fn placeholders_literals_and_hash_tags() {
        let spec = LimitSpec::default();
        assert_eq!(text("{key}", &spec), "ratelab:race:abc:42:m:1");
        assert_eq!(
            text("{{key}}:tokens", &spec),
            "{ratelab:race:abc:42:m:1}:tokens"
        );
        assert_eq!(text("{prefix}global", &spec), "ratelab:race:abc:42:global");
        assert_eq!(
            text("{key}:w{window}", &spec),
            spec.window_key("ratelab:race:abc:42:m:1", 1_700_000_123_456)
        );
        assert_eq!(text("{window-1}", &spec), "1700000122");
        assert_eq!(
            text("{window_epoch}|{window_epoch-1}", &spec),
            "1700000123|1700000122"
        );
        assert_eq!(
            text("{now_ms}|{now_s}|{limit}|{window_s}", &spec),
            "1700000123456|1700000123|100|1"
        );
        assert_eq!(text("", &spec), "");
        assert_eq!(text("id", &spec), "id");
    }

    #[test]
    fn the_previous_window_is_never_the_current_one() {
        // Windows from the caller's origin: the first call is in window 0, the one before is -1.
        let spec = LimitSpec {
            window_origin_ms: 1_700_000_123_000,
            window_ms: 10_000,
            ..LimitSpec::default()
        };
        assert_eq!(
            text("{key}:{window}|{key}:{window-1}", &spec)
                .split('|')
                .collect::<Vec<_>>(),
            ["ratelab:race:abc:42:m:1:0", "ratelab:race:abc:42:m:1:-1"]
        );
        assert_eq!(
            text("{window_epoch}|{window_epoch-1}", &spec),
            "170000012|170000011"
        );
    }

    #[test]
    fn bad_templates_say_what_is_wrong() {
        let err = Template::parse("{key}:{windw}").unwrap_err();
        assert!(
            err.contains("unknown placeholder `{windw}`") && err.contains("{window-1}"),
            "{err}"
        );
        assert!(Template::parse("{key").unwrap_err().contains("not closed"));
        assert!(Template::parse("a}").unwrap_err().contains("without"));
    }

    #[test]
    fn prefix_outside_a_run_stays_under_the_key() {
        assert_eq!(run_prefix("user:1"), "user:1:");
    }
}
