//! The workflow page in a real browser (headless Chromium through
//! `chromedriver`, see `support`): a workflow run part of the way shows its
//! graph, each step a box coloured by its status (computed style, not just a
//! class), with its edges; clicking a box opens that step's job, whose page
//! links back to the workflow; the overview counts it as active, and the
//! workflows list leads back to its graph. Screenshots: `workflow-graph`,
//! `workflow-list`.
//!
//! Run: `cargo test -p duraq-web --test browser_workflow`.

mod support;

use std::sync::Arc;

use duraq_core::driver::{ClaimRequest, Lease};
use duraq_core::prelude::*;
use duraq_core::{enqueue_workflow, EnqueueOptions, NewJob, Outcome, Workflow};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use duraq_web::{router, WebOptions};
use serde_json::json;

/// Claims the due job named `name` and reports `outcome` for it.
async fn finish(store: &Arc<dyn Store>, name: &str, outcome: Outcome) {
    let req = ClaimRequest {
        worker_id: "browser-test".into(),
        job_names: vec![name.into()],
        limit: 1,
        ..ClaimRequest::default()
    };
    let job = store.claim(&req).await.unwrap().remove(0);
    let lease = Lease {
        job_id: job.id,
        handoff_id: job.handoff_id.unwrap(),
    };
    assert_eq!(
        store.report_batch(vec![(lease, outcome)]).await.unwrap(),
        [true]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workflow_graph_shows_each_steps_status_and_leads_to_its_job() {
    support::run("browser_workflow", |page| async move {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = Arc::new(
            SqliteStore::open(dir.path().join("duraq.db"), SqliteOptions::default()).unwrap(),
        );
        let job = |name: &str| NewJob::new(name, json!([]), EnqueueOptions::new()).unwrap();
        let flow = Workflow::new("onboard")
            .step("signup", job("signup"))
            .step_after("welcome", job("welcome"), ["signup"])
            .step_after("storage", job("storage"), ["signup"])
            .step_after("risk", job("risk"), ["signup"])
            .step_after("summary", job("summary"), ["welcome", "storage"])
            .step_after("review", job("review"), ["risk"]);
        let outcome = enqueue_workflow(store.as_ref(), flow).await.unwrap();
        finish(&store, "signup", Outcome::CompletedWith { output: json!({"user": 7}) }).await;
        finish(&store, "welcome", Outcome::Completed).await;
        let discard = Outcome::Failed {
            error: "risk service down".into(),
            retry_in_ms: None,
            discard: true,
        };
        finish(&store, "risk", discard).await;

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = router(store.clone(), WebOptions::new());
        let server = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        page.goto(&format!("http://{addr}/workflows/{}", outcome.workflow_id)).await;
        page.wait_page("workflow").await;
        page.wait_present("svg[data-graph] g.node").await;
        assert_eq!(page.count("svg[data-graph] g.node").await, 6);
        assert_eq!(page.count("svg[data-graph] path.edge").await, 6);
        let fill = |step: &str| {
            let page = &page;
            let script = format!(
                "return getComputedStyle(document.querySelector('g.node[data-step=\"{step}\"] rect')).fill"
            );
            async move { page.js(&script, vec![]).await.as_str().unwrap_or_default().to_owned() }
        };
        let (done, failed, cancelled, queued) =
            (fill("signup").await, fill("risk").await, fill("review").await, fill("storage").await);
        assert_ne!(done, failed, "completed and failed differ in colour");
        assert_ne!(failed, cancelled, "failed and cancelled differ in colour");
        assert_ne!(done, queued, "completed and queued differ in colour");
        assert_eq!(
            page.attr("g.node[data-step=\"review\"]", "data-status").await.as_deref(),
            Some("cancelled"),
            "the failed risk check cancelled its review"
        );
        page.screenshot("workflow-graph").await;

        page.click("svg[data-graph] a:has(g.node[data-step=\"summary\"])").await;
        page.wait_page("job").await;
        assert_eq!(page.path().await, format!("/jobs/{}", outcome.jobs["summary"]));
        assert_eq!(
            page.text("[data-field=\"status\"]").await.as_deref(),
            Some("pending")
        );
        page.click("[data-field=\"workflowId\"] a").await;
        page.wait_page("workflow").await;

        page.click("a[data-nav=\"overview\"]").await;
        page.wait_page("overview").await;
        assert_eq!(
            page.text("[data-workflow-state=\"active\"] .number").await.as_deref(),
            Some("1"),
            "the overview counts the workflow as active"
        );
        page.click("a[data-nav=\"workflows\"]").await;
        page.wait_page("workflows").await;
        assert_eq!(page.count("tr[data-workflow]").await, 1);
        assert_eq!(
            page.attr("tr[data-workflow]", "data-state").await.as_deref(),
            Some("active")
        );
        page.screenshot("workflow-list").await;
        page.click("tr[data-workflow] a").await;
        page.wait_page("workflow").await;
        assert_eq!(page.path().await, format!("/workflows/{}", outcome.workflow_id));
        server.abort();
    })
    .await;
}
