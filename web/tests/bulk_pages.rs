//! The bulk actions, the search form and the error column, through the router
//! in process (`oneshot`) on a `MemoryStore`: each action's counts, CSRF and
//! read-only refusals (nothing changes), the "all matching" confirmation and a
//! stale one, and bad search input named by its error code with a 400.

mod common;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use common::*;
use duraq_core::{ClaimRequest, EnqueueOptions, JobStatus, MemoryStore, NewJob, Outcome, Store};
use duraq_web::{router, WebOptions};

/// A job in `queue` that ran once and failed for good with `error`.
async fn failed(store: &Arc<dyn Store>, queue: &str, error: &str) -> String {
    let opts = EnqueueOptions::new().queue(queue).max_retries(0);
    let job = NewJob::new("charge_card", serde_json::json!({"q": queue}), opts).unwrap();
    let id = store.enqueue(job).await.unwrap().job_id().to_string();
    // Only charge_card jobs: every other one of this name is finished.
    let claimed = store
        .claim(&ClaimRequest {
            worker_id: "worker-1".into(),
            job_names: vec!["charge_card".into()],
            limit: 1,
            ..ClaimRequest::default()
        })
        .await
        .unwrap();
    let job = claimed.iter().find(|j| j.id == id).expect("claimed");
    let done = store
        .report_batch(vec![(lease_of(job), Outcome::failed(error))])
        .await
        .unwrap();
    assert_eq!(done, [true]);
    id
}

async fn status(store: &Arc<dyn Store>, id: &str) -> Option<JobStatus> {
    store.get_job(id).await.unwrap().map(|j| j.status)
}

fn post(path: &str, body: String) -> Request<Body> {
    Request::post(path)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(body))
        .unwrap()
}

/// The number in `data-<name>="N"` of a result or confirmation page.
fn number(page: &str, name: &str) -> u64 {
    let key = format!("data-{name}=\"");
    let at = page
        .find(&key)
        .unwrap_or_else(|| panic!("no {key} in {page}"))
        + key.len();
    page[at..at + page[at..].find('"').unwrap()]
        .parse()
        .unwrap()
}

fn error_code(page: &str) -> &str {
    let at = page.find("data-error=\"").expect("an error notice") + 12;
    &page[at..at + page[at..].find('"').unwrap()]
}

fn store() -> Arc<dyn Store> {
    Arc::new(MemoryStore::new())
}

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

