//! Turning stored values into text for a terminal, for any value a store may hold.
//!
//! Two rules (SPEC §17): every accepted value can be shown, and nothing shown can
//! steer the terminal. Times are formatted by our own calendar arithmetic over the
//! whole `i64` range (humantime's formatter refuses years past 9999 and its
//! `Display` then panics), and every piece of user or provider text passes through
//! [`terminal_safe`] before it reaches a table or an error line: a queue name or a
//! webhook's answer holding `ESC [2J` must print as `\u{1b}[2J`, not clear the
//! screen.

use std::borrow::Cow;

const MS_PER_DAY: i64 = 86_400_000;

/// Milliseconds since the epoch as an RFC 3339 UTC time with milliseconds, e.g.
/// `2026-01-02T03:04:05.678Z`. Years past 9999 get a `+` and more digits (ISO 8601
/// expanded years, `+10001-…`), years before 0 a `-`; no value fails.
pub fn fmt_ms(ms: i64) -> String {
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
    format!("{year}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{milli:03}Z")
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
    fn formats_like_rfc3339_inside_four_digit_years() {
        assert_eq!(fmt_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(fmt_ms(1_500), "1970-01-01T00:00:01.500Z");
        assert_eq!(fmt_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(fmt_ms(253_402_300_799_999), "9999-12-31T23:59:59.999Z");
        assert_eq!(fmt_ms(-1), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn formats_years_past_9999_and_the_extremes() {
        assert_eq!(fmt_ms(253_402_300_800_000), "+10000-01-01T00:00:00.000Z");
        assert!(fmt_ms(i64::MAX).starts_with("+292278994-"));
        assert!(fmt_ms(i64::MIN).starts_with("-292275055-"));
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
        fn any_time_formats_and_matches_humantime_where_it_can(ms in any::<i64>()) {
            let text = fmt_ms(ms);
            prop_assert!(text.ends_with('Z'));
            if (0..=253_402_300_799_999).contains(&ms) {
                let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64);
                prop_assert_eq!(text, humantime::format_rfc3339_millis(t).to_string());
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
