//! Cron schedules in IANA zones, against the real tz data of real transitions:
//! Oslo's 2026 spring-forward (02:00 → 03:00 on 29 March) and fall-back (03:00 →
//! 02:00 on 25 October), Adelaide's and Kolkata's half-hour offsets, Lord Howe's
//! half-hour daylight saving; then a property test against a minute-by-minute
//! oracle.

use jiff::tz::{AmbiguousOffset, Offset, TimeZone};
use jiff::Timestamp;
use proptest::prelude::*;

use crate::worker::CronSchedule;
use crate::{ErrorCode, PeriodicJob};

/// Milliseconds of an RFC 3339 instant.
fn at(text: &str) -> i64 {
    text.parse::<Timestamp>().unwrap().as_millisecond()
}

fn zoned(expr: &str, zone: &str) -> CronSchedule {
    CronSchedule::parse(expr)
        .unwrap()
        .in_time_zone(zone)
        .unwrap()
}

/// The ticks after `from`, `n` of them, as RFC 3339 UTC instants.
fn ticks(s: &CronSchedule, from: &str, n: usize) -> Vec<String> {
    let mut after = at(from);
    (0..n)
        .map(|_| {
            after = s.next_after_ms(after).unwrap();
            Timestamp::from_millisecond(after).unwrap().to_string()
        })
        .collect()
}

#[test]
fn a_time_skipped_by_spring_forward_fires_once_at_the_end_of_the_gap() {
    let s = zoned("30 2 * * *", "Europe/Oslo");
    // 02:30 CET on the 28th, then 03:00 CEST on the 29th (02:30 never happens),
    // then 02:30 CEST on the 30th.
    assert_eq!(
        ticks(&s, "2026-03-28T00:00:00Z", 3),
        [
            "2026-03-28T01:30:00Z",
            "2026-03-29T01:00:00Z",
            "2026-03-30T00:30:00Z"
        ]
    );
    assert_eq!(
        s.next_after_ms(at("2026-03-29T00:59:59.999Z")),
        Some(at("2026-03-29T01:00:00Z"))
    );
    // Several matches inside one gap, and one at its end, fire once together.
    let twenties = zoned("*/20 2,3 * * *", "Europe/Oslo");
    assert_eq!(
        ticks(&twenties, "2026-03-29T00:30:00Z", 3),
        [
            "2026-03-29T01:00:00Z",
            "2026-03-29T01:20:00Z",
            "2026-03-29T01:40:00Z"
        ]
    );
}

#[test]
fn a_time_repeated_by_fall_back_fires_once_at_its_first_occurrence() {
    let s = zoned("30 2 * * *", "Europe/Oslo");
    // 02:30 CEST on the 25th (the first pass); 02:30 CET an hour later is skipped.
    assert_eq!(
        ticks(&s, "2026-10-24T12:00:00Z", 2),
        ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]
    );
    // From inside the second pass, too.
    assert_eq!(
        s.next_after_ms(at("2026-10-25T01:10:00Z")),
        Some(at("2026-10-26T01:30:00Z"))
    );
}

#[test]
fn nine_oclock_stays_at_nine_local_across_both_changes() {
    let s = CronSchedule::parse("CRON_TZ=Europe/Oslo 0 9 * * *").unwrap();
    assert_eq!(
        ticks(&s, "2026-03-27T12:00:00Z", 3),
        [
            "2026-03-28T08:00:00Z",
            "2026-03-29T07:00:00Z",
            "2026-03-30T07:00:00Z"
        ]
    );
    assert_eq!(
        ticks(&s, "2026-10-23T12:00:00Z", 3),
        [
            "2026-10-24T07:00:00Z",
            "2026-10-25T08:00:00Z",
            "2026-10-26T08:00:00Z"
        ]
    );
}