#[tokio::test]
async fn bad_search_input_is_a_typed_error_not_a_500() {
    let store = store();
    failed(&store, "billing", "declined").await;
    let app = router(store.clone(), WebOptions::new());
    for (query, code) in [
        ("status=bogus", "invalid-status"),
        ("args=%7Bnope", "invalid-args"),
        ("created_after=tomorrow", "invalid-scheduled-at"),
        ("finished_before=2026-02-30", "invalid-scheduled-at"),
        ("limit=many", "invalid-limit"),
    ] {
        let (status, _, page) = get(&app, &format!("/jobs?{query}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}");
        assert_eq!(error_code(&page), code, "{query}");
        assert!(page.contains("data-filters"), "the form stays: {query}");
        let (status, _, page) =
            get(&app, &format!("/jobs/bulk/confirm?action=retry&{query}")).await;
        if query.starts_with("limit") {
            continue;
        }
        assert_eq!(
            (status, error_code(&page)),
            (StatusCode::BAD_REQUEST, code),
            "{query}"
        );
    }
    let (status, _, page) = get(&app, "/jobs/bulk/confirm?action=retry").await;
    assert_eq!(
        (status, error_code(&page)),
        (StatusCode::BAD_REQUEST, "search-required")
    );
    let (status, _, page) = get(&app, "/jobs/bulk/confirm?action=nuke&status=failed").await;
    assert_eq!(
        (status, error_code(&page)),
        (StatusCode::BAD_REQUEST, "invalid-bulk-action")
    );
}

#[tokio::test]
async fn failed_lists_show_the_first_line_of_the_last_error() {
    let store = store();
    let long = format!("{} and more", "x".repeat(200));
    let id = failed(
        &store,
        "billing",
        &format!("card declined <b>\nat line 2\n{long}"),
    )
    .await;
    let app = router(store.clone(), WebOptions::new());
    let (_, _, page) = get(&app, "/jobs?status=failed&status=cancelled").await;
    assert!(page.contains(&format!("data-job-id=\"{id}\"")));
    assert!(
        page.contains("data-last-error=\"card declined &lt;b&gt;\""),
        "{page}"
    );
    assert!(page.contains("at line 2"), "the whole error in the title");
    assert!(
        page.contains("value=\"cancelled\" checked"),
        "the form keeps the statuses"
    );
    let (_, _, all) = get(&app, "/jobs").await;
    assert!(
        !all.contains("data-last-error"),
        "no error column without a status"
    );
}

/// The longest common prefix of two ids.
fn common_prefix(a: &str, b: &str) -> String {
    a.chars()
        .zip(b.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x)
        .collect()
}

#[tokio::test]
async fn the_id_box_opens_a_unique_prefix_and_lists_an_ambiguous_one() {
    let store = store();
    let a = enqueue_plain(&store, "default").await;
    let b = enqueue_plain(&store, "default").await;
    let app = router(store.clone(), WebOptions::new());
    let unique = &a[..a.len() - 1];
    assert!(!b.starts_with(unique));
    let (code, headers, _) = get(&app, &format!("/jobs/search?id={unique}")).await;
    assert_eq!(code, StatusCode::SEE_OTHER);
    assert_eq!(headers[header::LOCATION], format!("/jobs/{a}").as_str());

    let shared = common_prefix(&a, &b);
    assert!(
        !shared.is_empty(),
        "UUIDv7 ids made together share a prefix"
    );
    let (code, _, page) = get(&app, &format!("/jobs/search?id={shared}")).await;
    assert_eq!(
        (code, error_code(&page)),
        (StatusCode::BAD_REQUEST, "ambiguous-id")
    );
    assert!(page.contains(&format!("data-job-id=\"{a}\"")), "{page}");
    assert!(page.contains(&format!("data-job-id=\"{b}\"")));

    let (code, _, page) = get(&app, "/jobs/search?id=zzzz").await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    assert!(page.contains("data-not-found"));
    let (code, _, page) = get(&app, "/jobs/search?id=a%20b").await;
    assert_eq!(
        (code, error_code(&page)),
        (StatusCode::BAD_REQUEST, "invalid-id")
    );
}

#[tokio::test]
async fn a_search_that_stops_early_says_so_and_continues() {
    let store = store();
    for _ in 0..5 {
        failed(&store, "billing", "declined").await;
    }
    let app = router(store.clone(), WebOptions::new());
    let mut url = "/jobs?error=no+such+text&scan_limit=2".to_string();
    let mut stops = 0;
    loop {
        let (code, _, page) = get(&app, &url).await;
        assert_eq!(code, StatusCode::OK, "{page}");
        assert_eq!(page.matches("data-job-id=").count(), 0);
        let Some(rest) = page.split("data-continue href=\"").nth(1) else {
            assert!(page.contains("No jobs match."), "{page}");
            break;
        };
        stops += 1;
        assert!(stops <= 3, "5 rows at 2 a request stop at most 3 times");
        assert_eq!(number(&page, "scan-stopped"), 2);
        url = rest[..rest.find('"').unwrap()].replace("&amp;", "&");
        assert!(
            url.contains("error=no+such+text") && url.contains("after="),
            "{url}"
        );
    }
    assert!(
        stops >= 2,
        "the scan stopped early at least twice, saw {stops}"
    );

    // Matches are found, and the error search is case-blind.
    let (_, _, page) = get(&app, "/jobs?error=DECLINED").await;
    assert_eq!(page.matches("data-job-id=").count(), 5);
    let (_, _, page) = get(
        &app,
        "/jobs?args=%7B%22q%22%3A%22billing%22%7D&status=failed",
    )
    .await;
    assert_eq!(page.matches("data-job-id=").count(), 5, "args containment");
    let (_, _, page) = get(&app, "/jobs?created_before=2000-01-01").await;
    assert_eq!(page.matches("data-job-id=").count(), 0, "created bound");
}
