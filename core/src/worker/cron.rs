//! A cron schedule: five fields (`cron_fields`: a small hand-written grammar,
//! since the scheduler needs only "the first matching minute after t") read on
//! the wall clock of UTC, a fixed offset, or an IANA zone. The zone's time
//! arithmetic (offsets, transitions, daylight saving) is jiff's with its bundled
//! tz database (`cron_zone`), never a hand-written table, and never a file read
//! from the machine.

use std::fmt;

use jiff::tz::TimeZone;

use super::cron_fields::{Fields, DAY_MINUTES, SEARCH_DAYS};
use super::WorkerError;

use crate::history::MINUTE_MS;

/// A parsed cron schedule, with the zone its fields are read in.
///
/// ```
/// use duraq_core::ErrorCode;
/// use duraq_core::worker::CronSchedule;
/// let every_15 = CronSchedule::parse("*/15 * * * *").unwrap();
/// // 2024-01-01T00:07:00Z → 00:15
/// assert_eq!(every_15.next_after_ms(1_704_067_620_000), Some(1_704_068_100_000));
/// assert_eq!(CronSchedule::parse("61 * * * *").unwrap_err().code(), ErrorCode::InvalidCron);
///
/// // 09:00 on Oslo's wall clock, summer (UTC+2) or winter (UTC+1).
/// let oslo = CronSchedule::parse("CRON_TZ=Europe/Oslo 0 9 * * *").unwrap();
/// assert_eq!(oslo.time_zone(), Some("Europe/Oslo"));
/// // 2026-07-01T00:00Z → 2026-07-01T07:00Z (09:00 CEST)
/// assert_eq!(oslo.next_after_ms(1_782_864_000_000), Some(1_782_889_200_000));
/// assert_eq!(
///     CronSchedule::parse("TZ=Mars/Olympus 0 9 * * *").unwrap_err().code(),
///     ErrorCode::InvalidTimeZone,
/// );
/// ```
///
/// # Time zones and daylight saving
///
/// In an IANA zone ([`CronSchedule::in_time_zone`], or a `CRON_TZ=<zone>` /
/// `TZ=<zone>` prefix) the fields match the zone's wall clock, so `0 9 * * *`
/// stays at 09:00 local across daylight-saving changes. Two rules settle the
/// wall-clock times a change skips or repeats:
///
/// - **Skipped (spring forward).** A matching time that does not exist that day
///   (`30 2 * * *` when 02:00 jumps to 03:00) fires once, at the first valid
///   instant after the gap (03:00 local). Several matches inside one gap fire
///   once together, and with a match at the end of the gap itself.
/// - **Repeated (fall back).** A matching time that occurs twice (`30 2 * * *`
///   when 03:00 falls back to 02:00) fires once, at its first occurrence. A
///   schedule that matches every hour of the day (`*` or `*/1` in the hour field,
///   e.g. `*/15 * * * *` or `@hourly`) follows elapsed time instead and fires in
///   both passes, so it never pauses for an hour.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CronSchedule {
    expr: String,
    text: String,
    pub(super) fields: Fields,
    zone: Zone,
}

/// Where the fields are read: a fixed offset from UTC, or an IANA zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Zone {
    Fixed(i32),
    Iana { name: String, tz: TimeZone },
}

impl Zone {
    /// The IANA zone `name` from the bundled database (`invalid-time-zone`).
    pub(super) fn named(name: &str) -> Result<Self, WorkerError> {
        let bad = |reason: String| WorkerError::InvalidTimeZone {
            zone: name.to_owned(),
            reason,
        };
        let trimmed = name.trim();
        if trimmed.is_empty() {
            return Err(bad("a time zone name is empty".to_owned()));
        }
        let tz = TimeZone::get(trimmed).map_err(|e| bad(e.to_string()))?;
        let name = tz.iana_name().unwrap_or(trimmed).to_owned();
        Ok(Self::Iana { name, tz })
    }
}

impl CronSchedule {
    /// Parses `expr`, in UTC unless it starts with `CRON_TZ=<zone>` or
    /// `TZ=<zone>` (an IANA name such as `Europe/Oslo`).
    ///
    /// Errors: `invalid-cron` on bad syntax, values out of range, or a schedule
    /// that never fires (`0 0 30 2 *`); `invalid-time-zone` for a zone the IANA
    /// database does not know.
    pub fn parse(expr: &str) -> Result<Self, WorkerError> {
        let err = |reason: String| WorkerError::InvalidCron {
            expr: expr.to_owned(),
            reason,
        };
        let trimmed = expr.trim();
        let (zone, body) = match ["CRON_TZ=", "TZ="]
            .iter()
            .find_map(|p| trimmed.strip_prefix(p))
        {
            Some(rest) => {
                let (zone, body) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                (Some(zone), body.trim())
            }
            None => (None, trimmed),
        };
        let schedule = Self {
            expr: trimmed.to_owned(),
            text: body.to_owned(),
            fields: Fields::parse(body).map_err(err)?,
            zone: Zone::Fixed(0),
        };
        // Whether the fields ever match a date does not depend on the zone.
        if schedule.next_after_ms(0).is_none() {
            return Err(err("the schedule never fires".to_owned()));
        }
        match zone {
            Some(zone) => schedule.in_time_zone(zone),
            None => Ok(schedule),
        }
    }

