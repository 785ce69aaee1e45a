//! Per-experiment summaries: one markdown table each, grouped the way the experiment varies.

use super::table::{read_rows, summary_table};
use super::AnalysisError;
use std::path::Path;

/// The summary table of experiment `id` from its CSV (empty for an unknown id).
pub fn summary(id: &str, dir: &Path) -> Result<String, AnalysisError> {
    let (file, keys, columns): (&str, &[&str], &[(&str, &str)]) = match id {
        "race" => (
            "race.csv",
            &["scenario", "strategy", "config", "limit"],
            &[("admitted", "admitted"), ("final state", "final_state")],
        ),
        "atomic" => (
            "atomic.csv",
            &["strategy", "capacity", "config"],
            &[
                ("admitted", "admitted"),
                ("refused", "refused"),
                ("WATCH retries", "watch_retries"),
                ("aborts", "watch_aborts"),
                ("round trips", "redis_calls"),
                ("Redis CPU µs/decision", "cpu_us_per_decision"),
            ],
        ),
        "cost" => (
            "cost.csv",
            &["strategy", "variant"],
            &[
                ("decisions/s", "decisions_per_s"),
                ("Redis CPU µs/decision", "cpu_us_per_decision"),
                ("busy %", "redis_busy_pct"),
                ("µs per call", "usec_per_call"),
                ("allowed", "allowed"),
                ("denied", "denied"),
            ],
        ),
        "latency" => (
            "latency.csv",
            &["strategy"],
            &[
                ("p50 µs", "p50_us"),
                ("p90 µs", "p90_us"),
                ("p99 µs", "p99_us"),
                ("p99.9 µs", "p999_us"),
                ("max µs", "max_us"),
            ],
        ),
        "calibrate" => (
            "calibrate.csv",
            &["command", "tool"],
            &[
                ("ops/s", "ops_per_s"),
                ("client CPU s", "client_cpu_s"),
                ("duration s", "duration_s"),
                ("Redis CPU µs/op", "redis_cpu_us_per_op"),
                ("Redis busy %", "redis_busy_pct"),
            ],
        ),
        "memory" => (
            "memory.csv",
            &["strategy", "listpack_entries", "limit"],
            &[
                ("clients", "clients"),
                ("bytes/client", "bytes_per_client"),
                ("bytes/entry", "bytes_per_entry"),
                ("sample key bytes", "sample_key_bytes"),
                ("listpack", "listpack"),
                ("member bytes", "member_len"),
                ("Redis CPU µs/decision", "cpu_us_per_decision"),
            ],
        ),
        "bigkey" => (
            "bigkey.csv",
            &["operation", "entries", "lazyfree"],
            &[
                ("command ms", "command_ms"),
                ("SLOWLOG ms", "slowlog_ms"),
                ("probe worst stall ms", "probe_max_stall_ms"),
                ("LATENCY ms (own event)", "server_blocked_ms"),
                ("background free ms", "background_free_ms"),
                ("probe p50 ms", "probe_p50_ms"),
                ("probe worst before ms", "probe_baseline_max_ms"),
                ("key bytes", "key_bytes"),
            ],
        ),
        _ => return Ok(String::new()),
    };
    let rows = read_rows(&dir.join(file))?;
    let mut out = summary_table(&rows, keys, columns);
    if id == "memory" {
        out.push_str(&super::derived::memory(&rows));
    }
    Ok(out)
}
