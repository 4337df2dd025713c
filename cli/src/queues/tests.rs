//! The queue table and its warnings, from hand-made snapshots.

use duraq_core::inspect::{QueueCounts, QueueSnapshot};

use super::*;

fn snap() -> QueueSnapshot {
    let queue = |name: &str, counts, oldest| {
        QueueCounts::new(name.into(), counts, oldest, 100_000).unwrap()
    };
    QueueSnapshot::new(
        [1_200, 3, 40_000, 0, 0, 0, 0],
        7,
        100_000,
        vec![
            queue("mail", [1_200, 3, 0, 0, 0, 0, 0], Some(97_000)),
            queue("video\u{1b}[2J", [0, 0, 40_000, 0, 0, 0, 0], None),
        ],
    )
    .with_paused(["mail".to_owned(), "quiet".to_owned()])
}

#[test]
fn table_has_a_row_per_queue_with_latency() {
    let out = render(&snap());
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("QUEUE"), "{out}");
    assert!(lines[0].ends_with("PAUSED"), "{out}");
    assert!(
        lines[1].starts_with("mail") && lines[1].contains(" 3 s ") && lines[1].ends_with("yes"),
        "{out}"
    );
    assert!(lines[1].contains("1,200"), "{out}");
    assert!(
        lines[2].starts_with("quiet") && lines[2].ends_with("yes"),
        "a paused queue without jobs is listed: {out}"
    );
    assert!(
        lines[3].ends_with("-") && lines[3].contains("40,000"),
        "{out}"
    );
    assert!(!out.contains('\u{1b}'), "queue names are escaped: {out:?}");
    assert_eq!(lines[4], "revision 7");
}

#[test]
fn json_is_camel_case_with_null_latency() {
    let v = snapshot_json(&snap(), &[]);
    assert_eq!(v["revision"], 7);
    assert_eq!(v["queues"][0]["counts"]["handedOff"], 3);
    assert_eq!(v["queues"][0]["total"], 1_203);
    assert_eq!(v["queues"][0]["latencyMs"], 3_000);
    assert!(v["queues"][2]["latencyMs"].is_null());
    assert_eq!(v["queues"][0]["paused"], true);
    assert_eq!(v["queues"][1]["counts"]["queued"], 0);
    assert_eq!(v["queues"][2]["paused"], false);
}

#[test]
fn unhandled_jobs_are_warned_about_escaped_and_listed_in_json() {
    let group = DueJobGroup {
        queue: "mail".into(),
        job_name: "snd\u{1b}[2J".into(),
        due: 1_200,
        oldest_scheduled_at_ms: 5,
    };
    let text = warnings(std::slice::from_ref(&group));
    assert!(text.starts_with("warning: 1,200 due jobs named"), "{text}");
    assert!(text.contains("\"mail\""), "{text}");
    assert!(!text.contains('\u{1b}'), "escaped: {text:?}");
    assert_eq!(warnings(&[]), "");
    let v = snapshot_json(&snap(), &[group]);
    assert_eq!(v["unhandled"][0]["jobName"], "snd\u{1b}[2J");
    assert_eq!(v["unhandled"][0]["due"], 1_200);
    assert_eq!(v["unhandled"][0]["oldestScheduledAtMs"], 5);
    assert_eq!(
        snapshot_json(&snap(), &[])["unhandled"],
        serde_json::json!([])
    );
}

#[test]
fn pause_answers_say_state_and_change() {
    assert_eq!(
        pause_json("mail", true, false, true),
        serde_json::json!({"queue": "mail", "paused": true, "changed": false, "known": true})
    );
}

#[test]
fn latencies_read_in_their_largest_unit() {
    assert_eq!(latency(0), "0 s");
    assert_eq!(latency(59_999), "59 s");
    assert_eq!(latency(180_000), "3 min");
    assert_eq!(latency(5 * 3_600_000), "5 h");
    assert_eq!(latency(3 * 86_400_000), "3 d");
}
