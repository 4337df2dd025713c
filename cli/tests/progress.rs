//! `duraq jobs show` with what a running job said: the progress
//! and the kept log lines in the table and in the JSON answer
//! (`schemas/jobs-show.json`), `null` for a job that said nothing, and text
//! that cannot steer the terminal.

mod common;

use common::{schema::assert_matches, Db};
use duraq_core::driver::{ClaimRequest, ProgressBatch};
use duraq_core::prelude::*;
use duraq_store_sqlite::{SqliteOptions, SqliteStore};

/// Claims the job named `name` on the database file and stores a batch.
fn say(db: &Db, name: &str, batch: impl FnOnce(ProgressBatch) -> ProgressBatch) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let store = SqliteStore::open_existing(&db.path, SqliteOptions::default()).unwrap();
        let claimed = store
            .claim(&ClaimRequest {
                worker_id: "w-test".into(),
                job_names: vec![name.into()],
                limit: 1,
                ..ClaimRequest::default()
            })
            .await
            .unwrap();
        let lease = claimed[0].lease().unwrap();
        assert!(store
            .record_progress(batch(ProgressBatch::new(lease, 1)))
            .await
            .unwrap());
        store.close().await.unwrap();
    });
}

#[test]
fn jobs_show_prints_progress_and_the_newest_lines() {
    let db = Db::new();
    let id = db.enqueue(&["import"]);
    let quiet = db.enqueue(&["quiet"]);
    say(&db, "import", |b| {
        b.with_progress(0.42, "copying rows")
            .unwrap()
            .with_line(1_000, "opened the file")
            .with_line(2_000, "copied \u{1b}[2J 420 rows")
    });

    let shown = db.json(&["jobs", "show", &id]);
    assert_matches("jobs-show.json", &shown);
    let p = &shown["progress"];
    assert_eq!(p["fraction"], 0.42);
    assert_eq!(p["message"], "copying rows");
    assert_eq!(p["linesTotal"], 2);
    let logs = p["logs"].as_array().unwrap();
    assert_eq!(logs.len(), 2);
    assert_eq!(
        (
            logs[0]["seq"].as_i64(),
            logs[0]["attempt"].as_i64(),
            logs[0]["atMs"].as_i64()
        ),
        (Some(1), Some(1), Some(1_000))
    );
    assert_eq!(logs[0]["line"], "opened the file");
    // Stored without the control character (it became a space).
    assert_eq!(logs[1]["line"], "copied  [2J 420 rows");

    let none = db.json(&["jobs", "show", &quiet]);
    assert_matches("jobs-show.json", &none);
    assert!(none["progress"].is_null());

    let out = db.run(&["jobs", "show", &id]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Progress: 42% copying rows"), "{text}");
    assert!(text.contains("Log (the newest 2 of 2 lines"), "{text}");
    assert!(text.contains("opened the file"), "{text}");
    assert!(!text.contains('\u{1b}'), "nothing steers the terminal");
    let quiet_text = String::from_utf8(db.run(&["jobs", "show", &quiet]).stdout).unwrap();
    assert!(!quiet_text.contains("Progress:"), "{quiet_text}");
}
