//! The five cron fields (minute hour day-of-month month day-of-week): their
//! grammar (`*`, lists, ranges, steps, month and day names, the `@daily`-style
//! macros) and matching on a wall clock counted in minutes since 1970. Kept apart
//! from [`super::cron::CronSchedule`] so that the zone (UTC, a fixed offset, an
//! IANA zone) is the only thing the schedule adds to them.
//!
//! Day matching follows Vixie cron: when both day-of-month and day-of-week are
//! restricted (neither starts with `*`), a day matches if either does.

pub(super) const DAY_MINUTES: i64 = 1_440;
/// Every day/month/weekday combination repeats within 28 years (400 would cover
/// century rules, but 28 years past any instant is far enough for a schedule).
pub(super) const SEARCH_DAYS: i64 = 366 * 28;
/// The `hours` bitset of fields that match every hour of the day.
const EVERY_HOUR: u32 = (1 << 24) - 1;

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// The parsed fields, as bitsets of the values each allows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Fields {
    minutes: u64,
    hours: u32,
    days_of_month: u32,
    months: u16,
    days_of_week: u8,
    dom_restricted: bool,
    dow_restricted: bool,
}

impl Fields {
    /// Parses five fields or a macro; the error says what is wrong.
    pub(super) fn parse(text: &str) -> Result<Self, String> {
        let expanded = match text {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other => other,
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(format!("expected 5 fields, found {}", fields.len()));
        }
        let minutes = parse_field(fields[0], 0, 59, &[])?;
        let hours = parse_field(fields[1], 0, 23, &[])?;
        let dom = parse_field(fields[2], 1, 31, &[])?;
        let months = parse_field(fields[3], 1, 12, &MONTHS)?;
        let mut dow = parse_field(fields[4], 0, 7, &DAYS)?;
        if dow & (1 << 7) != 0 {
            dow = (dow | 1) & 0x7f; // 7 is Sunday too
        }
        Ok(Self {
            minutes,
            hours: hours as u32,
            days_of_month: dom as u32,
            months: months as u16,
            days_of_week: dow as u8,
            dom_restricted: !fields[2].starts_with('*'),
            dow_restricted: !fields[4].starts_with('*'),
        })
    }

    /// Whether the fields match every hour of the day.
    pub(super) fn matches_every_hour(&self) -> bool {
        self.hours == EVERY_HOUR
    }

    /// The first matching local minute `m` (minutes since 1970-01-01T00:00 on the
    /// local wall clock) with `from <= m < until`, looking at most 28 years ahead.
    pub(super) fn next_local_minute(&self, from: i64, until: i64) -> Option<i64> {
        let first_day = from.div_euclid(DAY_MINUTES);
        let last_day = until
            .saturating_sub(1)
            .div_euclid(DAY_MINUTES)
            .min(first_day + SEARCH_DAYS);
        for day in first_day..=last_day {
            if !self.day_matches(day) {
                continue;
            }
            let start = if day == first_day {
                from.rem_euclid(DAY_MINUTES)
            } else {
                0
            };
            if let Some(minute_of_day) = self.first_time_from(start) {
                let local = day * DAY_MINUTES + minute_of_day;
                return (local < until).then_some(local);
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
