//! Turning stored values into text for a page, for any value a store may hold.
//!
//! The same two rules as the `duraq` program's tables, from the one place they
//! live (`duraq-core`): every accepted value can be shown (times over the whole
//! `i64` range), and text that could act on a reader is made visible: control
//! characters and bidirectional overrides become `\u{…}`.
//! HTML escaping is separate and automatic (maud escapes every interpolation);
//! this module only decides *what text* is shown.

pub use duraq_core::inspect::{relative_time as relative, thousands, utc_time as utc, visible};

/// A duration in ms as `850 ms`, `12.3 s`, `4 min`, `2 h`.
pub fn duration(ms: i64) -> String {
    match ms {
        ..1_000 => format!("{ms} ms"),
        1_000..60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        60_000..3_600_000 => format!("{} min", ms / 60_000),
        _ => format!("{} h", ms / 3_600_000),
    }
}

/// Like [`visible`] but keeps newlines and tabs (for multi-line text in `<pre>`).
pub fn visible_multiline(text: &str) -> String {
    text.split('\n')
        .map(|line| visible(line).replace("\\u{9}", "\t"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a status is called on the page: [`JobStatus::label`](duraq_core::JobStatus::label), the one
/// vocabulary the CLI and the docs use too.
pub fn label(status: duraq_core::JobStatus) -> &'static str {
    status.label()
}

/// A query-string value, percent-encoded.
pub fn urlencode(value: &str) -> String {
    serde_urlencoded::to_string([("v", value)])
        .map(|s| s[2..].to_string())
        .unwrap_or_default()
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
