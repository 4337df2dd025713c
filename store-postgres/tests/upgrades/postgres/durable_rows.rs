//! Upgrading a schema to version 22: `duraq_jobs` gains `has_durable_rows`
//! in place (no table rewritten), and the upgrade marks the unfinished
//! ephemeral jobs that already have steps or signals, so that their
//! completion deletes those rows as it deletes the job. Without the mark the
//! completion would leave them behind: it looks only for marked jobs'.

use duraq_core::driver::StepWrite;
use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, Outcome};
use serde_json::json;

use crate::common::{claim_req, job, open, schema};
use crate::rewind::{undo, upgrade_in_place};

#[tokio::test]
async fn upgrade_to_v22_marks_ephemeral_jobs_with_steps_or_signals() {
    let s = schema();
    let store = open(&s).await.unwrap();
    let ephemeral = || job("j", EnqueueOptions::new().keep_completed(false));
    let stepped = store
        .enqueue(ephemeral())
        .await
        .unwrap()
        .job_id()
        .to_owned();
    let signalled = store
        .enqueue(ephemeral())
        .await
        .unwrap()
        .job_id()
        .to_owned();
    let running = store.claim(&claim_req(2)).await.unwrap();
    let lease = |id: &str| {
        let j = running.iter().find(|j| j.id == id).expect("claimed");
        j.lease().unwrap()
    };
    let write = StepWrite {
        lease: lease(&stepped),
        attempt: 1,
        name: "charge".into(),
        output: json!("ch_1"),
        keep_completed: false,
    };
    assert!(store.record_step(write).await.unwrap().is_some());
    store.signal(&signalled, "go", json!(1)).await.unwrap();
    let sql = format!("ALTER TABLE {s}.duraq_jobs DROP COLUMN has_durable_rows");
    let client = undo(store, &s, 22, &sql).await;

    let store = upgrade_in_place(&client, &s, 22, &["duraq_jobs_live"]).await;
    let marked: i64 = (client.query_one(
        &format!("SELECT count(*) FROM {s}.duraq_jobs WHERE has_durable_rows"),
        &[],
    ))
    .await
    .unwrap()
    .get(0);
    assert_eq!(marked, 2, "both ephemeral jobs marked by the upgrade");
    let reports = vec![
        (lease(&stepped), Outcome::Completed),
        (lease(&signalled), Outcome::Completed),
    ];
    assert_eq!(store.report_batch(reports).await.unwrap(), [true, true]);
    for (table, id) in [
        ("duraq_job_steps", &stepped),
        ("duraq_job_signals", &signalled),
    ] {
        let left: i64 = (client.query_one(
            &format!("SELECT count(*) FROM {s}.{table} WHERE job_id = $1"),
            &[id],
        ))
        .await
        .unwrap()
        .get(0);
        assert_eq!(left, 0, "{table} of the completed ephemeral job {id}");
    }
    assert!(store.get_job(&stepped).await.unwrap().is_none());
    store.close().await.unwrap();
}
