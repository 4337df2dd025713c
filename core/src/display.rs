//! Showing stored values to people, for every value a store may hold.
//!
//! Two rules that the `duraq` program and the dashboard share, written once:
//! every accepted value can be shown (times over the whole `i64` range, by our
//! own calendar arithmetic: a library formatter that refuses years past 9999
//! once turned a valid job into a panic), and text that came from users or
//! servers cannot act on a terminal or a reader ([`visible`]). Pure functions,
//! no I/O.

use std::borrow::Cow;

const MS_PER_DAY: i64 = 86_400_000;

/// Milliseconds since the epoch as UTC to the second. Years past 9999 get a `+`
/// and more digits (ISO 8601 expanded years), years before 0 a `-`; no value
/// fails.
///
/// ```
/// use duraq_core::inspect::utc_time;
/// assert_eq!(utc_time(951_782_400_000), "2000-02-29 00:00:00 UTC");
/// assert_eq!(utc_time(253_402_300_800_000), "+10000-01-01 00:00:00 UTC");
/// ```
pub fn utc_time(ms: i64) -> String {
    let days = ms.div_euclid(MS_PER_DAY);
    let in_day = ms.rem_euclid(MS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    let (h, m, s) = (in_day / 3_600_000, in_day / 60_000 % 60, in_day / 1000 % 60);
    let year = match year {
        0..=9999 => format!("{year:04}"),
        10_000.. => format!("+{year}"),
        _ => format!("-{:04}", year.unsigned_abs()),
    };
    format!("{year}-{month:02}-{day:02} {h:02}:{m:02}:{s:02} UTC")
}

/// How far `ms` is from `now_ms` in the largest whole unit: `in 10 min`,
/// `3 s ago`, `now` (within a second). Seconds are cut; larger units round to
/// the nearest (a job due in 9 min 59 s is due "in 10 min"). Never overflows.
///
/// ```
/// use duraq_core::inspect::relative_time;
/// let now = 1_700_000_000_000;
/// assert_eq!(relative_time(now + 599_000, now), "in 10 min");
/// assert_eq!(relative_time(now - 3_000, now), "3 s ago");
/// ```
pub fn relative_time(ms: i64, now_ms: i64) -> String {
    let diff = i128::from(ms) - i128::from(now_ms);
    let abs = diff.unsigned_abs();
    if abs < 1000 {
        return "now".to_string();
    }
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

/// `n` with thousands separators.
///
/// ```
/// assert_eq!(duraq_core::inspect::thousands(-1_234_567), "-1,234,567");
/// ```
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

/// `text` with every character that could act on a terminal or mislead a reader
/// escaped: control characters (C0, DEL, C1, so `ESC`, `\r`, `\n`, `\t` too) and
/// the invisible bidirectional overrides. Escapes use Rust's `\u{…}` form, so
/// the original is recoverable; plain text is borrowed unchanged. (HTML escaping
/// is a separate, later step.)
///
/// ```
/// assert_eq!(duraq_core::inspect::visible("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
/// ```
pub fn visible(text: &str) -> Cow<'_, str> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn formats_utc_inside_four_digit_years_and_beyond() {
        assert_eq!(utc_time(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc_time(1_500), "1970-01-01 00:00:01 UTC");
        assert_eq!(utc_time(253_402_300_799_999), "9999-12-31 23:59:59 UTC");
        assert_eq!(utc_time(-1), "1969-12-31 23:59:59 UTC");
        assert!(utc_time(i64::MAX).starts_with("+292278994-"));
        assert!(utc_time(i64::MIN).starts_with("-292275055-"));
    }

    #[test]
    fn relative_times_and_numbers_read_like_prose() {
        let now = 1_700_000_000_000;
        assert_eq!(relative_time(now + 600_000, now), "in 10 min");
        assert_eq!(relative_time(now - 89_000, now), "1 min ago");
        assert_eq!(relative_time(now + 400, now), "now");
        assert_eq!(relative_time(now + 3 * 86_400_000, now), "in 3 d");
        assert_eq!(relative_time(i64::MAX, i64::MIN), "in 584542046 y");
        assert_eq!(thousands(50_000), "50,000");
        assert_eq!(thousands(999), "999");
    }

    #[test]
    fn escapes_what_could_steer_a_terminal() {
        assert!(matches!(visible("mail"), Cow::Borrowed(_)));
        assert_eq!(visible("x\r\ny\t"), "x\\u{d}\\u{a}y\\u{9}");
        assert_eq!(visible("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(visible("abc\u{202e}fed"), "abc\\u{202e}fed");
    }

    proptest! {
        #[test]
        fn any_time_formats(ms in any::<i64>(), now in any::<i64>()) {
            prop_assert!(utc_time(ms).ends_with(" UTC"));
            let _ = relative_time(ms, now);
        }

        #[test]
        fn escaped_text_has_nothing_left_to_escape(text in any::<String>()) {
            let shown = visible(&text);
            prop_assert!(!shown.chars().any(needs_escape));
            if !text.chars().any(needs_escape) {
                prop_assert_eq!(shown.as_ref(), text.as_str());
            }
        }
    }
}
