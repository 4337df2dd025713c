//! Version 13, workflow names (`docs/workflows.md`): `duraq_jobs` gains
//! `workflow_name` in place (same rowids), the steps written before read no
//! name, and a workflow enqueued after the upgrade is listed with its own,
//! which the steps appended to it carry too; version 14 indexes the names,
//! so a name lists only its workflows.

use duraq_core::inspect::WorkflowListRequest;
use duraq_core::prelude::*;
use duraq_core::{append_workflow, enqueue_workflow, EnqueueOptions, NewJob, Workflow};
use duraq_store_sqlite::SCHEMA_VERSION;
use rusqlite::Connection;

use crate::support::{execute, job_rowid, open, open_existing, temp_db};

fn job(name: &str) -> NewJob {
    NewJob::new(name, serde_json::json!([]), EnqueueOptions::new()).unwrap()
}

#[tokio::test]
async fn upgrade_to_v13_adds_workflow_names_in_place() {
    let (_dir, path) = temp_db("v12.db");
    let store = open(&path);
    let old = enqueue_workflow(
        &store,
        Workflow::new("nightly").step("export", job("export")),
    )
    .await
    .unwrap();
    store.close().await.unwrap();
    drop(store);
    execute(
        &path,
        "DROP INDEX duraq_jobs_workflow_name; \
         ALTER TABLE duraq_jobs DROP COLUMN workflow_name; \
         DELETE FROM duraq_migrations WHERE version >= 13",
    );
    let export = &old.jobs["export"];
    let before = job_rowid(&Connection::open(&path).unwrap(), export);

    let store = open_existing(&path);
    assert_eq!(
        store.migration().applied,
        (13..=SCHEMA_VERSION).collect::<Vec<_>>()
    );
    assert_eq!(
        job_rowid(&Connection::open(&path).unwrap(), export),
        before,
        "no rebuild"
    );
    let old_step = store.get_job(export).await.unwrap().unwrap();
    assert_eq!(old_step.workflow_name, None);

    let new = enqueue_workflow(
        &store,
        Workflow::new("onboard").step("signup", job("signup")),
    )
    .await
    .unwrap();
    for (id, step) in [(&old.workflow_id, "report"), (&new.workflow_id, "welcome")] {
        let more = Workflow::append_to(id.as_str()).step(step, job(step));
        append_workflow(&store, more).await.unwrap();
    }
    let req = WorkflowListRequest {
        before: None,
        limit: 10,
        name: None,
    };
    let names: Vec<(String, Option<String>, i64)> = (store.list_workflows(&req).await.unwrap())
        .into_iter()
        .map(|w| (w.workflow_id.clone(), w.name.clone(), w.steps()))
        .collect();
    assert!(
        names.contains(&(old.workflow_id.clone(), None, 2)),
        "{names:?}"
    );
    assert!(
        names.contains(&(new.workflow_id.clone(), Some("onboard".into()), 2)),
        "{names:?}"
    );
    let named = WorkflowListRequest {
        name: Some("onboard".into()),
        ..req
    };
    let listed: Vec<String> = (store.list_workflows(&named).await.unwrap())
        .into_iter()
        .map(|w| w.workflow_id)
        .collect();
    assert_eq!(
        listed,
        vec![new.workflow_id.clone()],
        "version 14 indexes the names"
    );
    store.close().await.unwrap();
}
