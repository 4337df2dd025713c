//! Upgrading a schema to version 22: `duraq_jobs` gains `has_durable_rows`
//! in place (no table rewritten), and the upgrade marks the unfinished
//! ephemeral jobs that already have steps or signals, so that their
//! completion deletes those rows as it deletes the job. Without the mark the
//! completion would leave them behind: it looks only for marked jobs'.

use duraq_core::driver::{Lease, StepWrite};
use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, Outcome};
use duraq_store_postgres::PostgresStore;
use serde_json::json;
use tokio_postgres::Client;

use crate::common::{claim_req, job, open, schema};
use crate::rewind::{undo, upgrade_in_place};

/// Two running ephemeral jobs, one with a step and one with a signal:
/// (id, lease) of each.
pub(super) async fn stepped_and_signalled(store: &PostgresStore) -> [(String, Lease); 2] {
    let ephemeral = || job("j", EnqueueOptions::new().keep_completed(false));
    for _ in 0..2 {
        store.enqueue(ephemeral()).await.unwrap();
    }
    let running = store.claim(&claim_req(2)).await.unwrap();
    let [stepped, signalled] =
        [&running[0], &running[1]].map(|j| (j.id.clone(), j.lease().unwrap()));
    let write = StepWrite {
        lease: stepped.1.clone(),
        attempt: 1,
        name: "charge".into(),
        output: json!("ch_1"),
        keep_completed: false,
    };
    assert!(store.record_step(write).await.unwrap().is_some());
    store.signal(&signalled.0, "go", json!(1)).await.unwrap();
    [stepped, signalled]
}

/// Completes both jobs in one batch and checks that their step and signal
/// went with them.
pub(super) async fn complete_and_check_gone(
    store: &PostgresStore,
    client: &Client,
    s: &str,
    [stepped, signalled]: [(String, Lease); 2],
) {
    let reports = vec![
        (stepped.1, Outcome::Completed),
        (signalled.1, Outcome::Completed),
    ];
    assert_eq!(store.report_batch(reports).await.unwrap(), [true, true]);
    for (table, id) in [
        ("duraq_job_steps", &stepped.0),
        ("duraq_job_signals", &signalled.0),
    ] {
        let sql = format!("SELECT count(*) FROM {s}.{table} WHERE job_id = $1");
        let left: i64 = client.query_one(&sql, &[id]).await.unwrap().get(0);
        assert_eq!(left, 0, "{table} of the completed ephemeral job {id}");
    }
    assert!(store.get_job(&stepped.0).await.unwrap().is_none());
}

#[tokio::test]
async fn upgrade_to_v22_marks_ephemeral_jobs_with_steps_or_signals() {
    let s = schema();
    let store = open(&s).await.unwrap();
    let jobs = stepped_and_signalled(&store).await;
    let sql = format!("ALTER TABLE {s}.duraq_jobs DROP COLUMN has_durable_rows");
    let client = undo(store, &s, 22, &sql).await;

    let store = upgrade_in_place(&client, &s, 22, &["duraq_jobs_live"]).await;
    let marked = format!("SELECT count(*) FROM {s}.duraq_jobs WHERE has_durable_rows");
    let marked: i64 = client.query_one(&marked, &[]).await.unwrap().get(0);
    assert_eq!(marked, 2, "both ephemeral jobs marked by the upgrade");
    complete_and_check_gone(&store, &client, &s, jobs).await;
    store.close().await.unwrap();
}