#[test]
fn schedules_matching_every_hour_follow_elapsed_time() {
    let hourly = zoned("@hourly", "Europe/Oslo");
    // Fall back: 02:00 CEST and 02:00 CET both fire: one tick per real hour.
    assert_eq!(
        ticks(&hourly, "2026-10-24T22:30:00Z", 4),
        [
            "2026-10-24T23:00:00Z",
            "2026-10-25T00:00:00Z",
            "2026-10-25T01:00:00Z",
            "2026-10-25T02:00:00Z"
        ]
    );
    // Spring forward: 02:00 does not exist and fires with 03:00.
    assert_eq!(
        ticks(&hourly, "2026-03-28T23:30:00Z", 3),
        [
            "2026-03-29T00:00:00Z",
            "2026-03-29T01:00:00Z",
            "2026-03-29T02:00:00Z"
        ]
    );
}

#[test]
fn half_hour_offsets_and_half_hour_daylight_saving() {
    let kolkata = CronSchedule::parse("TZ=Asia/Kolkata 0 9 * * *").unwrap();
    assert_eq!(
        ticks(&kolkata, "2026-06-01T00:00:00Z", 1),
        ["2026-06-01T03:30:00Z"]
    );
    // Adelaide: UTC+10:30 in summer, +09:30 in winter; 2026-10-04 02:00 → 03:00.
    let adelaide = zoned("0 9 * * *", "Australia/Adelaide");
    assert_eq!(
        ticks(&adelaide, "2026-01-10T00:00:00Z", 1),
        ["2026-01-10T22:30:00Z"]
    );
    assert_eq!(
        ticks(&adelaide, "2026-07-10T00:00:00Z", 1),
        ["2026-07-10T23:30:00Z"]
    );
    let skipped = zoned("30 2 * * *", "Australia/Adelaide");
    assert_eq!(
        ticks(&skipped, "2026-10-03T12:00:00Z", 2),
        ["2026-10-03T16:30:00Z", "2026-10-04T16:00:00Z"]
    );
    // Lord Howe moves by 30 minutes (02:00 → 02:30 at +10:30 → +11:00): 02:15
    // falls in the gap and fires at 02:30.
    let howe = zoned("15 2 * * *", "Australia/Lord_Howe");
    assert_eq!(
        ticks(&howe, "2026-10-03T12:00:00Z", 1),
        ["2026-10-03T15:30:00Z"]
    );
}

#[test]
fn zones_come_from_a_prefix_or_the_builder_and_unknown_ones_are_refused() {
    let prefixed = CronSchedule::parse("CRON_TZ=Europe/Oslo 0 9 * * *").unwrap();
    let built = zoned("0 9 * * *", "Europe/Oslo");
    assert_eq!(prefixed.time_zone(), Some("Europe/Oslo"));
    assert_eq!(prefixed.fields(), "0 9 * * *");
    assert_eq!(prefixed.expr(), "CRON_TZ=Europe/Oslo 0 9 * * *");
    assert_eq!(prefixed.to_string(), "0 9 * * * (Europe/Oslo)");
    let t = at("2026-03-29T00:00:00Z");
    assert_eq!(prefixed.next_after_ms(t), built.next_after_ms(t));
    let macro_zoned = CronSchedule::parse("TZ=Asia/Kolkata @daily").unwrap();
    assert_eq!(
        macro_zoned.next_after_ms(t),
        Some(at("2026-03-29T18:30:00Z"))
    );
    for bad in [
        "CRON_TZ=Nowhere/Land 0 9 * * *",
        "CRON_TZ= 0 9 * * *",
        "TZ=UTC+2 0 9 * * *",
    ] {
        let err = CronSchedule::parse(bad).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidTimeZone, "{bad:?}");
        assert_eq!(err.code().as_str(), "invalid-time-zone");
    }
    // Bad fields stay `invalid-cron`, zone or not.
    let err = CronSchedule::parse("CRON_TZ=Europe/Oslo 61 * * * *").unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidCron);
    assert_eq!(
        built.clone().in_time_zone("").unwrap_err().code(),
        ErrorCode::InvalidTimeZone
    );
    // A fixed offset replaces the zone, and the other way round.
    let fixed = built.clone().with_utc_offset_minutes(330);
    assert_eq!(
        (fixed.time_zone(), fixed.zone_label()),
        (None, "UTC+05:30".to_owned())
    );
    assert_eq!(fixed.next_after_ms(t), Some(at("2026-03-29T03:30:00Z")));
    assert_eq!(
        CronSchedule::parse("0 9 * * *").unwrap().zone_label(),
        "UTC"
    );
    let job = PeriodicJob::cron("x", "0 9 * * *", "app.x").unwrap();
    assert_eq!(
        job.clone().in_time_zone("Mars/Olympus").unwrap_err().code(),
        ErrorCode::InvalidTimeZone
    );
    let every = PeriodicJob::every("y", std::time::Duration::from_secs(60), "app.y").unwrap();
    assert_eq!(
        every.clone().in_time_zone("Oslo").unwrap_err().code(),
        ErrorCode::InvalidTimeZone
    );
    let every = every.in_time_zone("Europe/Oslo").unwrap();
    assert_eq!(every.schedule().to_string(), "every 60s");
    let job = job
        .utc_offset_minutes(60)
        .in_time_zone("Europe/Oslo")
        .unwrap();
    assert_eq!(job.schedule().to_string(), "0 9 * * * (Europe/Oslo)");
}

