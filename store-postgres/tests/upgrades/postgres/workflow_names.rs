//! Upgrading a schema to version 14 (workflow names, `docs/workflows.md`):
//! `duraq_jobs` gains `workflow_name` in place (no table rewritten), the
//! steps written before read no name, and a workflow enqueued after the
//! upgrade is listed with its own, which the steps appended to it carry too;
//! version 15 indexes the names, so a name lists only its workflows.

use duraq_core::inspect::WorkflowListRequest;
use duraq_core::prelude::*;
use duraq_core::{append_workflow, enqueue_workflow, EnqueueOptions, Workflow};

use crate::common::{job, open, schema};
use crate::rewind::{job_indexes, undo, upgrade_in_place};

#[tokio::test]
async fn upgrade_to_v14_adds_workflow_names_in_place() {
    let s = schema();
    let store = open(&s).await.unwrap();
    let step = |name: &str| job(name, EnqueueOptions::new());
    let old = enqueue_workflow(
        &store,
        Workflow::new("nightly").step("export", step("export")),
    )
    .await
    .unwrap();
    let sql = format!("ALTER TABLE {s}.duraq_jobs DROP COLUMN workflow_name");
    let client = undo(store, &s, 14, &sql).await;

    let store = upgrade_in_place(&client, &s, 14, &["duraq_jobs_live"]).await;
    let old_step = store.get_job(&old.jobs["export"]).await.unwrap().unwrap();
    assert_eq!(old_step.workflow_name, None);
    let new = enqueue_workflow(
        &store,
        Workflow::new("onboard").step("signup", step("signup")),
    )
    .await
    .unwrap();
    for (id, name) in [(&old.workflow_id, "report"), (&new.workflow_id, "welcome")] {
        let more = Workflow::append_to(id.as_str()).step(name, step(name));
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

    // Version 15 built the index of names (dropped with the column above)
    // on both partitions, and a name lists only its own workflows.
    for partition in ["duraq_jobs_live", "duraq_jobs_done"] {
        let indexes = job_indexes(&client, &s, partition).await;
        assert!(
            indexes
                .iter()
                .any(|(_, def)| def.contains("(workflow_name, workflow_id)")),
            "{partition}: {indexes:?}"
        );
    }
    let named = WorkflowListRequest {
        name: Some("onboard".into()),
        ..req
    };
    let listed: Vec<String> = (store.list_workflows(&named).await.unwrap())
        .into_iter()
        .map(|w| w.workflow_id)
        .collect();
    assert_eq!(listed, vec![new.workflow_id.clone()]);
}
