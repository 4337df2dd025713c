//! Conversions between the Rust API's time types (`Duration`, `SystemTime`) and
//! the milliseconds of the JSON wire form and the stores. Every conversion is
//! checked: a value that does not fit is reported (`None`), never wrapped, so the
//! caller can turn it into its validation error instead of a wrong time.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Whole milliseconds of `d` (rounded down), or `None` beyond `i64::MAX`.
pub(crate) fn duration_to_ms(d: Duration) -> Option<i64> {
    i64::try_from(d.as_millis()).ok()
}

/// Milliseconds of `d` rounded up (a timeout of 0.5 ms is 1 ms, not 0), or `None`
/// beyond `i64::MAX`.
pub(crate) fn duration_to_ms_ceil(d: Duration) -> Option<i64> {
    let ms = d.as_millis() + u128::from(!d.subsec_nanos().is_multiple_of(1_000_000));
    i64::try_from(ms).ok()
}

/// Milliseconds since the Unix epoch of `t`: `Err(ms)` for a time before the epoch
/// (with its negative, saturated millisecond value) or beyond `i64::MAX` ms
/// (`Err(i64::MIN)`), both of which validation refuses.
pub(crate) fn system_time_to_ms(t: SystemTime) -> Result<i64, i64> {
    match t.duration_since(UNIX_EPOCH) {
        Ok(after) => duration_to_ms(after).ok_or(i64::MIN),
        Err(before) => {
            let ms = duration_to_ms_ceil(before.duration()).unwrap_or(i64::MAX);
            Err(ms.checked_neg().unwrap_or(i64::MIN).min(-1))
        }
    }
}

/// The instant `ms` milliseconds after (or, if negative, before) the Unix epoch.
/// Every `i64` is representable on the platforms duraq supports; should one not be,
/// the epoch itself is returned rather than panicking.
pub(crate) fn ms_to_system_time(ms: i64) -> SystemTime {
    let offset = Duration::from_millis(ms.unsigned_abs());
    let t = if ms >= 0 {
        UNIX_EPOCH.checked_add(offset)
    } else {
        UNIX_EPOCH.checked_sub(offset)
    };
    t.unwrap_or(UNIX_EPOCH)
}

/// A stored non-negative millisecond count as a `Duration` (negatives read as 0).
pub(crate) fn ms_to_duration(ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_are_checked() {
        assert_eq!(duration_to_ms(Duration::from_micros(1_500)), Some(1));
        assert_eq!(duration_to_ms_ceil(Duration::from_micros(1_500)), Some(2));
        assert_eq!(duration_to_ms_ceil(Duration::from_millis(3)), Some(3));
        assert_eq!(duration_to_ms(Duration::MAX), None);
        assert_eq!(duration_to_ms_ceil(Duration::MAX), None);
        let t = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(system_time_to_ms(t), Ok(1_700_000_000_123));
        assert_eq!(ms_to_system_time(1_700_000_000_123), t);
        assert_eq!(system_time_to_ms(UNIX_EPOCH), Ok(0));
        let before = UNIX_EPOCH - Duration::from_millis(5);
        assert_eq!(system_time_to_ms(before), Err(-5));
        assert_eq!(ms_to_system_time(-5), before);
        let tiny = UNIX_EPOCH - Duration::from_nanos(1);
        assert_eq!(system_time_to_ms(tiny), Err(-1));
        if let Some(far) = UNIX_EPOCH.checked_add(Duration::from_secs(u64::MAX / 4)) {
            assert_eq!(system_time_to_ms(far), Err(i64::MIN));
        }
        assert_eq!(ms_to_duration(-3), Duration::ZERO);
    }
}

