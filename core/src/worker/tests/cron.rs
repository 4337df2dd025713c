//! The five-field cron parser: syntax, matching rules, offsets, rejections.

use crate::history::MINUTE_MS;
use crate::worker::cron_fields::civil_from_days;
use crate::worker::CronSchedule;
use crate::ErrorCode;

/// Milliseconds of a UTC date-time (test helper, inverse of `civil_from_days`).
fn at(y: i64, mo: u32, d: u32, h: i64, mi: i64) -> i64 {
    let (yy, mm) = if mo <= 2 {
        (y - 1, mo + 9)
    } else {
        (y, mo - 3)
    };
    let era = yy.div_euclid(400);
    let yoe = yy - era * 400;
    let doy = (153 * i64::from(mm) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    ((days * 24 + h) * 60 + mi) * MINUTE_MS
}

fn next(expr: &str, from: i64) -> i64 {
    CronSchedule::parse(expr)
        .unwrap()
        .next_after_ms(from)
        .unwrap()
}

#[test]
fn calendar_round_trips() {
    assert_eq!(civil_from_days(0), (1970, 1, 1));
    assert_eq!(civil_from_days(19_782), (2024, 2, 29));
    assert_eq!(at(2024, 1, 1, 0, 0), 1_704_067_200_000);
}

#[test]
fn every_minute_is_strictly_after() {
    let t = at(2024, 3, 10, 12, 30);
    assert_eq!(next("* * * * *", t), t + MINUTE_MS);
    assert_eq!(next("* * * * *", t + 1), t + MINUTE_MS);
    assert_eq!(next("* * * * *", t - 1), t);
}

#[test]
fn steps_lists_and_ranges() {
    let t = at(2024, 3, 10, 12, 31);
    assert_eq!(next("*/15 * * * *", t), at(2024, 3, 10, 12, 45));
    assert_eq!(next("5,40 * * * *", t), at(2024, 3, 10, 12, 40));
    assert_eq!(next("0 9-17/4 * * *", t), at(2024, 3, 10, 13, 0));
    assert_eq!(
        next("0 9-17/4 * * *", at(2024, 3, 10, 17, 1)),
        at(2024, 3, 11, 9, 0)
    );
    assert_eq!(next("10/20 * * * *", t), at(2024, 3, 10, 12, 50));
}

#[test]
fn months_and_names() {
    let t = at(2024, 3, 10, 12, 31);
    assert_eq!(next("0 0 1 jan *", t), at(2025, 1, 1, 0, 0));
    assert_eq!(
        next("30 6 * * MON-FRI", at(2024, 3, 9, 7, 0)),
        at(2024, 3, 11, 6, 30)
    ); // Sat → Mon
    assert_eq!(next("0 0 * * 7", t), at(2024, 3, 17, 0, 0)); // 7 = Sunday; Mar 10 is a Sunday
    assert_eq!(next("@monthly", t), at(2024, 4, 1, 0, 0));
    assert_eq!(next("0 0 29 2 *", t), at(2028, 2, 29, 0, 0));
}

#[test]
fn day_of_month_or_day_of_week_when_both_restricted() {
    // The 15th or any Friday: from Mon 2024-03-11, Friday the 15th is both.
    assert_eq!(
        next("0 0 13 * fri", at(2024, 3, 11, 0, 0)),
        at(2024, 3, 13, 0, 0)
    );
    assert_eq!(
        next("0 0 13 * fri", at(2024, 3, 13, 0, 0)),
        at(2024, 3, 15, 0, 0)
    );
    // Day-of-week `*` means day-of-month alone decides.
    assert_eq!(
        next("0 0 13 * *", at(2024, 3, 13, 0, 0)),
        at(2024, 4, 13, 0, 0)
    );
}

#[test]
fn fixed_offset() {
    // 09:00 at UTC+2 is 07:00 UTC.
    let s = CronSchedule::parse("0 9 * * *")
        .unwrap()
        .with_utc_offset_minutes(120);
    assert_eq!(
        s.next_after_ms(at(2024, 3, 10, 6, 0)),
        Some(at(2024, 3, 10, 7, 0))
    );
    let west = CronSchedule::parse("0 0 * * *")
        .unwrap()
        .with_utc_offset_minutes(-300);
    assert_eq!(
        west.next_after_ms(at(2024, 3, 10, 4, 0)),
        Some(at(2024, 3, 10, 5, 0))
    );
}

#[test]
fn rejects_bad_expressions() {
    for bad in [
        "",
        "* * * *",
        "* * * * * *",
        "60 * * * *",
        "* 24 * * *",
        "* * 0 * *",
        "* * * 13 *",
        "* * * * 8",
        "*/0 * * * *",
        "5-1 * * * *",
        "a * * * *",
        "0 0 30 2 *",
        "1,,2 * * * *",
    ] {
        let err = CronSchedule::parse(bad).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidCron, "{bad:?}");
    }
}
