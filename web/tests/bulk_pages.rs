//! The bulk actions through the router in process (`oneshot`) on a
//! `MemoryStore`: each action's counts, CSRF and read-only refusals (nothing
//! changes), the "all matching" confirmation, a stale one, and its batches.

mod common;
mod jobs_support;

use axum::http::{header, StatusCode};
use common::*;
use duraq_core::{EnqueueOptions, JobStatus, NewJob};
use duraq_web::{router, WebOptions};
use jobs_support::*;

#[tokio::test]
async fn checked_jobs_are_retried_cancelled_and_deleted_with_counts() {
    let store = store();
    let a = failed(&store, "billing", "declined").await;
    let b = failed(&store, "billing", "declined").await;
    let queued = enqueue_plain(&store, "default").await;
    let app = router(store.clone(), WebOptions::new());
    let (_, _, list) = get(&app, "/jobs").await;
    assert!(list.contains("data-bulk"), "{list}");
    assert!(list.contains("data-select-all"));
    assert_eq!(list.matches("data-select ").count(), 3, "a box per row");
    let csrf = csrf_of(&list);

    // Retry two: the failed one changes, the queued one is skipped.
    let body = format!("csrf={csrf}&action=retry&id={a}&id={queued}");
    let (code, _, page) = send(&app, post("/jobs/bulk", body)).await;
    assert_eq!(code, StatusCode::OK, "{page}");
    assert!(page.contains("data-bulk-result"));
    let counts = |p: &str| {
        (
            number(p, "matched"),
            number(p, "changed"),
            number(p, "skipped"),
        )
    };
    assert_eq!(counts(&page), (2, 1, 1));
    assert_eq!(status(&store, &a).await, Some(JobStatus::Queued));

    // Cancel both queued ones.
    let body = format!("csrf={csrf}&action=cancel&id={a}&id={queued}");
    let (_, _, page) = send(&app, post("/jobs/bulk", body)).await;
    assert_eq!(counts(&page), (2, 2, 0));
    assert_eq!(status(&store, &queued).await, Some(JobStatus::Cancelled));

    // Delete: finished jobs only; all three are now finished.
    let body = format!("csrf={csrf}&action=delete&id={a}&id={b}");
    let (_, _, page) = send(&app, post("/jobs/bulk", body)).await;
    assert_eq!(counts(&page), (2, 2, 0));
    assert_eq!(status(&store, &a).await, None);
    assert_eq!(status(&store, &b).await, None);

    // An id with no job: job-not-found, nothing changes.
    let body = format!("csrf={csrf}&action=retry&id={queued}&id=no-such-job");
    let (code, _, page) = send(&app, post("/jobs/bulk", body)).await;
    assert_eq!(code, StatusCode::NOT_FOUND, "{page}");
    assert!(page.contains("error[job-not-found]"));
    assert_eq!(status(&store, &queued).await, Some(JobStatus::Cancelled));

    // Nothing checked, or no such action: typed refusals.
    let (code, _, page) = send(
        &app,
        post("/jobs/bulk", format!("csrf={csrf}&action=retry")),
    )
    .await;
    assert_eq!(
        (code, error_code(&page)),
        (StatusCode::BAD_REQUEST, "no-jobs-selected")
    );
    let body = format!("csrf={csrf}&action=explode&id={queued}");
    let (code, _, page) = send(&app, post("/jobs/bulk", body)).await;
    assert_eq!(
        (code, error_code(&page)),
        (StatusCode::BAD_REQUEST, "invalid-bulk-action")
    );
}

#[tokio::test]
async fn bulk_posts_without_the_token_or_read_only_change_nothing() {
    let store = store();
    let a = failed(&store, "billing", "declined").await;
    let app = router(store.clone(), WebOptions::new());
    let (_, _, list) = get(&app, "/jobs?status=failed").await;
    let csrf = csrf_of(&list);
    for body in [
        format!("action=retry&id={a}"),
        format!("csrf=nope&action=retry&id={a}"),
    ] {
        let (code, _, _) = send(&app, post("/jobs/bulk", body.clone())).await;
        assert_eq!(code, StatusCode::FORBIDDEN);
        let all = body.replace(&format!("id={a}"), "status=failed");
        let (code, _, _) = send(&app, post("/jobs/bulk/all", all)).await;
        assert_eq!(code, StatusCode::FORBIDDEN);
    }
    let mut cross = post("/jobs/bulk", format!("csrf={csrf}&action=retry&id={a}"));
    cross
        .headers_mut()
        .insert(header::HOST, "127.0.0.1:8080".parse().unwrap());
    cross
        .headers_mut()
        .insert(header::ORIGIN, "http://evil.example".parse().unwrap());
    assert_eq!(send(&app, cross).await.0, StatusCode::FORBIDDEN);
    assert_eq!(status(&store, &a).await, Some(JobStatus::Failed));

    let ro = router(store.clone(), WebOptions::new().read_only(true));
    let (_, _, list) = get(&ro, "/jobs?status=failed").await;
    assert!(
        !list.contains("data-bulk") && !list.contains("data-select"),
        "{list}"
    );
    assert!(!list.contains("data-apply-all"));
    let (code, _, confirm) = get(&ro, "/jobs/bulk/confirm?action=retry&status=failed").await;
    assert_eq!(code, StatusCode::OK);
    assert!(!confirm.contains("data-confirm-button"), "{confirm}");
    for path in ["/jobs/bulk", "/jobs/bulk/all"] {
        let body = format!("csrf={csrf}&action=retry&id={a}&status=failed");
        assert_eq!(send(&ro, post(path, body)).await.0, StatusCode::FORBIDDEN);
    }
    assert_eq!(status(&store, &a).await, Some(JobStatus::Failed));
}

