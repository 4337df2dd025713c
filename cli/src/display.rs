//! Turning stored values into text for a terminal, for any value a store may hold.
//!
//! Two rules (`SECURITY.md`): every accepted value can be shown, and nothing shown can
//! steer the terminal. Times are formatted by our own calendar arithmetic over the
//! whole `i64` range (humantime's formatter refuses years past 9999 and its
//! `Display` then panics), and every piece of user or provider text passes through
//! [`terminal_safe`] before it reaches a table or an error line: a queue name or a
//! webhook's answer holding `ESC [2J` must print as `\u{1b}[2J`, not clear the
//! screen.

use std::borrow::Cow;

const MS_PER_DAY: i64 = 86_400_000;

/// A time for a table: UTC to the second, then how far it is from `now_ms`
/// (`2026-01-02 03:04:05 UTC (in 10 min)`).
pub fn when(ms: i64, now_ms: i64) -> String {
    format!("{} ({})", utc(ms), relative(ms, now_ms))
}

/// UTC to the second: `2026-01-02 03:04:05 UTC`. Years past 9999 get a `+` and
/// more digits (ISO 8601 expanded years, `+10001-…`), years before 0 a `-`; no
/// value fails.
pub fn utc(ms: i64) -> String {
    let (date, h, m, s, _) = parts(ms);
    format!("{date} {h:02}:{m:02}:{s:02} UTC")
}

/// How far `ms` is from `now_ms` in the largest whole unit: `in 10 min`,
/// `3 s ago`, `now` (within a second). Never overflows.
pub fn relative(ms: i64, now_ms: i64) -> String {
    let diff = i128::from(ms) - i128::from(now_ms);
    let abs = diff.unsigned_abs();
    if abs < 1000 {
        return "now".to_string();
    }
    // Seconds are cut; larger units round to the nearest ("in 10 min" for a
    // job due in 9 min 59 s).
    let near = |s: u128, unit: u128| (s + unit / 2) / unit;
    let (n, unit) = match abs / 1000 {
        s if s < 60 => (s, "s"),
        s if s < 3570 => (near(s, 60), "min"),
        s if s < 47 * 3600 => (near(s, 3600), "h"),
        s if s < 730 * 86_400 => (near(s, 86_400), "d"),
        s => (near(s, 31_557_600), "y"),
    };
    if diff > 0 {
        format!("in {n} {unit}")
    } else {
        format!("{n} {unit} ago")
    }
}

/// `n` with thousands separators (`50,000`).
pub fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        out.insert(0, '-');
    }
    out
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

/// The date (`2026-01-02`, expanded years as in [`utc`]) and time of day.
fn parts(ms: i64) -> (String, i64, i64, i64, i64) {
    let days = ms.div_euclid(MS_PER_DAY);
    let in_day = ms.rem_euclid(MS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    let (h, m, s, milli) = (
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000,
    );
    let year = match year {
        0..=9999 => format!("{year:04}"),
        10_000.. => format!("+{year}"),
        _ => format!("-{:04}", year.unsigned_abs()),
    };
    (format!("{year}-{month:02}-{day:02}"), h, m, s, milli)
}

/// The proleptic Gregorian date of a day count from 1970-01-01 (Howard Hinnant's
/// `civil_from_days`), in i128 so that no `i64` input can overflow.
fn civil_from_days(days: i64) -> (i128, u32, u32) {
    let z = i128::from(days) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i128::from(month <= 2);
    (year, month, day)
}

/// `text` with every character that could act on a terminal escaped: control
/// characters (C0, DEL, C1, so `ESC`, `\r`, `\n`, `\t` too) and the invisible
/// bidirectional overrides that reorder what a reader sees. Escapes use Rust's
/// `\u{…}` form, so the original is recoverable; plain text is borrowed unchanged.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if needs_escape(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn formats_utc_inside_four_digit_years() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_500), "1970-01-01 00:00:01 UTC");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(253_402_300_799_999), "9999-12-31 23:59:59 UTC");
        assert_eq!(utc(-1), "1969-12-31 23:59:59 UTC");
    }

    #[test]
    fn formats_years_past_9999_and_the_extremes() {
        assert_eq!(utc(253_402_300_800_000), "+10000-01-01 00:00:00 UTC");
        assert!(utc(i64::MAX).starts_with("+292278994-"));
        assert!(utc(i64::MIN).starts_with("-292275055-"));
    }

    #[test]
    fn relative_times_and_counts_read_like_prose() {
        let now = 1_700_000_000_000;
        assert_eq!(relative(now + 600_000, now), "in 10 min");
        assert_eq!(relative(now + 599_000, now), "in 10 min");
        assert_eq!(relative(now - 89_000, now), "1 min ago");
        assert_eq!(relative(now - 3_000, now), "3 s ago");
        assert_eq!(relative(now + 400, now), "now");
        assert_eq!(relative(now + 3 * 86_400_000, now), "in 3 d");
        assert_eq!(relative(i64::MAX, i64::MIN), "in 584542046 y");
        assert_eq!(when(0, 10_000), "1970-01-01 00:00:00 UTC (10 s ago)");
        assert_eq!(thousands(50_000), "50,000");
        assert_eq!(thousands(-1_234_567), "-1,234,567");
        assert_eq!(thousands(999), "999");
        assert_eq!(count(1, "batch"), "1 batch");
        assert_eq!(count(3, "batch"), "3 batches");
        assert_eq!(count(50_000, "job"), "50,000 jobs");
    }

    #[test]
    fn escapes_what_could_steer_a_terminal() {
        assert_eq!(terminal_safe("mail"), "mail");
        assert!(matches!(terminal_safe("mail"), Cow::Borrowed(_)));
        assert_eq!(terminal_safe("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(terminal_safe("x\r\ny\t"), "x\\u{d}\\u{a}y\\u{9}");
        assert_eq!(terminal_safe("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(terminal_safe("abc\u{202e}fed"), "abc\\u{202e}fed");
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

        #[test]
        fn escaped_text_has_no_control_characters(text in any::<String>()) {
            let safe = terminal_safe(&text);
            prop_assert!(!safe.chars().any(needs_escape));
            if !text.chars().any(needs_escape) {
                prop_assert_eq!(safe.as_ref(), text.as_str());
            }
        }
    }
}
