//! A cron schedule's next tick in an IANA zone. The zone's history is a run of
//! segments of constant UTC offset between transitions (jiff's bundled tz
//! database); inside one segment the local wall clock is UTC plus that offset, so
//! the fixed-offset search applies there unchanged. The daylight-saving rules
//! (written down on `CronSchedule`) act only at the segment boundaries:
//!
//! - at a spring-forward transition `T` the wall-clock times
//!   `[T + old offset, T + new offset)` never happen; if one of them matches,
//!   the tick is `T` itself, the first valid instant after the gap (checked
//!   when a segment starts at `T`, so also when the search starts there);
//! - after a fall-back transition the wall-clock times up to `T + old offset`
//!   happen a second time; a match there is skipped (it fired in the first pass)
//!   unless the schedule matches every hour of the day.
//!
//! Offsets are kept in milliseconds (the tz database has offsets with seconds
//! for local mean time before 1900), local minutes as minutes since 1970 on the
//! wall clock.

use jiff::tz::{AmbiguousOffset, Offset, TimeZone};
use jiff::Timestamp;

use super::cron_fields::{Fields, SEARCH_DAYS};
use crate::history::MINUTE_MS;

const DAY_MS: i64 = 86_400_000;

/// The first tick of the cron `schedule` strictly after `after_ms` on the wall clock of
/// `tz`, or `None` if none falls within 28 years (or the range of dates jiff
/// knows, years −9999 to 9999).
pub(super) fn next_in_zone(schedule: &Fields, tz: &TimeZone, after_ms: i64) -> Option<i64> {
    let end = after_ms.checked_add(SEARCH_DAYS * DAY_MS)?;
    // The earliest instant the answer may be (inclusive).
    let mut from = after_ms.checked_add(1)?;
    while from <= end {
        let at = Timestamp::from_millisecond(from).ok()?;
        let offset = offset_ms(tz.to_offset(at));
        let just_before = Timestamp::from_millisecond(from - 1).ok()?;
        let previous = offset_ms(tz.to_offset(just_before));
        if previous < offset {
            // `from` is a spring-forward transition: the wall clock jumped over
            // `[from + previous, from + offset)`; a match in there fires once, now.
            let gap = ceil_minutes(from + previous)..ceil_minutes(from + offset);
            if schedule.next_local_minute(gap.start, gap.end).is_some() {
                return Some(from);
            }
        }
        // `following` yields transitions strictly after `from`; the segment is
        // `[from, segment_end)` at `offset`.
        let transition = tz.following(at).next();
        let segment_end = transition
            .as_ref()
            .map_or(end + 1, |t| t.timestamp().as_millisecond());
        let lo = ceil_minutes(from + offset);
        let hi = ceil_minutes(segment_end + offset);
        if let Some(minute) = schedule.next_local_minute(lo, hi) {
            let tick = minute * MINUTE_MS - offset;
            if schedule.matches_every_hour() || !is_second_pass(tz, minute, offset) {
                return Some(tick);
            }
            from = tick + 1;
            continue;
        }
        transition?;
        from = segment_end;
    }
    None
}

/// Whether the wall-clock minute `minute`, read at `offset`, is the second
/// occurrence of a time repeated by a fall-back transition.
fn is_second_pass(tz: &TimeZone, minute: i64, offset: i64) -> bool {
    let Ok(local) = Timestamp::from_millisecond(minute * MINUTE_MS) else {
        return false;
    };
    let civil = Offset::UTC.to_datetime(local);
    match tz.to_ambiguous_timestamp(civil).offset() {
        AmbiguousOffset::Fold { before, after } => before != after && offset_ms(after) == offset,
        AmbiguousOffset::Unambiguous { .. } | AmbiguousOffset::Gap { .. } => false,
    }
}

fn offset_ms(offset: Offset) -> i64 {
    i64::from(offset.seconds()) * 1_000
}

/// The first whole minute at or after the local instant `local_ms`.
fn ceil_minutes(local_ms: i64) -> i64 {
    local_ms.div_euclid(MINUTE_MS) + i64::from(local_ms.rem_euclid(MINUTE_MS) != 0)
}