#[tokio::test]
async fn all_matching_is_confirmed_with_n_and_a_stale_confirmation_says_so() {
    let store = store();
    let mut billing = Vec::new();
    for _ in 0..3 {
        billing.push(failed(&store, "billing", "declined").await);
    }
    let other = failed(&store, "mail", "bounced").await;
    let queued = enqueue_plain(&store, "billing").await;
    let app = router(store.clone(), WebOptions::new());
    let (_, _, list) = get(&app, "/jobs?status=failed&queue=billing").await;
    assert!(list.contains("data-apply-all-action=\"retry\""), "{list}");
    let (_, _, plain) = get(&app, "/jobs").await;
    assert!(
        !plain.contains("data-apply-all"),
        "no search, no apply-to-all"
    );

    let (code, _, confirm) = get(
        &app,
        "/jobs/bulk/confirm?action=retry&status=failed&queue=billing",
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{confirm}");
    assert_eq!(number(&confirm, "matched"), 3);
    assert!(confirm.contains("data-confirm-count>3<"), "{confirm}");
    assert!(confirm.contains("data-sample"));
    // Nothing changed yet.
    assert_eq!(status(&store, &billing[0]).await, Some(JobStatus::Failed));

    // One more matching job arrives before the operator confirms.
    billing.push(failed(&store, "billing", "declined").await);
    let csrf = csrf_of(&confirm);
    let body = format!("csrf={csrf}&action=retry&expected=3&status=failed&queue=billing");
    let (code, _, done) = send(&app, post("/jobs/bulk/all", body)).await;
    assert_eq!(code, StatusCode::OK, "{done}");
    assert_eq!((number(&done, "matched"), number(&done, "changed")), (4, 4));
    assert!(done.contains("data-stale"), "the stale count is named");
    for id in &billing {
        assert_eq!(status(&store, id).await, Some(JobStatus::Queued));
    }
    assert_eq!(status(&store, &other).await, Some(JobStatus::Failed));

    // Delete all matching with no status walks the finished jobs only.
    let (_, _, confirm) = get(&app, "/jobs/bulk/confirm?action=delete&queue=mail").await;
    assert_eq!(number(&confirm, "matched"), 1);
    let body = format!("csrf={csrf}&action=delete&expected=1&queue=mail");
    let (_, _, done) = send(&app, post("/jobs/bulk/all", body)).await;
    assert_eq!((number(&done, "matched"), number(&done, "changed")), (1, 1));
    assert!(!done.contains("data-stale"));
    assert_eq!(status(&store, &other).await, None);
    let body = format!("csrf={csrf}&action=delete&queue=billing");
    let (_, _, done) = send(&app, post("/jobs/bulk/all", body)).await;
    assert_eq!(
        number(&done, "matched"),
        0,
        "billing holds no finished job now"
    );
    assert_eq!(status(&store, &queued).await, Some(JobStatus::Queued));
}

/// "All matching" works in the default batches (500 jobs per transaction):
/// 501 matching jobs take two.

#[tokio::test]
async fn all_matching_runs_in_default_batches() {
    let store = store();
    let jobs = (0..501)
        .map(|i| {
            let opts = EnqueueOptions::new().queue("bulk");
            NewJob::new("send_receipt", serde_json::json!([i]), opts).unwrap()
        })
        .collect();
    store.enqueue_batch(jobs).await.unwrap();
    let keep = enqueue_plain(&store, "default").await;
    let app = router(store.clone(), WebOptions::new());
    let (_, _, confirm) = get(&app, "/jobs/bulk/confirm?action=cancel&queue=bulk").await;
    assert_eq!(number(&confirm, "matched"), 501);
    assert_eq!(number(&confirm, "would-skip"), 0);
    let csrf = csrf_of(&confirm);
    let body = format!("csrf={csrf}&action=cancel&expected=501&queue=bulk");
    let (_, _, done) = send(&app, post("/jobs/bulk/all", body)).await;
    assert_eq!(
        (number(&done, "changed"), number(&done, "batches")),
        (501, 2)
    );
    let counts = store.count_snapshot().await.unwrap().counts;
    assert_eq!(counts.get(JobStatus::Cancelled), 501);
    assert_eq!(status(&store, &keep).await, Some(JobStatus::Queued));
}
