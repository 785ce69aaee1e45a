//! Where a window limiter's windows start, measured rather than only declared: after the probe's
//! first checks on a fresh key, the expiry its keys have left says it. A window opened by the
//! first request lives a whole window; one aligned to the epoch lives what is left of the current
//! window. A manifest without `anchor` defaults to epoch, so a first-hit library whose manifest
//! omits it would read "no burst" at window-edge without this.

use super::Anchor;

/// The anchor a key's expiry `pttl_ms`, read at `now_ms` (Unix ms), says a window of `window_ms`
/// has: None when it says neither (no expiry, one unlike both) or could be either (the epoch
/// window had just begun).
pub fn from_expiry(pttl_ms: i64, now_ms: u64, window_ms: u64) -> Option<Anchor> {
    if pttl_ms <= 0 || window_ms == 0 {
        return None;
    }
    // The probe's calls and the reads take milliseconds; a hundredth of the window is far more.
    let tolerance = (window_ms / 100) as i64;
    let window = window_ms as i64;
    let epoch_left = window - (now_ms % window_ms) as i64;
    let near = |a: i64, b: i64| (a - b).abs() <= tolerance;
    match (near(pttl_ms, window), near(pttl_ms, epoch_left)) {
        (true, false) => Some(Anchor::FirstHit),
        (false, true) => Some(Anchor::Epoch),
        _ => None,
    }
}

/// The longest expiry left on the keys under `key` (the probe's key: a library's keys start with
/// it), read now; None when none has one.
pub fn longest_expiry(con: &mut redis::Connection, key: &str) -> redis::RedisResult<Option<i64>> {
    // The key is ratelab's own prefix and a limiter's name: escape what SCAN's pattern would read.
    let pattern: String = key
        .chars()
        .flat_map(|c| match c {
            '*' | '?' | '[' | ']' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .chain(['*'])
        .collect();
    let keys: Vec<String> = redis::cmd("SCAN")
        .cursor_arg(0)
        .arg("MATCH")
        .arg(&pattern)
        .arg("COUNT")
        .arg(1000)
        .clone()
        .iter(con)?
        .collect::<redis::RedisResult<_>>()?;
    let mut longest: Option<i64> = None;
    for k in keys {
        let pttl: i64 = redis::cmd("PTTL").arg(&k).query(con)?;
        if pttl > 0 {
            longest = Some(longest.map_or(pttl, |l| l.max(pttl)));
        }
    }
    Ok(longest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_window_left_is_a_first_hit_and_the_rest_of_the_epochs_window_is_epoch() {
        let window = 600_000;
        // 250 s into the epoch's window: 350 s are left of it.
        let now = 1_000 * window + 250_000;
        assert_eq!(from_expiry(599_990, now, window), Some(Anchor::FirstHit));
        assert_eq!(from_expiry(349_995, now, window), Some(Anchor::Epoch));
        assert_eq!(from_expiry(100_000, now, window), None);
        assert_eq!(from_expiry(-1, now, window), None);
        // Two seconds into the epoch's window, both read alike: it cannot tell.
        assert_eq!(from_expiry(598_000, 1_000 * window + 2_000, window), None);
    }
}
