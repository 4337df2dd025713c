//! The throttle, the batch bounds and the store rule of `progress.rs`.

use super::*;

fn lease() -> Lease {
    Lease {
        job_id: "j1".into(),
        handoff_id: "h1".into(),
    }
}

#[test]
fn nothing_is_due_until_something_is_said() {
    let mut buf = ProgressBuffer::new(lease(), 1);
    assert_eq!(buf.due_at(), None);
    assert_eq!(buf.take_due(1_000_000), None);
    assert_eq!(
        buf.take(1_000_000),
        None,
        "the final write of a silent attempt"
    );
}

#[test]
fn the_first_write_waits_one_interval_and_later_ones_one_after_the_last() {
    let mut buf = ProgressBuffer::new(lease(), 1);
    buf.log("a".into(), 0, 100);
    assert_eq!(buf.due_at(), Some(100 + PROGRESS_FLUSH_INTERVAL_MS));
    assert_eq!(buf.take_due(100 + PROGRESS_FLUSH_INTERVAL_MS - 1), None);
    let first = buf.take_due(1_100).expect("due");
    assert_eq!(first.lines().len(), 1);
    buf.log("b".into(), 0, 1_150);
    assert_eq!(
        buf.due_at(),
        Some(2_100),
        "one interval after the last write"
    );
    assert_eq!(buf.take_due(2_099), None);
    assert!(buf.take_due(2_100).is_some());
    // After a silence longer than the interval, a new line is due at once.
    buf.log("c".into(), 0, 9_000);
    assert_eq!(buf.due_at(), Some(9_000));
}

#[test]
fn a_million_lines_in_a_tight_loop_keep_a_hundred_and_make_one_write() {
    let mut buf = ProgressBuffer::new(lease(), 1);
    let mut writes = 0;
    for i in 0..1_000_000i64 {
        // The loop spends no monotonic time: nothing comes due.
        buf.log(format!("line {i}"), i, 5);
        if buf.take_due(5).is_some() {
            writes += 1;
        }
        assert!(buf.waiting_lines() <= MAX_LOG_LINES);
    }
    assert_eq!(writes, 0);
    let last = buf.take(5).expect("the final write");
    assert_eq!(last.lines().len(), MAX_LOG_LINES);
    assert_eq!(last.skipped(), 1_000_000 - MAX_LOG_LINES as i64);
    assert_eq!(last.lines().back().unwrap().line, "line 999999");
    let write = progress_write(None, &last, 7);
    assert_eq!(write.row.lines_total, 1_000_000);
    assert_eq!(write.lines.first().unwrap().seq, 999_901);
    assert_eq!(write.keep_from_seq, 999_901);
}

#[test]
fn writes_over_time_are_bounded_by_the_interval() {
    let mut buf = ProgressBuffer::new(lease(), 1);
    let mut writes = 0;
    // Ten seconds of a line every millisecond.
    for ms in 0..10_000i64 {
        buf.log("x".into(), ms, ms);
        if buf.take_due(ms).is_some() {
            writes += 1;
        }
    }
    assert!(
        writes <= 10_000 / PROGRESS_FLUSH_INTERVAL_MS,
        "{writes} writes"
    );
    assert!(writes >= 9, "{writes} writes");
}

#[test]
fn a_bad_fraction_is_refused_and_changes_nothing() {
    let mut buf = ProgressBuffer::new(lease(), 1);
    for bad in [f64::NAN, -0.01, 1.01, f64::INFINITY] {
        let err = buf.progress(bad, "m".into(), 0).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidProgress);
    }
    assert_eq!(buf.due_at(), None);
    buf.progress(1.0, "done".into(), 0).unwrap();
    buf.progress(0.0, "again".into(), 0).unwrap();
    let batch = buf.take(0).unwrap();
    assert_eq!(batch.progress().unwrap().fraction, 0.0, "the newest wins");
}

#[test]
fn long_lines_are_cut_on_a_char_boundary_and_control_characters_removed() {
    let long = "é".repeat(MAX_LINE_BYTES); // two bytes each
    let cut = clean_line(long);
    assert!(cut.len() <= MAX_LINE_BYTES && cut.len() > MAX_LINE_BYTES - 2);
    assert!(cut.chars().all(|c| c == 'é'));
    assert_eq!(clean_line("a\nb\x1b[31m".into()), "a b [31m");
    let odd = format!("x{}", "€".repeat(MAX_LINE_BYTES)); // 1 + 3n bytes
    assert!(clean_line(odd).len() <= MAX_LINE_BYTES);
}

#[test]
fn a_batch_without_progress_keeps_the_stored_one_and_trims_to_the_newest() {
    let row = ProgressRow {
        fraction: Some(0.25),
        message: Some("quarter".into()),
        updated_at_ms: 1,
        lines_total: 150,
    };
    let batch = ProgressBatch::new(lease(), 2).with_line(9, "next");
    let write = progress_write(Some(&row), &batch, 20);
    assert_eq!(write.row.fraction, Some(0.25));
    assert_eq!(write.row.message.as_deref(), Some("quarter"));
    assert_eq!(write.row.updated_at_ms, 20);
    assert_eq!(write.lines[0].seq, 151);
    assert_eq!(write.lines[0].attempt, 2);
    assert_eq!(write.keep_from_seq, 52);
}
