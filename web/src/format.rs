//! Turning stored values into text for a page, for any value a store may hold.
//!
//! The same two rules as the `duraq` program's tables: every accepted value can
//! be shown (times over the whole `i64` range, by our own calendar arithmetic,
//! never a panicking formatter), and text that could act on a reader is made
//! visible: control characters and bidirectional overrides become `\u{…}`.
//! HTML escaping is separate and automatic (maud escapes every interpolation);
//! this module only decides *what text* is shown.

use std::borrow::Cow;

const MS_PER_DAY: i64 = 86_400_000;

/// UTC to the second: `2026-01-02 03:04:05 UTC`; years past 9999 get a `+`.
pub fn utc(ms: i64) -> String {
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

/// How far `ms` is from `now_ms` in the largest whole unit (`in 10 min`,
/// `3 s ago`, `now`). Never overflows.
pub fn relative(ms: i64, now_ms: i64) -> String {
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

/// A duration in ms as `850 ms`, `12.3 s`, `4 min`, `2 h`.
pub fn duration(ms: i64) -> String {
    match ms {
        ..1_000 => format!("{ms} ms"),
        1_000..60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        60_000..3_600_000 => format!("{} min", ms / 60_000),
        _ => format!("{} h", ms / 3_600_000),
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

/// `text` with control characters and bidirectional overrides as `\u{…}`, so
/// that `ESC[2J` or a right-to-left override shows as what it is.
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

/// Like [`visible`] but keeps newlines and tabs (for multi-line text in `<pre>`).
pub fn visible_multiline(text: &str) -> String {
    text.split('\n')
        .map(|line| visible(line).replace("\\u{9}", "\t"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Howard Hinnant's `civil_from_days`, in i128 so no `i64` input overflows.
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

    #[test]
    fn every_time_formats() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert!(utc(i64::MAX).starts_with("+292278994-"));
        assert!(utc(i64::MIN).starts_with("-292275055-"));
        let now = 1_700_000_000_000;
        assert_eq!(relative(now + 599_000, now), "in 10 min");
        assert_eq!(relative(now - 3_000, now), "3 s ago");
        assert_eq!(relative(i64::MAX, i64::MIN), "in 584542046 y");
        assert_eq!(duration(12_345), "12.3 s");
        assert_eq!(thousands(-1_234_567), "-1,234,567");
    }

    #[test]
    fn control_characters_become_visible() {
        assert_eq!(visible("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(visible("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(visible_multiline("a\n\tb\u{1b}"), "a\n\tb\\u{1b}");
    }
}
