//! The retries and scheduled views through a real server (`duraq_web::serve`
//! on a loopback port) on a real SQLite file: each view counts its jobs in
//! its heading, sorts every job it holds by due time (not just one page),
//! searches the last error, refuses a query key it does not know, and runs
//! or cancels every one of its jobs, and no other, behind a confirmation.

mod common;
mod jobs_support;

use std::sync::Arc;
use std::time::Duration;

use common::{csrf_of, http, spawn_server};
use duraq_core::driver::ClaimRequest;
use duraq_core::{EnqueueOptions, JobStatus, NewJob, Outcome, Store};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use duraq_web::{router, WebOptions};
use jobs_support::{error_code, number};

struct Server {
    addr: std::net::SocketAddr,
    store: Arc<dyn Store>,
    _dir: tempfile::TempDir,
}

async fn start(options: WebOptions) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("duraq.db"), SqliteOptions::default()).unwrap();
    let store: Arc<dyn Store> = Arc::new(store);
    let addr = spawn_server(router(store.clone(), options)).await;
    Server {
        addr,
        store,
        _dir: dir,
    }
}

impl Server {
    async fn get(&self, path: &str) -> (u16, String) {
        let (code, _, body) = http(self.addr, "GET", path, &[], "").await;
        (code, body)
    }

    async fn post(&self, path: &str, body: &str) -> (u16, String) {
        let form = [("Content-Type", "application/x-www-form-urlencoded")];
        let (code, _, body) = http(self.addr, "POST", path, &form, body).await;
        (code, body)
    }

    /// A job of `name` in `queue` whose first attempt failed with `error`; it
    /// waits for its retry (backoff, due later).
    async fn retrying(&self, name: &str, queue: &str, error: &str) -> String {
        let opts = EnqueueOptions::new().queue(queue).max_retries(3);
        let job = NewJob::new(name, serde_json::json!([]), opts).unwrap();
        let id = self.store.enqueue(job).await.unwrap().job_id().to_string();
        let claimed = self
            .store
            .claim(&ClaimRequest {
                worker_id: "worker-1".into(),
                job_names: vec![name.into()],
                limit: 1,
                ..ClaimRequest::default()
            })
            .await
            .unwrap();
        assert_eq!(claimed.len(), 1);
        let lease = claimed[0].lease().unwrap();
        let done = self
            .store
            .report_batch(vec![(lease, Outcome::failed(error))]);
        assert_eq!(done.await.unwrap(), [true]);
        id
    }

    /// A job in `queue` due in `secs` seconds.
    async fn later(&self, queue: &str, secs: u64) -> String {
        let opts = EnqueueOptions::new()
            .queue(queue)
            .run_in(Duration::from_secs(secs));
        let job = NewJob::new("send_digest", serde_json::json!([]), opts).unwrap();
        self.store.enqueue(job).await.unwrap().job_id().to_string()
    }

    async fn due_ms(&self, id: &str) -> i64 {
        self.store
            .get_job(id)
            .await
            .unwrap()
            .unwrap()
            .scheduled_at_ms
    }
}

fn now_ms() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    i64::try_from(since.unwrap().as_millis()).unwrap()
}

/// The `data-job-id`s of a page's view table, in order.
fn rows(page: &str) -> Vec<String> {
    page.split("data-job-id=\"")
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].to_string())
        .collect()
}

/// The `href` of the `a[data-next]` link, if any (`&amp;` undone).
fn next_link(page: &str) -> Option<String> {
    let at = page.find("data-next href=\"")? + 16;
    Some(page[at..at + page[at..].find('"')?].replace("&amp;", "&"))
}

#[tokio::test]
async fn each_view_counts_its_jobs_and_searches_the_last_error() {
    let s = start(WebOptions::new()).await;
    let timeout = s
        .retrying("sync_crm", "crm", "timeout talking to crm")
        .await;
    s.retrying("sync_erp", "erp", "erp answered 503").await;
    s.retrying("sync_ads", "crm", "TIMEOUT again").await;
    s.later("mail", 3600).await;
    s.later("mail", 7200).await;

    let (code, page) = s.get("/retries").await;
    assert_eq!(code, 200, "{page}");
    assert_eq!(number(&page, "view-count"), 3);
    assert!(page.contains("data-complete=\"true\""));
    let (_, page) = s.get("/scheduled").await;
    assert_eq!(number(&page, "view-count"), 2);

    // The last error's text, ignoring case, and the queue narrow the view.
    let (code, page) = s.get("/retries?error=timeout").await;
    assert_eq!(code, 200, "{page}");
    assert_eq!(number(&page, "view-count"), 2);
    let (_, page) = s
        .get("/retries?error=timeout&queue=crm&name=sync_crm")
        .await;
    assert_eq!(rows(&page), [timeout]);
    assert!(page.contains("data-view-filters"), "the search form");
}

