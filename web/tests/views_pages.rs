//! The retries and scheduled views and "run now" through the router in
//! process (`oneshot`) on a `MemoryStore`: which queued jobs each view lists,
//! a row's and the checked jobs' run-now with exact counts, the job page's
//! button, read-only mode, and ids shown short with the whole id in `title`.

mod common;
mod jobs_support;

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use common::*;
use duraq_core::driver::ClaimRequest;
use duraq_core::{EnqueueOptions, NewJob, Outcome, Store};
use duraq_web::{router, WebOptions};
use jobs_support::*;

/// A job whose first attempt failed and that waits for its retry (backoff).
async fn retrying(store: &Arc<dyn Store>, error: &str) -> String {
    let opts = EnqueueOptions::new().max_retries(3);
    let job = NewJob::new("sync_crm", serde_json::json!([]), opts).unwrap();
    let id = store.enqueue(job).await.unwrap().job_id().to_string();
    let claimed = store
        .claim(&ClaimRequest {
            worker_id: "worker-1".into(),
            job_names: vec!["sync_crm".into()],
            limit: 10,
            ..ClaimRequest::default()
        })
        .await
        .unwrap();
    let job = claimed.iter().find(|j| j.id == id).expect("claimed");
    let done = store
        .report_batch(vec![(job.lease().unwrap(), Outcome::failed(error))])
        .await
        .unwrap();
    assert_eq!(done, [true]);
    id
}

/// A job due in an hour.
async fn later(store: &Arc<dyn Store>) -> String {
    let opts = EnqueueOptions::new().run_in(Duration::from_secs(3600));
    let job = NewJob::new("send_digest", serde_json::json!([]), opts).unwrap();
    store.enqueue(job).await.unwrap().job_id().to_string()
}

async fn scheduled_at(store: &Arc<dyn Store>, id: &str) -> i64 {
    store.get_job(id).await.unwrap().unwrap().scheduled_at_ms
}

fn row(page: &str, id: &str) -> bool {
    page.contains(&format!("data-job-id=\"{id}\""))
}

#[tokio::test]
async fn each_view_lists_its_queued_jobs() {
    let store = store();
    let retry = retrying(&store, "crm answered 503").await;
    let due_later = later(&store).await;
    let due_now = enqueue_plain(&store, "default").await;
    let dead = failed(&store, "billing", "declined").await;
    let app = router(store.clone(), WebOptions::new());

    let (code, _, retries) = get(&app, "/retries").await;
    assert_eq!(code, StatusCode::OK, "{retries}");
    assert!(retries.contains("data-page=\"retries\""));
    assert!(row(&retries, &retry), "{retries}");
    assert!(!row(&retries, &due_later) && !row(&retries, &due_now) && !row(&retries, &dead));
    assert!(retries.contains("data-attempts=\"1\""), "attempts shown");
    assert!(retries.contains("crm answered 503"), "the last error shown");
    assert!(
        retries.contains("data-next-attempt"),
        "the next attempt time"
    );

    let (code, _, scheduled) = get(&app, "/scheduled").await;
    assert_eq!(code, StatusCode::OK, "{scheduled}");
    assert!(row(&scheduled, &due_later), "{scheduled}");
    assert!(!row(&scheduled, &retry) && !row(&scheduled, &due_now) && !row(&scheduled, &dead));
    assert!(scheduled.contains("data-due"));
    assert!(scheduled.contains(&format!("name=\"run\" value=\"{due_later}\"")));

    // Both are in the nav of every page.
    let (_, _, overview) = get(&app, "/").await;
    assert!(
        overview.contains("data-nav=\"retries\"") && overview.contains("data-nav=\"scheduled\"")
    );
}

#[tokio::test]
async fn run_now_per_job_and_in_bulk_with_exact_counts() {
    let store = store();
    let a = later(&store).await;
    let b = later(&store).await;
    let due = enqueue_plain(&store, "default").await;
    let app = router(store.clone(), WebOptions::new());
    let (_, _, page) = get(&app, "/scheduled").await;
    let csrf = csrf_of(&page);
    let before = scheduled_at(&store, &a).await;

    // A row's own button: that job alone, back to the view.
    let body = format!("csrf={csrf}&view=scheduled&run={a}&id={b}");
    let (code, _, result) = send(&app, post("/jobs/bulk", body)).await;
    assert_eq!(code, StatusCode::OK, "{result}");
    assert_eq!(number(&result, "changed"), 1);
    assert!(result.contains("data-action=\"run-now\""));
    assert!(result.contains("href=\"/scheduled\" data-back"), "{result}");
    assert!(scheduled_at(&store, &a).await < before);
    assert!(
        scheduled_at(&store, &b).await > scheduled_at(&store, &a).await,
        "the checked box of another row is not part of a row's run-now"
    );

    // The checked ones: the job already due is skipped and counted.
    let body = format!("csrf={csrf}&view=scheduled&action=run-now&id={a}&id={b}&id={due}");
    let (_, _, result) = send(&app, post("/jobs/bulk", body)).await;
    let counts = (
        number(&result, "matched"),
        number(&result, "changed"),
        number(&result, "skipped"),
    );
    assert_eq!(counts, (3, 1, 2));
    let (_, _, after) = get(&app, "/scheduled").await;
    assert!(
        !row(&after, &a) && !row(&after, &b),
        "both due now: {after}"
    );

    // No CSRF token: refused, nothing changes.
    let c = later(&store).await;
    let at = scheduled_at(&store, &c).await;
    let (code, _, _) = send(&app, post("/jobs/bulk", format!("run={c}"))).await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    assert_eq!(scheduled_at(&store, &c).await, at);

    // The job page has the button while the job is due later.
    let (_, _, job) = get(&app, &format!("/jobs/{c}")).await;
    assert!(job.contains("data-action=\"run-now\""), "{job}");
    let (_, _, job) = get(&app, &format!("/jobs/{due}")).await;
    assert!(!job.contains("data-action=\"run-now\""), "already due");
}

#[tokio::test]
async fn read_only_views_have_no_buttons() {
    let store = store();
    let id = later(&store).await;
    let app = router(store.clone(), WebOptions::new().read_only(true));
    let (_, _, page) = get(&app, "/scheduled").await;
    assert!(row(&page, &id));
    assert!(!page.contains("data-run-now") && !page.contains("data-bulk"));
}

#[tokio::test]
async fn tables_show_short_ids_with_the_whole_id_a_hover_away() {
    let store = store();
    let id = later(&store).await;
    let app = router(store.clone(), WebOptions::new());
    for path in ["/jobs", "/scheduled"] {
        let (_, _, page) = get(&app, path).await;
        let tail = &id[id.len() - 8..];
        assert!(
            page.contains(&format!("title=\"{id}\">…{tail}</a>")),
            "{path}: {page}"
        );
        assert!(
            !page.contains(&format!(">{id}<")),
            "{path}: the whole id is not the text"
        );
    }
}
