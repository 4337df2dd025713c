//! Upgrading a schema to version 21 (spawned children, `docs/durable.md`):
//! `duraq_jobs` gains `parent_id` in place (no table rewritten); jobs from
//! before read no parent, and the steps and signals they already have go
//! with them when they complete as ephemeral jobs.

use duraq_core::prelude::*;

use super::durable_rows::{complete_and_check_gone, stepped_and_signalled};
use crate::common::{open, schema};
use crate::rewind::{undo, upgrade_in_place};

#[tokio::test]
async fn upgrade_to_v21_adds_parents_and_keeps_deleting_durable_rows() {
    let s = schema();
    let store = open(&s).await.unwrap();
    let jobs = stepped_and_signalled(&store).await;
    let sql = format!("ALTER TABLE {s}.duraq_jobs DROP COLUMN parent_id");
    let client = undo(store, &s, 21, &sql).await;

    let store = upgrade_in_place(&client, &s, 21, &["duraq_jobs_live"]).await;
    let stepped = store.get_job(&jobs[0].0).await.unwrap().unwrap();
    assert_eq!(stepped.parent_id, None);
    complete_and_check_gone(&store, &client, &s, jobs).await;
    store.close().await.unwrap();
}