#[tokio::test]
async fn a_view_sorts_every_job_by_due_time_across_pages() {
    let s = start(WebOptions::new()).await;
    // Created soonest-due first, so the newest rows are due last: a view
    // that sorted only the newest page would start at the 11th job.
    let mut ids = Vec::new();
    for i in 0..60u64 {
        ids.push(s.later("mail", 3600 + i * 60).await);
    }
    let (_, first) = s.get("/scheduled").await;
    let mut seen = rows(&first);
    assert_eq!(seen.len(), 50);
    let next = next_link(&first).expect("a next page");
    let (code, second) = s.get(&next).await;
    assert_eq!(code, 200, "{second}");
    seen.extend(rows(&second));
    assert_eq!(seen, ids, "soonest first over both pages");
    assert_eq!(number(&first, "view-count"), 60);
    assert!(next_link(&second).is_none());
}

#[tokio::test]
async fn a_key_the_view_does_not_know_is_refused() {
    let s = start(WebOptions::new()).await;
    for (path, code) in [
        ("/retries?erorr=timeout", "unknown-query-key"),
        ("/scheduled?error=timeout", "unknown-query-key"),
        ("/retries?queue=a&queue=b", "repeated-query-key"),
        ("/scheduled?after=soon", "invalid-cursor"),
        ("/retries/confirm?action=delete", "invalid-bulk-action"),
        (
            "/scheduled/confirm?action=run-now&status=queued",
            "unknown-query-key",
        ),
    ] {
        let (status, page) = s.get(path).await;
        assert_eq!((status, error_code(&page)), (400, code), "{path}");
    }
}

#[tokio::test]
async fn run_all_now_acts_on_the_view_and_no_other() {
    let s = start(WebOptions::new()).await;
    let retries = [
        s.retrying("sync_crm", "crm", "timeout").await,
        s.retrying("sync_erp", "erp", "503").await,
    ];
    let scheduled = [s.later("mail", 3600).await, s.later("sms", 3600).await];
    let scheduled_due = s.due_ms(&scheduled[0]).await;

    let (code, confirm) = s.get("/retries/confirm?action=run-now").await;
    assert_eq!(code, 200, "{confirm}");
    assert_eq!(number(&confirm, "matched"), 2);
    assert_eq!(number(&confirm, "would-skip"), 0);
    let csrf = csrf_of(&confirm);
    let body = format!("csrf={csrf}&action=run-now&expected=2");
    let (code, result) = s.post("/retries/all", &body).await;
    assert_eq!(code, 200, "{result}");
    assert_eq!(number(&result, "changed"), 2);
    assert!(result.contains("href=\"/retries\" data-back"), "{result}");
    for id in &retries {
        assert!(s.due_ms(id).await <= now_ms());
    }
    assert_eq!(s.due_ms(&scheduled[0]).await, scheduled_due, "not a retry");

    // Narrowed by queue: cancel every scheduled job of `sms`, and only it.
    let (_, confirm) = s.get("/scheduled/confirm?action=cancel&queue=sms").await;
    assert_eq!(number(&confirm, "matched"), 1);
    let body = format!("csrf={csrf}&action=cancel&queue=sms&expected=1");
    let (_, result) = s.post("/scheduled/all", &body).await;
    assert_eq!(number(&result, "changed"), 1);
    let status = |id: &str| {
        let id = id.to_owned();
        let store = s.store.clone();
        async move { store.get_job(&id).await.unwrap().unwrap().status }
    };
    assert_eq!(status(&scheduled[1]).await, JobStatus::Cancelled);
    assert_eq!(status(&scheduled[0]).await, JobStatus::Queued);

    // Without the form token nothing changes.
    let (code, _) = s.post("/scheduled/all", "action=run-now").await;
    assert_eq!(code, 403);
    assert_eq!(s.due_ms(&scheduled[0]).await, scheduled_due);
}

#[tokio::test]
async fn read_only_views_offer_no_action_on_all() {
    let s = start(WebOptions::new().read_only(true)).await;
    let id = s.later("mail", 3600).await;
    let (_, page) = s.get("/scheduled").await;
    assert_eq!(rows(&page), std::slice::from_ref(&id));
    assert!(!page.contains("data-apply-all"));
    let (_, confirm) = s.get("/scheduled/confirm?action=run-now").await;
    assert!(!confirm.contains("data-confirm-button"));
    let (code, _) = s.post("/scheduled/all", "action=run-now").await;
    assert_eq!(code, 403);
    let due = s.due_ms(&id).await;
    assert!(due > now_ms());
}
