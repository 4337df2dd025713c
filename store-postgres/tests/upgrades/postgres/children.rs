//! Upgrading a schema to version 21 (spawned children, `docs/durable.md`):
//! `duraq_jobs` gains `parent_id` in place (no table rewritten); jobs from
//! before read no parent, and the steps and signals they already have go
//! with them when they complete as ephemeral jobs (marked by the upgrade to
//! version 22, `durable_rows.rs`).

use duraq_core::driver::StepWrite;
use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, Outcome};
use serde_json::json;

use crate::common::{claim_req, job, open, schema};
use crate::rewind::{undo, upgrade_in_place};

#[tokio::test]
async fn upgrade_to_v21_adds_parents_and_keeps_deleting_durable_rows() {
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
    let sql = format!("ALTER TABLE {s}.duraq_jobs DROP COLUMN parent_id");
    let client = undo(store, &s, 21, &sql).await;

    let store = upgrade_in_place(&client, &s, 21, &["duraq_jobs_live"]).await;
    assert_eq!(
        store.get_job(&stepped).await.unwrap().unwrap().parent_id,
        None
    );
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
