//! The jobs page's bulk actions and search in a real browser: headless
//! Chromium through `chromedriver` (see `support`), on a fresh SQLite store
//! served in-process, as in `browser/dash.rs`.
//!
//! Checking two rows and pressing Retry retries those two and no other; a
//! search typed into the form, then "Retry all matching", leads to a
//! confirmation naming N, and confirming changes exactly the N jobs. Waits poll
//! the DOM with a deadline; screenshots go to `<target>/web-screenshots/`.
//!
//! Run: `cargo test -p duraq-web --test browser_bulk`.

mod support;

use std::sync::Arc;

use duraq_core::driver::ClaimRequest;
use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, JobStatus, NewJob, Outcome};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use duraq_web::{router, WebOptions};
use serde_json::json;
use support::Page;

struct Dash {
    base: String,
    store: SqliteStore,
    _dir: tempfile::TempDir,
}

impl Dash {
    async fn start() -> Dash {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(dir.path().join("duraq.db"), SqliteOptions::default())
            .expect("open SQLite store");
        let app = router(Arc::new(store.clone()), WebOptions::new());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
        Dash {
            base: format!("http://{addr}"),
            store,
            _dir: dir,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A job of a name of its own in `queue` that ran once and failed for good.
    async fn failed(&self, queue: &str, n: usize) -> String {
        let name = format!("charge_{queue}_{n}");
        let opts = EnqueueOptions::new().queue(queue).max_retries(0);
        let job = NewJob::new(&name, json!({"n": n}), opts).unwrap();
        let id = self.store.enqueue(job).await.unwrap().job_id().to_string();
        let claimed = self
            .store
            .claim(&ClaimRequest {
                worker_id: "browser-test".into(),
                job_names: vec![name],
                queues: Some(vec![queue.to_string()]),
                limit: 1,
                ..ClaimRequest::default()
            })
            .await
            .unwrap();
        assert_eq!(claimed.len(), 1);
        let lease = claimed[0].lease().unwrap();
        let error = format!("card declined (order {n})\n  at charge()");
        let done = self
            .store
            .report_batch(vec![(lease, Outcome::failed(error))])
            .await
            .unwrap();
        assert_eq!(done, [true]);
        id
    }

    async fn status(&self, id: &str) -> JobStatus {
        self.store.get_job(id).await.unwrap().expect("job").status
    }
}

async fn open(page: &Page, url: &str, name: &str) {
    page.goto(url).await;
    page.wait_page(name).await;
}

/// Clicks `css` and waits for the next document to load.
async fn click_through(page: &Page, css: &str) {
    page.mark_document().await;
    page.click(css).await;
    page.wait_navigated().await;
}

/// Types `text` into the header's id box and submits it.
async fn find(page: &Page, text: &str) {
    page.type_into("form[data-search] input[name=\"id\"]", text)
        .await;
    click_through(page, "form[data-search] button").await;
}

async fn result_counts(page: &Page) -> (String, String, String) {
    page.wait_present("[data-bulk-result]").await;
    let get = |k: &'static str| async move {
        page.attr(&format!("[data-{k}]"), &format!("data-{k}"))
            .await
            .unwrap_or_default()
    };
    (
        get("matched").await,
        get("changed").await,
        get("skipped").await,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_checked_jobs_are_retried_and_no_other() {
    let dash = Dash::start().await;
    let mut ids = Vec::new();
    for n in 0..3 {
        ids.push(dash.failed("billing", n).await);
    }
    support::run("bulk_selected_retry", move |page| async move {
        open(&page, &dash.url("/jobs?status=failed"), "jobs").await;
        let boxes = "table[data-table=\"jobs\"] input[data-select]";
        assert_eq!(page.count(boxes).await, 3);
        assert_eq!(
            page.count("td[data-last-error]").await,
            3,
            "the error column"
        );
        assert_eq!(
            page.count("button[data-bulk-action]:disabled").await,
            3,
            "nothing checked, nothing to press"
        );
        // Select all, then none: the page's script checks every row's box.
        page.click("input[data-select-all]").await;
        assert_eq!(page.count(&format!("{boxes}:checked")).await, 3);
        page.click("input[data-select-all]").await;
        assert_eq!(page.count(&format!("{boxes}:checked")).await, 0);

        for id in &ids[..2] {
            page.click(&format!("tr[data-job-id=\"{id}\"] input[data-select]"))
                .await;
        }
        page.wait_text("[data-selected-count]", "to count 2", |t| t.ends_with('2'))
            .await;
        page.screenshot("bulk-two-selected").await;
        click_through(&page, "button[data-bulk-action=\"retry\"]").await;
        page.wait_page("bulk").await;
        let counts = result_counts(&page).await;
        assert_eq!(counts, ("2".into(), "2".into(), "0".into()));
        page.screenshot("bulk-selected-result").await;
        assert_eq!(dash.status(&ids[0]).await, JobStatus::Queued);
        assert_eq!(dash.status(&ids[1]).await, JobStatus::Queued);
        assert_eq!(dash.status(&ids[2]).await, JobStatus::Failed);

        // The id box: a unique prefix opens the job; a shared one lists both.
        let unique = &ids[2][..ids[2].len() - 2];
        assert!(ids[..2].iter().all(|id| !id.starts_with(unique)));
        find(&page, unique).await;
        page.wait_page("job").await;
        assert!(page.path().await.ends_with(&ids[2]));
        let shared: String = ids[0]
            .chars()
            .zip(ids[1].chars())
            .take_while(|(a, b)| a == b)
            .map(|(a, _)| a)
            .collect();
        find(&page, &shared).await;
        page.wait_present("[data-error=\"ambiguous-id\"]").await;
        let listed = page.attrs("tr[data-job-id]", "data-job-id").await;
        assert!(
            listed.contains(&ids[0]) && listed.contains(&ids[1]),
            "{listed:?}"
        );
        page.screenshot("id-box-ambiguous").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_then_retry_all_matching_is_confirmed_with_n() {
    let dash = Dash::start().await;
    let mut billing = Vec::new();
    for n in 0..4 {
        billing.push(dash.failed("billing", n).await);
    }
    let mut mail = Vec::new();
    for n in 0..2 {
        mail.push(dash.failed("mail", n).await);
    }
    support::run("bulk_all_matching", move |page| async move {
        open(&page, &dash.url("/jobs"), "jobs").await;
        assert_eq!(page.count("[data-apply-all]").await, 0, "no search yet");
        page.click("form[data-filters] input[name=\"status\"][value=\"failed\"]")
            .await;
        page.type_into("form[data-filters] input[name=\"queue\"]", "billing")
            .await;
        click_through(&page, "form[data-filters] button[type=\"submit\"]").await;
        page.wait_page("jobs").await;
        let url = page.url().await;
        assert!(
            url.contains("status=failed") && url.contains("queue=billing"),
            "{url}"
        );
        let rows = page
            .attrs("table[data-table=\"jobs\"] tr[data-job-id]", "data-job-id")
            .await;
        assert_eq!(rows.len(), 4, "the search narrows the table");
        page.screenshot("bulk-search").await;

        click_through(&page, "a[data-apply-all-action=\"retry\"]").await;
        page.wait_page("bulk").await;
        page.wait_present("[data-confirm]").await;
        assert_eq!(
            page.text("[data-confirm-count]").await.as_deref(),
            Some("4")
        );
        assert_eq!(page.count("[data-sample] li").await, 4);
        page.screenshot("bulk-confirm").await;
        // Confirming is the only way anything changes.
        assert_eq!(dash.status(&billing[0]).await, JobStatus::Failed);

        click_through(&page, "[data-confirm-button]").await;
        page.wait_page("bulk").await;
        let counts = result_counts(&page).await;
        assert_eq!(counts, ("4".into(), "4".into(), "0".into()));
        assert_eq!(page.count("[data-stale]").await, 0);
        page.screenshot("bulk-all-result").await;
        for id in &billing {
            assert_eq!(dash.status(id).await, JobStatus::Queued);
        }
        for id in &mail {
            assert_eq!(dash.status(id).await, JobStatus::Failed);
        }
        // Back to the search, which matches nothing now.
        click_through(&page, "a[data-back]").await;
        page.wait_page("jobs").await;
        assert_eq!(
            page.count("table[data-table=\"jobs\"] tr[data-job-id]")
                .await,
            0
        );
    })
    .await;
}
