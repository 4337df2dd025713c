//! The fixture every browser test shares: [`Dash`], a fresh SQLite store with
//! helpers that seed jobs in each state through the library, served by
//! `duraq_web::router` on a loopback port; and the steps the tests take on a
//! page ([`open`], [`press`], [`post_without_csrf`]), so each test reads as
//! what it checks rather than how it drives the browser.

use std::path::PathBuf;
use std::sync::Arc;

use duraq_core::driver::{ClaimRequest, Lease};
use duraq_core::inspect::JobFilter;
use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, JobStatus, NewJob, Outcome, ScheduleKey};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use duraq_web::{router, WebOptions};
use serde_json::{json, Value};

use crate::support::Page;

/// A dashboard on a fresh SQLite file, served on a loopback port.
pub(crate) struct Dash {
    base: String,
    pub(crate) store: SqliteStore,
    pub(crate) db: PathBuf,
    _dir: tempfile::TempDir,
}

impl Dash {
    /// Whether the store says `queue` is paused.
    pub(crate) async fn paused(&self, queue: &str) -> bool {
        let snap = self.store.queue_snapshot().await.expect("queue snapshot");
        snap.queue(queue).is_some_and(|q| q.paused)
    }

    pub(crate) async fn start(options: WebOptions) -> Dash {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("duraq.db");
        let store = SqliteStore::open(&db, SqliteOptions::default()).expect("open SQLite store");
        let base = serve(store.clone(), options).await;
        Dash {
            base,
            store,
            db,
            _dir: dir,
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub(crate) async fn enqueue(&self, name: &str, args: Value, opts: EnqueueOptions) -> String {
        let job = NewJob::new(name, args, opts).expect("valid job");
        self.store
            .enqueue(job)
            .await
            .expect("enqueue")
            .job_id()
            .to_string()
    }

    /// A job that ran once and failed for good with `error`. `name` must be
    /// unique among queued jobs (the claim takes jobs by name).
    pub(crate) async fn failed(&self, name: &str, args: Value, queue: &str, error: &str) -> String {
        let id = self
            .enqueue(
                name,
                args,
                EnqueueOptions::new().queue(queue).max_retries(0),
            )
            .await;
        let lease = self.claim_just_enqueued(name, Some(queue), &id).await;
        let failed = Outcome::Failed {
            error: error.to_string(),
            retry_in_ms: None,
            discard: true,
        };
        let reported = self
            .store
            .report_batch(vec![(lease, failed)])
            .await
            .expect("report");
        assert_eq!(reported, [true], "the report was accepted");
        assert_eq!(self.status(&id).await, JobStatus::Failed);
        id
    }

    /// A job that ran once and completed.
    pub(crate) async fn completed(&self, name: &str) -> String {
        let id = self.enqueue(name, json!({}), EnqueueOptions::new()).await;
        let lease = self.claim_just_enqueued(name, None, &id).await;
        assert_eq!(
            self.store
                .report_batch(vec![(lease, Outcome::Completed)])
                .await
                .unwrap(),
            [true]
        );
        id
    }

    /// A job claimed by worker `browser-test` (registered, handling only
    /// `name`) and still running.
    pub(crate) async fn running(&self, name: &str) -> String {
        self.store
            .register_worker(&duraq_core::driver::WorkerInfo {
                worker_id: "browser-test".into(),
                host: "browser-host".into(),
                pid: 1,
                queues: None,
                job_names: vec![name.to_string()],
                slots: 1,
            })
            .await
            .expect("register_worker");
        let id = self.enqueue(name, json!({}), EnqueueOptions::new()).await;
        self.claim_just_enqueued(name, None, &id).await;
        id
    }

    /// Claims, as worker `browser-test`, the job `id` just enqueued under
    /// `name` (in `queue`, when given): it must be the only one claimed.
    async fn claim_just_enqueued(&self, name: &str, queue: Option<&str>, id: &str) -> Lease {
        let claimed = self
            .store
            .claim(&ClaimRequest {
                worker_id: "browser-test".into(),
                job_names: vec![name.to_string()],
                queues: queue.map(|q| vec![q.to_string()]),
                limit: 1,
                ..ClaimRequest::default()
            })
            .await
            .expect("claim");
        assert_eq!(claimed.len(), 1, "claimed the job just enqueued");
        assert_eq!(claimed[0].id, id);
        claimed[0].lease().expect("a lease")
    }

    pub(crate) async fn scheduled(&self, key: &str, name: &str, args: Value) -> String {
        let key = ScheduleKey::new(key).expect("valid schedule key");
        let job = NewJob::new(
            name,
            args,
            EnqueueOptions::new().run_in(std::time::Duration::from_secs(3600)),
        )
        .expect("valid job");
        self.store
            .replace_scheduled(&key, job, duraq_core::RunningOwner::KeepRunning)
            .await
            .expect("replace_scheduled");
        let jobs = self
            .store
            .search_jobs(&JobFilter {
                schedule_key: Some(key.as_str().to_string()),
                statuses: vec![JobStatus::Queued],
                ..JobFilter::default()
            })
            .await
            .expect("list by key")
            .jobs;
        jobs.first().expect("the keyed job").id.clone()
    }

    pub(crate) async fn status(&self, id: &str) -> JobStatus {
        self.store
            .get_job(id)
            .await
            .expect("get_job")
            .expect("job exists")
            .status
    }
}

/// Serves `router` on 127.0.0.1:0 for the rest of the test's runtime.
async fn serve(store: SqliteStore, options: WebOptions) -> String {
    let store: Arc<dyn Store> = Arc::new(store);
    let app = router(store, options);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local_addr");
    tokio::spawn(async move {
        axum::serve(listener, app).await.expect("serve dashboard");
    });
    format!("http://{addr}")
}

/// Loads `url` and waits for `<main data-page="name">`.
pub(crate) async fn open(page: &Page, url: &str, name: &str) {
    page.goto(url).await;
    page.wait_page(name).await;
}

/// Presses the submit button of `form[data-action="action"]` and waits for the
/// page the POST redirects to.
pub(crate) async fn press(page: &Page, action: &str) {
    let form = format!("form[data-action=\"{action}\"]");
    assert_eq!(
        page.count(&form).await,
        1,
        "one {form} on {}",
        page.url().await
    );
    page.mark_document().await;
    page.click(&format!("{form} button, {form} input[type=\"submit\"]"))
        .await;
    page.wait_navigated().await;
}

/// A same-origin POST from the page without the CSRF field; returns the status.
pub(crate) async fn post_without_csrf(page: &Page, action_path: &str) -> u64 {
    page.client
        .execute_async(
            "const done = arguments[arguments.length - 1]; \
             fetch(arguments[0], {method: 'POST', redirect: 'manual', \
                 headers: {'Content-Type': 'application/x-www-form-urlencoded'}, body: ''}) \
               .then(r => done(r.status), e => done(-1));",
            vec![json!(action_path)],
        )
        .await
        .expect("fetch POST")
        .as_u64()
        .unwrap_or(0)
}
