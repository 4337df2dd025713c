//! Upgrading a schema to version 8 (progress and log lines of running jobs,
//! `docs/jobs.md`): the two tables of their own are created, the jobs table
//! is not rewritten, old jobs are kept and say nothing, and a running job's
//! progress is stored at once.

use duraq_core::driver::ProgressBatch;
use duraq_core::prelude::*;
use duraq_core::EnqueueOptions;

use crate::common::{claim_req, job, open, schema};
use crate::rewind::{enqueued, undo, upgrade_in_place};

#[tokio::test]
async fn upgrade_to_v8_adds_the_progress_tables_and_keeps_the_jobs() {
    let s = schema();
    let store = open(&s).await.unwrap();
    let id = enqueued(&store, job("j", EnqueueOptions::new())).await;
    let sql = format!("DROP TABLE {s}.duraq_job_progress; DROP TABLE {s}.duraq_job_logs");
    let client = undo(store, &s, 8, &sql).await;

    let store = upgrade_in_place(&client, &s, 8, &["duraq_jobs_live"]).await;
    assert_eq!(store.job_progress(&id).await.unwrap(), None);
    let claimed = store.claim(&claim_req(1)).await.unwrap();
    let batch = ProgressBatch::new(claimed[0].lease().unwrap(), 1).with_line(0, "after");
    assert!(store.record_progress(batch).await.unwrap());
    let p = store.job_progress(&id).await.unwrap().unwrap();
    assert_eq!(p.logs[0].line, "after");
    store.close().await.unwrap();
}