/// Reads a time a person typed, in ms since the Unix epoch: an RFC 3339 time
/// (`2026-12-04T10:30:00Z`, `…+01:00`, fractions allowed), or a date and time
/// without an offset, read as UTC (`2026-12-04`, `2026-12-04T10:30`,
/// `2026-12-04 10:30:15`: what a browser's `datetime-local` field sends).
/// An offset must be within a day (±23:59, as RFC 3339 and every real zone
/// are; `jiff` alone accepts up to ±25:59). Anything else is `invalid-time`.
/// The one parser of the CLI's time flags and
/// the dashboard's search fields, on `jiff` rather than a hand-written calendar.
///
/// ```
/// use duraq_core::ErrorCode;
/// use duraq_core::inspect::parse_time_ms;
/// assert_eq!(parse_time_ms("1970-01-01T00:00:01Z").unwrap(), 1_000);
/// assert_eq!(parse_time_ms("1970-01-01T01:00:01.5+01:00").unwrap(), 1_500);
/// assert_eq!(parse_time_ms("1970-01-02").unwrap(), 86_400_000);
/// assert_eq!(parse_time_ms("1970-01-01T00:01").unwrap(), 60_000);
/// assert_eq!(parse_time_ms("tomorrow").unwrap_err().code(), ErrorCode::InvalidTime);
/// ```
pub fn parse_time_ms(text: &str) -> crate::Result<i64> {
    let text = text.trim();
    let bad = || {
        crate::Error::invalid(
            crate::ErrorCode::InvalidTime,
            format!("{text:?} is not a time like 2026-12-04T10:30:00Z or 2026-12-04T10:30 (UTC)"),
        )
    };
    if let Ok(t) = text.parse::<jiff::Timestamp>() {
        return offset_within_a_day(text)
            .then(|| t.as_millisecond())
            .ok_or_else(bad);
    }
    let civil = text
        .parse::<jiff::civil::DateTime>()
        .or_else(|_| {
            text.parse::<jiff::civil::Date>()
                .map(|d| d.to_datetime(jiff::civil::Time::midnight()))
        })
        .map_err(|_| bad())?;
    let instant = jiff::tz::TimeZone::UTC
        .to_timestamp(civil)
        .map_err(|_| bad())?;
    Ok(instant.as_millisecond())
}

/// Whether the numeric UTC offset of a parsed RFC 3339 `text`, if any, has
/// hours 0 to 23 (`Z` has none; an annotation like `[Etc/GMT-5]` is not it).
fn offset_within_a_day(text: &str) -> bool {
    let text = text.split('[').next().unwrap_or(text);
    let Some(time) = text.get(10..) else {
        return true;
    };
    time.rfind(['+', '-']).is_none_or(|at| {
        time[at + 1..]
            .get(..2)
            .and_then(|hours| hours.parse::<u8>().ok())
            .is_some_and(|hours| hours <= 23)
    })
}

#[cfg(test)]
mod parse_tests {
    use super::parse_time_ms;

    #[test]
    fn typed_times_parse_and_bad_ones_do_not() {
        assert_eq!(parse_time_ms("1970-01-01").unwrap(), 0);
        assert_eq!(parse_time_ms("2000-02-29T00:00").unwrap(), 951_782_400_000);
        assert_eq!(
            parse_time_ms("2023-11-14 22:13:20Z").unwrap(),
            1_700_000_000_000
        );
        assert_eq!(
            parse_time_ms("2023-11-14T22:13:20").unwrap(),
            1_700_000_000_000
        );
        assert_eq!(parse_time_ms("1970-01-01T00:00:01-00:01").unwrap(), 61_000);
        assert_eq!(parse_time_ms("1970-01-02T00:00:00+23:59").unwrap(), 60_000);
        for bad in [
            "2023-02-29",
            "2023-13-01",
            "2023-1-01",
            "yesterday",
            "2023-01-01T24:00",
            "2026-01-01T00:00:00\u{e9}00:00",
            "1970-01-01T00:00:00-25:00",
            "1970-01-01T00:00:00+24:00",
            "1970-01-01T00:00:00+2559",
            "",
        ] {
            assert_eq!(
                parse_time_ms(bad).unwrap_err().code(),
                crate::ErrorCode::InvalidTime,
                "{bad}"
            );
        }
    }
}
