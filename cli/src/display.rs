//! Turning stored values into text for a terminal, for any value a store may hold.
//!
//! The rules (every value can be shown; nothing shown can steer the terminal)
//! live once in `duraq-core` (`utc_time`, `relative_time`, `thousands`,
//! `visible`), shared with the dashboard; this module adds the program's own
//! phrasing (`when`, `count`) and the names its tables use.

pub use duraq_core::inspect::{
    relative_time as relative, thousands, utc_time as utc, visible as terminal_safe,
};

/// A time for a table: UTC to the second, then how far it is from `now_ms`
/// (`2026-01-02 03:04:05 UTC (in 10 min)`).
pub fn when(ms: i64, now_ms: i64) -> String {
    format!("{} ({})", utc(ms), relative(ms, now_ms))
}

/// `n noun` with the noun in the plural unless `n` is 1 (`1 batch`, `3 batches`).
pub fn count(n: i64, noun: &str) -> String {
    let plural = match noun {
        _ if n == 1 => noun.to_string(),
        _ if noun.ends_with("ch") || noun.ends_with('s') => format!("{noun}es"),
        _ => format!("{noun}s"),
    };
    format!("{} {plural}", thousands(n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn tables_phrase_times_and_counts() {
        assert_eq!(when(0, 10_000), "1970-01-01 00:00:00 UTC (10 s ago)");
        assert_eq!(count(1, "batch"), "1 batch");
        assert_eq!(count(3, "batch"), "3 batches");
        assert_eq!(count(50_000, "job"), "50,000 jobs");
        assert_eq!(terminal_safe("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
    }

    proptest! {
        #[test]
        fn any_time_formats_and_matches_humantime_where_it_can(ms in any::<i64>(), now in any::<i64>()) {
            let _ = when(ms, now);
            let text = utc(ms);
            if (0..=253_402_300_799_999).contains(&ms) {
                let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64);
                let rfc = humantime::format_rfc3339_seconds(t).to_string();
                prop_assert_eq!(text, rfc.replace('T', " ").replace('Z', " UTC"));
            }
        }
    }
}
