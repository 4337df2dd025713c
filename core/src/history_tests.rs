//! The bucketing arithmetic of [`super::throughput`].

use super::*;

fn sample(minute: i64, queue: &str, completed: i64, failed: i64) -> HistorySample {
    HistorySample {
        minute_ms: minute * MINUTE_MS,
        queue: queue.to_owned(),
        totals: OutcomeTotals {
            completed,
            failed,
            ..OutcomeTotals::default()
        },
    }
}

#[test]
fn consecutive_samples_give_per_minute_differences() {
    let samples = [
        sample(100, "a", 0, 0),
        sample(101, "a", 4, 1),
        sample(102, "a", 10, 1),
    ];
    let points = throughput(&samples, None, HistoryRange::Hour, 102 * MINUTE_MS + 5);
    assert_eq!(points.len(), 60);
    assert_eq!(points[59].start_ms, 102 * MINUTE_MS);
    assert_eq!(points[59].counts, None, "no sample after the last one yet");
    assert_eq!(points[58].counts.unwrap().completed, 6);
    assert_eq!(points[57].counts.unwrap().completed, 4);
    assert_eq!(points[57].counts.unwrap().failed, 1);
    assert_eq!(points[56].counts, None, "nothing sampled before minute 100");
}

#[test]
fn a_queue_first_sampled_later_counts_from_zero() {
    let samples = [
        sample(100, "a", 3, 0),
        sample(101, "a", 3, 0),
        sample(101, "b", 7, 2),
    ];
    let points = throughput(&samples, None, HistoryRange::Hour, 101 * MINUTE_MS);
    assert_eq!(points[58].counts.unwrap().completed, 7);
    assert_eq!(points[58].counts.unwrap().failed, 2);
}

#[test]
fn a_queue_filter_keeps_only_that_queue() {
    let samples = [
        sample(100, "a", 0, 0),
        sample(100, "b", 0, 0),
        sample(101, "a", 5, 0),
        sample(101, "b", 9, 0),
    ];
    let points = throughput(&samples, Some("b"), HistoryRange::Hour, 101 * MINUTE_MS);
    assert_eq!(throughput_sum(&points).completed, 9);
    let none = throughput(&samples, Some("c"), HistoryRange::Hour, 101 * MINUTE_MS);
    assert_eq!(none[58].counts, Some(OutcomeTotals::default()));
}

#[test]
fn coarse_buckets_add_up_their_minutes_and_gaps_stay_gaps() {
    // 15-minute buckets: minutes 0..=3 sampled, then nothing until minute 40.
    let samples = [
        sample(0, "a", 0, 0),
        sample(1, "a", 1, 0),
        sample(2, "a", 3, 0),
        sample(3, "a", 6, 0),
        sample(40, "a", 10, 0),
    ];
    let now = 45 * MINUTE_MS;
    let points = throughput(&samples, None, HistoryRange::Day, now);
    assert_eq!(points.len(), 96);
    let at = |minute: i64| {
        points
            .iter()
            .find(|p| p.start_ms == minute * MINUTE_MS)
            .unwrap()
    };
    // minute 3 → 40 lands in the bucket of minute 3 (between that sample and the next).
    assert_eq!(at(0).counts.unwrap().completed, 10);
    assert_eq!(at(15).counts, None);
    assert_eq!(at(30).counts, None);
    assert_eq!(at(45).counts, None);
    assert_eq!(throughput_sum(&points).completed, 10);
}

#[test]
fn a_smaller_later_sample_is_no_negative_throughput() {
    let samples = [sample(100, "a", 9, 0), sample(101, "a", 2, 0)];
    let points = throughput(&samples, None, HistoryRange::Hour, 101 * MINUTE_MS);
    assert_eq!(points[58].counts, Some(OutcomeTotals::default()));
}

#[test]
fn samples_before_the_view_are_left_out() {
    let samples = [sample(0, "a", 0, 0), sample(1, "a", 5, 0)];
    let points = throughput(&samples, None, HistoryRange::Hour, 500 * MINUTE_MS);
    assert!(points.iter().all(|p| p.counts.is_none()));
    assert_eq!(
        HistoryRange::Hour.read_from(500 * MINUTE_MS),
        440 * MINUTE_MS
    );
}

#[test]
fn week_points_are_hours_ending_at_now() {
    let now = 1_000 * 60 * MINUTE_MS + 17;
    let points = throughput(&[], None, HistoryRange::Week, now);
    assert_eq!(points.len(), 168);
    assert_eq!(points[167].start_ms, 1_000 * 60 * MINUTE_MS);
    assert_eq!(points[1].start_ms - points[0].start_ms, 60 * MINUTE_MS);
}

#[test]
fn ranges_parse_and_print() {
    for range in HistoryRange::ALL {
        assert_eq!(HistoryRange::parse(range.as_str()).unwrap(), range);
    }
    for bad in ["", "2h", "7", "week"] {
        let err = HistoryRange::parse(bad).unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::InvalidRange);
    }
}

#[test]
fn cutoff_is_seven_days_before_the_minute() {
    assert_eq!(history_minute(-1), -MINUTE_MS);
    assert_eq!(history_cutoff(HISTORY_RETENTION_MS + 61_000), MINUTE_MS);
}
