//! Every page rendered through the router in process (`oneshot`) from a store
//! holding hostile names, queues, args and `lastError`: the page contract the
//! browser tests rely on is there, and no stored value comes out as markup.

mod common;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use common::*;
use duraq_web::{router, WebOptions};

/// Nothing a job holds may come out unescaped.
fn assert_inert(page: &str) {
    assert!(!page.contains(SCRIPT), "raw <script> in:\n{page}");
    assert!(!page.contains("<script>alert"), "raw script tag");
    assert!(!page.contains("\"onmouseover"), "attribute breakout");
    assert!(!page.contains('\u{1b}'), "raw ESC");
    assert!(!page.contains("</pre></main>"), "closing tags from args");
    // The only script elements are the embedded assets.
    assert_eq!(
        page.matches("<script").count(),
        page.matches("<script src=\"/assets/").count(),
        "{page}"
    );
    assert!(page.matches("<script").count() <= 2, "{page}");
}

#[tokio::test]
async fn every_page_keeps_the_contract_and_escapes_everything() {
    let (store, hostile, plain) = hostile_store().await;
    let app = router(store.clone(), WebOptions::new());
    let pages = [
        ("/", "overview"),
        ("/queues", "queues"),
        ("/jobs", "jobs"),
        ("/jobs?status=failed", "jobs"),
        ("/jobs?status=failed&error=%3Cscript%3E&args=%7B%7D", "jobs"),
        ("/jobs/bulk/confirm?action=retry&status=failed", "bulk"),
        (
            "/jobs/bulk/confirm?action=delete&queue=%22onmouseover",
            "bulk",
        ),
        ("/workflows", "workflows"),
        ("/workflows?before=%3Cscript%3E", "workflows"),
        ("/workers", "workers"),
        ("/keys", "keys"),
        ("/keys?key=%3Cscript%3E", "keys"),
    ];
    for (uri, name) in pages {
        let (status, headers, body) = get(&app, uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {body}");
        assert!(headers[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap()
            .contains("script-src 'self'"));
        assert!(
            body.contains(&format!("<main data-page=\"{name}\">")),
            "{uri}"
        );
        for nav in ["overview", "queues", "jobs", "workflows", "workers", "keys"] {
            assert!(
                body.contains(&format!("data-nav=\"{nav}\"")),
                "{uri} lacks nav {nav}"
            );
        }
        assert!(body.contains("data-search"), "{uri}");
        assert_inert(&body);
    }
    let (_, _, failed) = get(&app, "/jobs?status=failed").await;
    assert!(
        failed.contains("data-last-error=\"&lt;script&gt;alert(1)&lt;/script&gt;"),
        "the hostile error, escaped, in the error column"
    );
    let (_, _, list) = get(&app, "/jobs").await;
    assert!(list.contains("data-table=\"jobs\""));
    assert!(list.contains(&format!("data-job-id=\"{hostile}\"")));
    assert!(list.contains(&format!("data-job-id=\"{plain}\"")));
    assert!(list.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));

    let (status, _, detail) = get(&app, &format!("/jobs/{hostile}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(detail.contains("<main data-page=\"job\">"));
    assert_inert(&detail);
    assert!(detail.contains("data-field=\"status\""));
    assert!(
        detail.contains("data-field=\"priority\">7<"),
        "priority shown"
    );
    let rate = detail
        .split("data-field=\"rateLimit\">")
        .nth(1)
        .expect("rate limit field");
    assert!(
        rate.starts_with("&lt;script&gt;") && rate.contains("at most 3 per 1 min"),
        "rate key escaped, limit shown: {rate}"
    );
    assert_eq!(
        detail.matches("<li data-attempt=\"1\">").count(),
        1,
        "error history"
    );
    assert!(detail.contains("\\u{1b}[2J"), "ESC shown as text");
    assert!(detail.contains("data-action=\"retry\""));
    assert!(!detail.contains("data-action=\"cancel\""));
    let (_, _, queued) = get(&app, &format!("/jobs/{plain}")).await;
    assert!(queued.contains("data-action=\"cancel\""));
    assert!(
        !queued.contains("data-field=\"expiresAt\""),
        "no expiry, no row"
    );

    let expiring = duraq_core::EnqueueOptions {
        expires_at_ms: Some(1_893_456_000_000),
        ..duraq_core::EnqueueOptions::new()
    };
    let job = duraq_core::NewJob::new("x", serde_json::json!([]), expiring).unwrap();
    let id = store.enqueue(job).await.unwrap().job_id().to_string();
    let (_, _, shown) = get(&app, &format!("/jobs/{id}")).await;
    let expires = shown
        .split("data-field=\"expiresAt\">")
        .nth(1)
        .expect("the expiry's row");
    assert!(
        expires.starts_with("<time data-ms=\"1893456000000\">2030-01-01 00:00:00 UTC"),
        "{expires}"
    );
}

#[tokio::test]
async fn overview_shows_plain_counts() {
    let (store, _, _) = hostile_store().await;
    let app = router(store, WebOptions::new());
    let (_, _, body) = get(&app, "/").await;
    assert!(body.contains("data-count=\"queued\">1<"), "{body}");
    assert!(body.contains("data-count=\"failed\">1<"));
    assert!(body.contains("data-count=\"total\">2<"));
    assert!(body.contains("id=\"throughput\""));
}

#[tokio::test]
async fn paging_and_search() {
    let (store, hostile, plain) = hostile_store().await;
    let app = router(store, WebOptions::new());
    let (_, _, first) = get(&app, "/jobs?limit=1").await;
    assert_eq!(first.matches("data-job-id=").count(), 1);
    let next = first
        .split("data-next href=\"")
        .nth(1)
        .expect("a next link");
    let next = next[..next.find('"').unwrap()].replace("&amp;", "&");
    assert!(next.contains(&format!("after={plain}")), "{next}");
    let (_, _, second) = get(&app, &next).await;
    assert!(second.contains(&format!("data-job-id=\"{hostile}\"")));

    let (status, headers, _) = get(&app, &format!("/jobs/search?id={hostile}")).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(
        headers[header::LOCATION],
        format!("/jobs/{hostile}").as_str()
    );
    let (status, _, missing) = get(&app, "/jobs/search?id=%3Cscript%3Ealert(1)%3C/script%3E").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(missing.contains("data-not-found"));
    assert_inert(&missing);
    let (status, _, bad) = get(&app, "/jobs?status=%3Cscript%3E").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_inert(&bad);
}

#[tokio::test]
async fn retry_and_cancel_post_with_csrf_and_redirect_back() {
    let (store, hostile, plain) = hostile_store().await;
    let app = router(store.clone(), WebOptions::new());
    let (_, _, page) = get(&app, &format!("/jobs/{hostile}")).await;
    let csrf = csrf_of(&page);
    let post = |path: String, body: String| {
        Request::post(path)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(body))
            .unwrap()
    };
    let (status, headers, _) = send(
        &app,
        post(format!("/jobs/{hostile}/retry"), format!("csrf={csrf}")),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let back = headers[header::LOCATION].to_str().unwrap().to_string();
    assert!(back.starts_with(&format!("/jobs/{hostile}")));
    let (_, _, after) = get(&app, &back).await;
    assert!(
        after.contains("data-field=\"status\" data-status=\"queued\""),
        "{after}"
    );

    // Without the token, or with a wrong one: refused, nothing changes.
    let (status, _, _) = send(
        &app,
        post(format!("/jobs/{plain}/cancel"), "csrf=nope".into()),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _, _) = send(&app, post(format!("/jobs/{plain}/cancel"), String::new())).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        store
            .get_job(&plain)
            .await
            .unwrap()
            .unwrap()
            .status
            .as_str(),
        "queued"
    );
    // From another origin: refused even with the token.
    let mut cross = post(format!("/jobs/{plain}/cancel"), format!("csrf={csrf}"));
    cross
        .headers_mut()
        .insert(header::HOST, "127.0.0.1:8080".parse().unwrap());
    cross
        .headers_mut()
        .insert(header::ORIGIN, "http://evil.example".parse().unwrap());
    assert_eq!(send(&app, cross).await.0, StatusCode::FORBIDDEN);

    let (status, headers, _) = send(
        &app,
        post(format!("/jobs/{plain}/cancel"), format!("csrf={csrf}")),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (_, _, after) = get(&app, headers[header::LOCATION].to_str().unwrap()).await;
    assert!(after.contains("data-status=\"cancelled\""));
    // Cancelling it again is refused and said so on the page.
    let (_, headers, _) = send(
        &app,
        post(format!("/jobs/{plain}/cancel"), format!("csrf={csrf}")),
    )
    .await;
    assert!(headers[header::LOCATION]
        .to_str()
        .unwrap()
        .ends_with("error=invalid-job-state"));
}

#[tokio::test]
async fn read_only_hides_actions_and_refuses_posts() {
    let (store, hostile, _) = hostile_store().await;
    let app = router(store, WebOptions::new().read_only(true));
    let (_, _, page) = get(&app, &format!("/jobs/{hostile}")).await;
    assert!(!page.contains("data-action="));
    assert!(!page.contains("name=\"csrf\""));
    let req = Request::post(format!("/jobs/{hostile}/retry"))
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from("csrf=x"))
        .unwrap();
    assert_eq!(send(&app, req).await.0, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn nested_under_a_mount_path_links_stay_inside() {
    let (store, hostile, _) = hostile_store().await;
    let app = axum::Router::new().nest(
        "/admin/jobs",
        router(store, WebOptions::new().mount_path("/admin/jobs")),
    );
    let (status, _, body) = get(&app, "/admin/jobs/jobs").await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains(&format!("href=\"/admin/jobs/jobs/{hostile}\"")));
    assert!(body.contains("href=\"/admin/jobs\""), "overview link");
    assert!(body.contains("src=\"/admin/jobs/assets/app.js\""));
    let (status, _, _) = get(&app, "/admin/jobs/assets/app.css").await;
    assert_eq!(status, StatusCode::OK);
}

/// `/workers` lists the registered workers (what each registered, alive or
/// stale, its running jobs) and names due jobs that no alive worker handles;
/// `/queues` shows those as a badge on their queue's row; hostile stored
/// text (worker id, host, names) comes out escaped.
#[tokio::test]
async fn workers_page_lists_registered_workers_and_jobs_nobody_handles() {
    use duraq_core::driver::{ClaimRequest, WorkerInfo};
    use duraq_core::{EnqueueOptions, ManualClock, MemoryStore, NewJob, Store};
    use std::sync::Arc;
    let clock = ManualClock::new(1_700_000_000_000);
    let store: Arc<dyn Store> = Arc::new(MemoryStore::with_clock(Arc::new(clock.clone())));
    let hostile_id = format!("w{ATTR}");
    store
        .register_worker(&WorkerInfo {
            worker_id: hostile_id.clone(),
            host: format!("{SCRIPT}{ESC}"),
            pid: 77,
            queues: Some(vec!["media".into()]),
            job_names: vec!["transcode".into(), SCRIPT.into()],
            slots: 4,
        })
        .await
        .unwrap();
    let media = EnqueueOptions::new().queue("media");
    let running = store
        .enqueue(NewJob::new("transcode", serde_json::json!([]), media).unwrap())
        .await
        .unwrap()
        .job_id()
        .to_string();
    let claimed = store
        .claim(&ClaimRequest {
            worker_id: hostile_id.clone(),
            job_names: vec!["transcode".into()],
            limit: 1,
            ..ClaimRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    let typo = enqueue_plain(&store, "media").await; // send_receipt: nobody handles it
    let app = router(store.clone(), WebOptions::new());

    let (status, _, body) = get(&app, "/workers").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_inert(&body);
    assert!(body.contains("data-state=\"alive\""), "{body}");
    assert!(
        !body.contains(&hostile_id),
        "the id is escaped in attributes"
    );
    assert!(
        body.contains(&format!("data-job-id=\"{running}\"")),
        "{body}"
    );
    assert!(
        body.contains("data-unhandled=\"send_receipt\" data-queue=\"media\""),
        "{body}"
    );
    assert!(!body.contains("data-unhandled=\"transcode\""), "{body}");
    let (_, _, queues) = get(&app, "/queues").await;
    assert!(
        queues.contains("data-unhandled=\"send_receipt\""),
        "{queues}"
    );

    // A minute past its last heartbeat the worker is stale and handles nothing.
    clock.advance(60_001);
    let (_, _, body) = get(&app, "/workers").await;
    assert!(body.contains("data-state=\"stale\""), "{body}");
    let (_, _, queues) = get(&app, "/queues").await;
    assert!(
        !queues.contains("data-unhandled=\"transcode\""),
        "running, not due"
    );
    assert!(store.remove_worker(&hostile_id).await.unwrap());
    let (_, _, body) = get(&app, "/workers").await;
    assert!(body.contains("data-empty"), "{body}");
    assert!(store.get_job(&typo).await.unwrap().is_some());
}

/// One vocabulary: the jobs page filters by `running` as by
/// `handed_off`, and a word that is no status is `invalid-status`, the code
/// `duraq jobs list --status` gives.
#[tokio::test]
async fn the_status_filter_speaks_running_and_says_invalid_status() {
    let store: std::sync::Arc<dyn duraq_core::Store> =
        std::sync::Arc::new(duraq_core::MemoryStore::new());
    let first = enqueue_plain(&store, "default").await;
    let running = claim(&store, 1).await;
    assert_eq!(running.len(), 1);
    assert_eq!(running[0].id, first);
    let queued = enqueue_plain(&store, "default").await;
    let app = router(store, WebOptions::new());
    for status in ["running", "handed_off"] {
        let (code, _, page) = get(&app, &format!("/jobs?status={status}")).await;
        assert_eq!(code, StatusCode::OK, "{status}: {page}");
        assert!(
            page.contains(&format!("data-job-id=\"{first}\"")),
            "{status}"
        );
        assert!(
            !page.contains(&format!("data-job-id=\"{queued}\"")),
            "{status}"
        );
        assert!(
            page.contains("value=\"handed_off\" checked"),
            "{status} checks the running box"
        );
    }
    for bogus in ["bogus", "Running", "handed-off"] {
        let (code, _, page) = get(&app, &format!("/jobs?status={bogus}")).await;
        assert_eq!(code, StatusCode::BAD_REQUEST, "{bogus}");
        assert!(page.contains("error[invalid-status]"), "{bogus}: {page}");
        assert!(!page.contains("invalid-job-state"), "{bogus}");
    }
}