/// Whether `schedule` fires at the whole UTC minute `u` in `tz`, decided minute
/// by minute: the wall-clock minute matches (and is not the repeat of a time
/// that already fired), or `u` ends a gap that swallowed a matching minute.
fn fires_at(schedule: &CronSchedule, fields: &CronSchedule, tz: &TimeZone, u: i64) -> bool {
    let ts = Timestamp::from_millisecond(u).unwrap();
    let off = i64::from(tz.to_offset(ts).seconds()) * 1000;
    let local = u + off;
    let matches = |local_ms: i64| fields.next_after_ms(local_ms - 1) == Some(local_ms);
    if matches(local) {
        let civil = Offset::UTC.to_datetime(Timestamp::from_millisecond(local).unwrap());
        let repeat = matches!(
            tz.to_ambiguous_timestamp(civil).offset(),
            AmbiguousOffset::Fold { after, .. } if i64::from(after.seconds()) * 1000 == off
        );
        if !repeat || schedule.fields.matches_every_hour() {
            return true;
        }
    }
    let before = i64::from(
        tz.to_offset(Timestamp::from_millisecond(u - 1).unwrap())
            .seconds(),
    ) * 1000;
    (u + before..u + off).step_by(60_000).any(matches)
}

proptest! {
    #[test]
    fn next_after_is_the_first_firing_minute_and_increases(
        minute in prop::sample::select(vec!["*", "*/15", "0", "30", "5,35", "59"]),
        hour in prop::sample::select(vec!["*", "2", "1-3", "9", "*/6", "0,23"]),
        zone in prop::sample::select(vec![
            "Europe/Oslo", "America/New_York", "Australia/Adelaide",
            "Australia/Lord_Howe", "Asia/Kolkata", "UTC",
        ]),
        year_start in 946_684_800_000i64..2_840_140_800_000, // 2000 to 2060
        nth_transition in 0usize..3,
        minutes_from_it in -1_500i64..120,
        nudge in prop::sample::select(vec![0i64, -1, 1]),
    ) {
        let expr = format!("{minute} {hour} * * *");
        let fields = CronSchedule::parse(&expr).unwrap();
        let schedule = fields.clone().in_time_zone(zone).unwrap();
        let tz = TimeZone::get(zone).unwrap();
        // Start near one of the zone's transitions, where the rules act.
        let start = Timestamp::from_millisecond(year_start).unwrap();
        let near = tz
            .following(start)
            .nth(nth_transition)
            .map_or(year_start, |t| t.timestamp().as_millisecond());
        let after = near + minutes_from_it * 60_000 + nudge;
        let first = schedule.next_after_ms(after).unwrap();
        let second = schedule.next_after_ms(first).unwrap();
        prop_assert!(after < first && first < second);
        for tick in [first, second] {
            prop_assert!(fires_at(&schedule, &fields, &tz, tick), "{expr} in {zone}: {tick}");
        }
        // No firing minute is passed over on the way.
        let mut u = (after.div_euclid(60_000) + 1) * 60_000;
        while u < first {
            prop_assert!(!fires_at(&schedule, &fields, &tz, u), "{expr} in {zone}: missed {u}");
            u += 60_000;
        }
    }
}
