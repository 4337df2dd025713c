//! The workflow page (`docs/workflows.md`) through the router, on a real
//! SQLite file: the graph as inline SVG with one box per step coloured by its
//! status and one edge per dependency, the steps table naming what each waits
//! for, step names escaped, the job page linking to its workflow, and an
//! unknown workflow answered 404.

mod common;

use std::sync::Arc;

use common::*;
use duraq_core::{enqueue_workflow, EnqueueOptions, NewJob, Outcome, Store, Workflow};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use duraq_web::{router, WebOptions};
use serde_json::json;

#[tokio::test]
async fn a_workflow_is_drawn_as_its_graph_and_linked_from_its_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("duraq.db"), SqliteOptions::default()).unwrap());
    let job = |name: &str| NewJob::new(name, json!([]), EnqueueOptions::new()).unwrap();
    let flow = Workflow::new("onboard")
        .step("signup", job("signup"))
        .step_after("welcome", job("welcome"), ["signup"])
        .step_after(format!("disk {SCRIPT}"), job("disk"), ["signup"])
        .step_after(
            "summary",
            job("summary"),
            vec!["welcome".to_owned(), format!("disk {SCRIPT}")],
        );
    let outcome = enqueue_workflow(store.as_ref(), flow).await.unwrap();
    let signup = claim(&store, 1).await.remove(0);
    assert_eq!(signup.id, outcome.jobs["signup"]);
    store
        .report_batch(vec![(
            lease_of(&signup),
            Outcome::CompletedWith {
                output: json!({"user": 7}),
            },
        )])
        .await
        .unwrap();
    let app = router(store.clone(), WebOptions::new());

    let (status, _, page) = get(&app, &format!("/workflows/{}", outcome.workflow_id)).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("<main data-page=\"workflow\">"), "{page}");
    assert!(!page.contains(SCRIPT), "a step name came out as markup");
    assert_eq!(page.matches("<g class=\"node ").count(), 4, "{page}");
    assert!(
        page.contains("data-step=\"signup\" data-status=\"completed\""),
        "{page}"
    );
    assert!(
        page.contains("data-step=\"welcome\" data-status=\"queued\""),
        "{page}"
    );
    assert!(
        page.contains("data-step=\"summary\" data-status=\"pending\""),
        "{page}"
    );
    assert_eq!(page.matches("<path class=\"edge\"").count(), 4, "{page}");
    assert!(page.contains("data-edge=\"welcome&gt;summary\""), "{page}");
    assert!(page.contains("<tr data-step=\"summary\">"), "{page}");
    assert!(page.contains("10 B"), "the output's size: {page}");

    let (_, _, job_page) = get(&app, &format!("/jobs/{}", outcome.jobs["summary"])).await;
    assert!(
        job_page.contains(&format!("href=\"/workflows/{}\"", outcome.workflow_id)),
        "{job_page}"
    );
    let (status, _, _) = get(&app, "/workflows/no-such-workflow").await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn workflows_are_listed_and_counted_on_the_overview() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("duraq.db"), SqliteOptions::default()).unwrap());
    let app = router(store.clone(), WebOptions::new());
    let (_, _, overview) = get(&app, "/").await;
    assert!(
        !overview.contains("data-workflow-tally"),
        "no workflow, no counts: {overview}"
    );
    let (status, _, empty) = get(&app, "/workflows").await;
    assert_eq!(status, 200);
    assert!(empty.contains("data-empty"), "{empty}");

    let job = |name: &str| NewJob::new(name, json!([]), EnqueueOptions::new()).unwrap();
    let mut ids = Vec::new();
    for n in 0..3 {
        let flow = Workflow::new("nightly")
            .step("export", job(&format!("export{n}")))
            .step_after("report", job("report"), ["export"]);
        ids.push(
            enqueue_workflow(store.as_ref(), flow)
                .await
                .unwrap()
                .workflow_id,
        );
    }
    let export = claim(&store, 1).await.remove(0);
    store
        .report_batch(vec![(
            lease_of(&export),
            Outcome::Failed {
                error: "boom".into(),
                retry_in_ms: None,
                discard: true,
            },
        )])
        .await
        .unwrap();

    let (_, _, overview) = get(&app, "/").await;
    assert!(overview.contains("data-workflow-tally"), "{overview}");
    let tile = |state: &str| {
        let at = overview
            .find(&format!("data-workflow-state=\"{state}\""))
            .unwrap_or_else(|| panic!("no {state} tile: {overview}"));
        let number = &overview[at..];
        let start = number.find("class=\"number\">").unwrap() + "class=\"number\">".len();
        number[start..start + number[start..].find('<').unwrap()].to_owned()
    };
    assert_eq!(
        (tile("active"), tile("failed"), tile("completed")),
        ("2".into(), "1".into(), "0".into())
    );

    let (status, _, list) = get(&app, "/workflows").await;
    assert_eq!(status, 200, "{list}");
    assert!(list.contains("<main data-page=\"workflows\">"), "{list}");
    assert_eq!(list.matches("<tr data-workflow=").count(), 3, "{list}");
    for id in &ids {
        assert!(
            list.contains(&format!("href=\"/workflows/{id}\"")),
            "{list}"
        );
    }
    assert_eq!(list.matches("data-state=\"failed\"").count(), 1, "{list}");
    assert!(!list.contains("data-next"), "one page holds three: {list}");
    assert_eq!(
        list.matches("<td data-name>nightly</td>").count(),
        3,
        "{list}"
    );

    let (status, _, named) = get(&app, "/workflows?name=nightly").await;
    assert_eq!(status, 200, "{named}");
    assert_eq!(named.matches("<tr data-workflow=").count(), 3, "{named}");
    assert!(
        named.contains("value=\"nightly\""),
        "the filter shows its name: {named}"
    );
    let (_, _, other) = get(&app, "/workflows?name=weekly").await;
    assert_eq!(other.matches("<tr data-workflow=").count(), 0, "{other}");
    assert!(other.contains("data-empty"), "{other}");
}