    /// Evaluates the fields at a fixed offset from UTC (e.g. `-300` for UTC−5),
    /// replacing any zone.
    pub fn with_utc_offset_minutes(mut self, offset_minutes: i32) -> Self {
        self.zone = Zone::Fixed(offset_minutes);
        self
    }

    /// Evaluates the fields on the wall clock of the IANA zone `name` (e.g.
    /// `Europe/Oslo`), replacing any offset or earlier zone. The zone data is
    /// the tz database bundled with duraq; nothing is read from the machine.
    ///
    /// Errors: `invalid-time-zone` if the database has no zone of that name.
    ///
    /// ```
    /// use duraq_core::ErrorCode;
    /// use duraq_core::worker::CronSchedule;
    /// let kolkata = CronSchedule::parse("0 9 * * *").unwrap().in_time_zone("Asia/Kolkata").unwrap();
    /// // 09:00 IST is 03:30 UTC: 2026-01-01T00:00Z → 2026-01-01T03:30Z
    /// assert_eq!(kolkata.next_after_ms(1_767_225_600_000), Some(1_767_238_200_000));
    /// let bad = CronSchedule::parse("0 9 * * *").unwrap().in_time_zone("Europe/Atlantis");
    /// assert_eq!(bad.unwrap_err().code(), ErrorCode::InvalidTimeZone);
    /// ```
    pub fn in_time_zone(mut self, name: &str) -> Result<Self, WorkerError> {
        self.zone = Zone::named(name)?;
        Ok(self)
    }

    /// The expression as given (with its `CRON_TZ=` prefix, if any).
    pub fn expr(&self) -> &str {
        &self.expr
    }

    /// The five fields (or macro) without a zone prefix.
    pub fn fields(&self) -> &str {
        &self.text
    }

    /// The fixed offset from UTC in minutes (0 when an IANA zone is set: see
    /// [`CronSchedule::time_zone`]).
    pub fn utc_offset_minutes(&self) -> i32 {
        match self.zone {
            Zone::Fixed(offset) => offset,
            Zone::Iana { .. } => 0,
        }
    }

    /// The IANA zone the fields are read in, if one is set.
    pub fn time_zone(&self) -> Option<&str> {
        match &self.zone {
            Zone::Fixed(_) => None,
            Zone::Iana { name, .. } => Some(name),
        }
    }

    /// The zone for people: `Europe/Oslo`, `UTC`, or `UTC+05:30` for an offset.
    pub fn zone_label(&self) -> String {
        match &self.zone {
            Zone::Iana { name, .. } => name.clone(),
            Zone::Fixed(0) => "UTC".to_owned(),
            Zone::Fixed(m) => {
                let sign = if *m < 0 { '-' } else { '+' };
                let a = m.unsigned_abs();
                format!("UTC{sign}{:02}:{:02}", a / 60, a % 60)
            }
        }
    }

    /// The first matching minute strictly after `after_ms` (ms since the epoch),
    /// or `None` if none falls within 28 years. In an IANA zone, a time skipped
    /// by a daylight-saving change fires at the end of the gap and a repeated one
    /// once, as the type's docs say.
    pub fn next_after_ms(&self, after_ms: i64) -> Option<i64> {
        match &self.zone {
            Zone::Iana { tz, .. } => super::cron_zone::next_in_zone(&self.fields, tz, after_ms),
            Zone::Fixed(offset) => {
                let offset = i64::from(*offset);
                // First whole local minute strictly after `after_ms`.
                let start = (after_ms.div_euclid(MINUTE_MS) + 1).checked_add(offset)?;
                let end = start.checked_add(SEARCH_DAYS * DAY_MINUTES)?;
                let local = self.fields.next_local_minute(start, end)?;
                (local - offset).checked_mul(MINUTE_MS)
            }
        }
    }
}

/// `0 9 * * * (Europe/Oslo)`: the fields and the zone they are read in.
impl fmt::Display for CronSchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.text, self.zone_label())
    }
}
