//! The jobs page's search through the router in process (`oneshot`) on a
//! `MemoryStore`: bad input named by its error code with a 400 (never a 500),
//! the error column, the id box's prefixes, a scan that stops early, and
//! paging that keeps the search.

mod common;
mod jobs_support;

use axum::http::{header, StatusCode};
use common::*;
use duraq_web::{router, WebOptions};
use jobs_support::*;

#[tokio::test]
async fn bad_search_input_is_a_typed_error_not_a_500() {
    let store = store();
    failed(&store, "billing", "declined").await;
    let app = router(store.clone(), WebOptions::new());
    for (query, code) in [
        ("status=bogus", "invalid-status"),
        ("args=%7Bnope", "invalid-args"),
        ("created_after=tomorrow", "invalid-time"),
        ("finished_before=2026-02-30", "invalid-time"),
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

/// The next page keeps the search, and shows what the search matches only.
#[tokio::test]
async fn paging_keeps_the_search() {
    let store = store();
    let older = failed(&store, "billing", "declined").await;
    enqueue_plain(&store, "billing").await;
    let newer = failed(&store, "billing", "declined").await;
    let app = router(store.clone(), WebOptions::new());
    let (_, _, first) = get(&app, "/jobs?status=failed&queue=billing&limit=1").await;
    assert!(first.contains(&format!("data-job-id=\"{newer}\"")));
    let next = first
        .split("data-next href=\"")
        .nth(1)
        .expect("a next link");
    let next = next[..next.find('"').unwrap()].replace("&amp;", "&");
    assert!(
        next.contains("status=failed") && next.contains("queue=billing"),
        "{next}"
    );
    let (_, _, second) = get(&app, &next).await;
    assert_eq!(second.matches("data-job-id=").count(), 1, "{second}");
    assert!(second.contains(&format!("data-job-id=\"{older}\"")));
}
