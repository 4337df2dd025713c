//! The retries and scheduled views in a real browser: the retries view takes
//! in a new retry without a reload, keeping the box an operator checked; its
//! search form narrows by the last error; and "Run all now" on the scheduled
//! view leads through the confirmation to the report, making every scheduled
//! job due and leaving the retries alone.

use std::time::Duration;

use duraq_core::driver::ClaimRequest;
use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, NewJob, Outcome};
use duraq_web::WebOptions;
use serde_json::json;

use crate::dash::{open, press, Dash};
use crate::support::{self, Page};

/// A job of `name` whose first attempt failed with `error`, waiting for its
/// retry. `name` must be unique among queued jobs (the claim takes it by name).
pub(crate) async fn retrying(dash: &Dash, name: &str, error: &str) -> String {
    let opts = EnqueueOptions::new().max_retries(3);
    let id = dash.enqueue(name, json!({}), opts).await;
    let claimed = dash
        .store
        .claim(&ClaimRequest {
            worker_id: "browser-test".into(),
            job_names: vec![name.into()],
            limit: 1,
            ..ClaimRequest::default()
        })
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 1);
    let lease = claimed[0].lease().expect("a lease");
    let done = dash
        .store
        .report_batch(vec![(lease, Outcome::failed(error))]);
    assert_eq!(done.await.expect("report"), [true]);
    id
}

fn now_ms() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    i64::try_from(since.unwrap().as_millis()).unwrap()
}

async fn due_ms(dash: &Dash, id: &str) -> i64 {
    let job = dash.store.get_job(id).await.expect("get_job");
    job.expect("job").scheduled_at_ms
}

async fn rows(page: &Page, view: &str) -> Vec<String> {
    let css = format!("table[data-table=\"{view}\"] tr[data-job-id]");
    page.attrs(&css, "data-job-id").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_retries_view_takes_in_a_new_retry_without_a_reload() {
    let dash = Dash::start(WebOptions::new().poll_interval(Duration::from_millis(200))).await;
    let first = retrying(&dash, "sync_crm", "crm answered 503").await;

    support::run("retries_live", move |page| async move {
        open(&page, &dash.url("/retries"), "retries").await;
        assert_eq!(rows(&page, "retries").await, std::slice::from_ref(&first));
        page.click(&format!("input[data-select][value=\"{first}\"]"))
            .await;
        page.mark_document().await;

        let second = retrying(&dash, "sync_erp", "erp timed out").await;
        page.wait_for("the new retry's row", |p| async move {
            match rows(&p, "retries").await.len() {
                2 => Ok(()),
                n => Err(format!("{n} rows")),
            }
        })
        .await;
        assert!(page.still_marked().await, "no reload");
        assert!(rows(&page, "retries").await.contains(&second));
        assert_eq!(
            page.attr("[data-view-count]", "data-view-count")
                .await
                .as_deref(),
            Some("2")
        );
        let checked = page
            .js(
                "return Array.from(document.querySelectorAll('input[data-select]:checked'))\
                 .map(b => b.value);",
                vec![],
            )
            .await;
        assert_eq!(checked, json!([first]), "the checked box stays checked");
        let disabled = page
            .js(
                "return document.querySelector('button[data-bulk-action=\"run-now\"]').disabled;",
                vec![],
            )
            .await;
        assert_eq!(disabled, json!(false), "the bulk buttons still see it");
        page.screenshot("retries-live").await;

        // The search form narrows by the last error.
        page.type_into("form[data-view-filters] input[name=\"error\"]", "timed out")
            .await;
        page.mark_document().await;
        page.click("form[data-view-filters] button[type=\"submit\"]")
            .await;
        page.wait_navigated().await;
        assert_eq!(rows(&page, "retries").await, [second]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_all_now_makes_every_scheduled_job_due_and_no_retry() {
    let dash = Dash::start(WebOptions::new()).await;
    let later = EnqueueOptions::new().run_in(Duration::from_secs(3600));
    let mut scheduled = Vec::new();
    for i in 0..3 {
        let job = NewJob::new("send_digest", json!({ "user": i }), later.clone()).unwrap();
        scheduled.push(dash.store.enqueue(job).await.unwrap().job_id().to_string());
    }
    let retry = retrying(&dash, "sync_crm", "crm answered 503").await;
    let retry_due = due_ms(&dash, &retry).await;

    support::run("scheduled_run_all", move |page| async move {
        open(&page, &dash.url("/scheduled"), "scheduled").await;
        assert_eq!(rows(&page, "scheduled").await.len(), 3);
        page.mark_document().await;
        page.click("a[data-apply-all-action=\"run-now\"]").await;
        page.wait_navigated().await;
        page.wait_present("[data-confirm]").await;
        assert_eq!(
            page.attr("[data-confirm]", "data-matched").await.as_deref(),
            Some("3")
        );
        page.screenshot("scheduled-confirm").await;
        press(&page, "scheduled-all-run-now").await;
        page.wait_present("[data-bulk-result]").await;
        assert_eq!(
            page.attr("[data-changed]", "data-changed").await.as_deref(),
            Some("3")
        );
        for id in &scheduled {
            assert!(due_ms(&dash, id).await <= now_ms(), "{id} is due now");
        }
        assert_eq!(due_ms(&dash, &retry).await, retry_due, "the retry waits");

        page.mark_document().await;
        page.click("a[data-back]").await;
        page.wait_navigated().await;
        page.wait_page("scheduled").await;
        page.wait_present("[data-empty]").await;
    })
    .await;
}
