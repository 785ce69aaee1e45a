//! Per-experiment summaries: one markdown table each, grouped the way the experiment varies.

use super::table::{read_rows, summary_table};
use super::AnalysisError;
use std::path::Path;

/// The summary table of experiment `id` from its CSV (empty for an unknown id).
pub fn summary(id: &str, dir: &Path) -> Result<String, AnalysisError> {
    if id == "outage" {
        return outage(dir);
    }
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
        "tsmember" => (
            "tsmember.csv",
            &["member", "clock", "rate", "limit"],
            &[
                ("offered", "offered"),
                ("admitted", "admitted"),
                ("admitted / limit", "admitted_per_limit"),
                ("log entries", "log_entries"),
                ("latest start µs", "max_late_us"),
            ],
        ),
        "window-edge" => (
            "window-edge.csv",
            &["strategy", "limit"],
            &[
                ("before edge", "admitted_before_edge"),
                ("after edge", "admitted_after_edge"),
                ("most in 1 s", "max_admitted_in_1s"),
                ("/ limit", "max_per_limit"),
                ("smooth bound", "smooth_bound"),
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

/// Outage: per run and phase (phases.csv), then the breaker sweep when it was run.
fn outage(dir: &Path) -> Result<String, AnalysisError> {
    let phases = read_rows(&dir.join("phases.csv"))?;
    let mut out = summary_table(
        &phases,
        &["policy", "breaker", "phase"],
        &[
            ("median ms", "median_ms"),
            ("p99 ms", "p99_ms"),
            ("max ms", "max_ms"),
            ("allowed", "allowed"),
            ("degraded allowed", "degraded_allowed"),
            ("degraded denied", "degraded_denied"),
            ("paid the budget", "paid_budget"),
            ("breaker open", "short_circuited"),
            ("checks to 1st normal", "first_normal_seq"),
            ("ms to 1st normal", "first_normal_ms"),
            ("reconnects", "reconnects"),
            ("script reloads", "script_reloads"),
            ("suspended", "suspended_checks"),
        ],
    );
    let sweep = dir.join("breaker_sweep.csv");
    if sweep.is_file() {
        out.push_str("\nBreaker sweep (mean over trials; min-max in brackets):\n\n");
        out.push_str(&summary_table(
            &read_rows(&sweep)?,
            &["breaker", "k", "cooldown_ms"],
            &[
                ("paid the budget", "paid_budget"),
                ("probes", "probes"),
                ("users' wait while hung ms", "hung_cost_ms"),
                ("blind checks", "blind_checks"),
                ("blind ms", "blind_ms"),
                ("suspended", "suspended_checks"),
            ],
        ));
    }
    Ok(out)
}
