//! A small five-field cron parser (minute hour day-of-month month day-of-week)
//! with `*`, lists, ranges, steps, month/day names and the `@daily`-style macros,
//! evaluated in UTC or at a fixed offset. Hand-written rather than a crate: the
//! grammar is tiny, core stays free of a date library, and the periodic scheduler
//! needs only one operation, "the first matching minute after t".
//!
//! Day matching follows Vixie cron: when both day-of-month and day-of-week are
//! restricted (neither starts with `*`), a day matches if either does.

use super::WorkerError;

pub(super) const MINUTE_MS: i64 = 60_000;
const DAY_MINUTES: i64 = 1_440;
/// Every day/month/weekday combination repeats within 28 years (400 would cover
/// century rules, but 28 years past any instant is far enough for a schedule).
const SEARCH_DAYS: i64 = 366 * 28;

/// A parsed cron schedule.
///
/// ```
/// use duraq_core::{CronSchedule, ErrorCode};
/// let every_15 = CronSchedule::parse("*/15 * * * *").unwrap();
/// // 2024-01-01T00:07:00Z → 00:15
/// assert_eq!(every_15.next_after_ms(1_704_067_620_000), Some(1_704_068_100_000));
/// assert_eq!(CronSchedule::parse("61 * * * *").unwrap_err().code(), ErrorCode::InvalidCron);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CronSchedule {
    expr: String,
    minutes: u64,
    hours: u32,
    days_of_month: u32,
    months: u16,
    days_of_week: u8,
    dom_restricted: bool,
    dow_restricted: bool,
    offset_minutes: i32,
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

impl CronSchedule {
    /// Parses `expr` (UTC). Errors with `invalid-cron` on bad syntax, values out of
    /// range, or a schedule that never fires (`0 0 30 2 *`).
    pub fn parse(expr: &str) -> Result<Self, WorkerError> {
        let err = |reason: String| WorkerError::InvalidCron {
            expr: expr.to_owned(),
            reason,
        };
        let expanded = match expr.trim() {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other => other,
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(err(format!("expected 5 fields, found {}", fields.len())));
        }
        let minutes = parse_field(fields[0], 0, 59, &[]).map_err(&err)?;
        let hours = parse_field(fields[1], 0, 23, &[]).map_err(&err)?;
        let dom = parse_field(fields[2], 1, 31, &[]).map_err(&err)?;
        let months = parse_field(fields[3], 1, 12, &MONTHS).map_err(&err)?;
        let mut dow = parse_field(fields[4], 0, 7, &DAYS).map_err(&err)?;
        if dow & (1 << 7) != 0 {
            dow = (dow | 1) & 0x7f; // 7 is Sunday too
        }
        let schedule = Self {
            expr: expr.trim().to_owned(),
            minutes,
            hours: hours as u32,
            days_of_month: dom as u32,
            months: months as u16,
            days_of_week: dow as u8,
            dom_restricted: !fields[2].starts_with('*'),
            dow_restricted: !fields[4].starts_with('*'),
            offset_minutes: 0,
        };
        if schedule.next_after_ms(0).is_none() {
            return Err(err("the schedule never fires".to_owned()));
        }
        Ok(schedule)
    }

    /// Evaluates the fields at a fixed offset from UTC (e.g. `-300` for UTC−5).
    pub fn with_utc_offset_minutes(mut self, offset_minutes: i32) -> Self {
        self.offset_minutes = offset_minutes;
        self
    }

    /// The expression as given.
    pub fn expr(&self) -> &str {
        &self.expr
    }

    /// The offset from UTC in minutes.
    pub fn utc_offset_minutes(&self) -> i32 {
        self.offset_minutes
    }

    /// The first matching minute strictly after `after_ms` (ms since the epoch),
    /// or `None` if none falls within 28 years.
    pub fn next_after_ms(&self, after_ms: i64) -> Option<i64> {
        let offset = i64::from(self.offset_minutes);
        // First whole local minute strictly after `after_ms`.
        let start = (after_ms.div_euclid(MINUTE_MS) + 1).checked_add(offset)?;
        let first_day = start.div_euclid(DAY_MINUTES);
        let start_minute_of_day = start.rem_euclid(DAY_MINUTES);
        for day in first_day..first_day + SEARCH_DAYS {
            if !self.day_matches(day) {
                continue;
            }
            let from = if day == first_day {
                start_minute_of_day
            } else {
                0
            };
            if let Some(minute_of_day) = self.first_time_from(from) {
                let local = day * DAY_MINUTES + minute_of_day;
                return (local - offset).checked_mul(MINUTE_MS);
            }
        }
        None
    }

    fn day_matches(&self, day: i64) -> bool {
        let (_, month, dom) = civil_from_days(day);
        if self.months & (1 << month) == 0 {
            return false;
        }
        let weekday = (day + 4).rem_euclid(7) as u32; // 1970-01-01 was a Thursday
        let dom_ok = self.days_of_month & (1 << dom) != 0;
        let dow_ok = self.days_of_week & (1 << weekday) != 0;
        if self.dom_restricted && self.dow_restricted {
            dom_ok || dow_ok
        } else {
            dom_ok && dow_ok
        }
    }

    /// The first matching minute of the day at or after minute `from`.
    fn first_time_from(&self, from: i64) -> Option<i64> {
        let (h0, m0) = (from / 60, from % 60);
        (h0..24)
            .filter(|h| self.hours & (1 << h) != 0)
            .find_map(|h| {
                let lo = if h == h0 { m0 } else { 0 };
                (lo..60)
                    .find(|m| self.minutes & (1 << m) != 0)
                    .map(|m| h * 60 + m)
            })
    }
}

/// Parses one field into a bitset of allowed values in `min..=max`.
fn parse_field(field: &str, min: u32, max: u32, names: &[&str]) -> Result<u64, String> {
    let mut bits = 0u64;
    for item in field.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((r, s)) => {
                let step: u32 = s
                    .parse()
                    .map_err(|_| format!("bad step {s:?} in {field:?}"))?;
                if step == 0 {
                    return Err(format!("step 0 in {field:?}"));
                }
                (r, Some(step))
            }
            None => (item, None),
        };
        let (lo, hi) = if range == "*" {
            (min, max)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(a, min, max, names)?, value(b, min, max, names)?)
        } else {
            let v = value(range, min, max, names)?;
            // `a/step` means from a to the end of the range.
            (v, if step.is_some() { max } else { v })
        };
        if lo > hi {
            return Err(format!("range {range:?} runs backwards"));
        }
        let step = step.unwrap_or(1);
        let mut v = lo;
        while v <= hi {
            bits |= 1 << v;
            v += step;
        }
    }
    Ok(bits)
}

fn value(text: &str, min: u32, max: u32, names: &[&str]) -> Result<u32, String> {
    let lower = text.to_ascii_lowercase();
    let offset = if names.len() == 12 { 1 } else { 0 };
    let v = match names.iter().position(|n| *n == lower) {
        Some(i) => i as u32 + offset,
        None => text.parse().map_err(|_| format!("bad value {text:?}"))?,
    };
    if v < min || v > max {
        return Err(format!("{v} is outside {min}-{max}"));
    }
    Ok(v)
}

/// (year, month 1–12, day 1–31) of a day count since 1970-01-01 (H. Hinnant).
pub(super) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}
