//! The dashboard's write actions, pressed as an operator would: retry and
//! cancel on a job's page, pause and resume on the queues page. Each checks
//! the page it lands on and the store, since a page that only looks changed
//! would be worse than no button at all.

use duraq_core::{EnqueueOptions, JobStatus};
use duraq_web::WebOptions;
use serde_json::json;

use crate::dash::{open, post_without_csrf, press, Dash};
use crate::support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_and_cancel_change_the_job_in_the_page_and_the_store() {
    let dash = Dash::start(WebOptions::new()).await;
    let failed = dash
        .failed(
            "charge_card",
            json!({"order": 7}),
            "billing",
            "card declined",
        )
        .await;
    let queued = dash
        .enqueue(
            "send_welcome",
            json!({"user": 1}),
            EnqueueOptions::new().run_in(std::time::Duration::from_secs(600)),
        )
        .await;

    support::run("retry_and_cancel", move |page| async move {
        let status = "[data-field=\"status\"]";

        // A POST without the page's CSRF token changes nothing.
        open(&page, &dash.url(&format!("/jobs/{failed}")), "job").await;
        let action = page
            .attr("form[data-action=\"retry\"]", "action")
            .await
            .expect("the retry form has an action");
        let refused = post_without_csrf(&page, &action).await;
        assert!(
            (400..500).contains(&refused),
            "POST without CSRF answered {refused}"
        );
        assert_eq!(dash.status(&failed).await, JobStatus::Failed);

        // Retry the failed job.
        open(&page, &dash.url(&format!("/jobs/{failed}")), "job").await;
        assert_eq!(page.text(status).await.as_deref(), Some("failed"));
        assert_eq!(
            page.count("form[data-action=\"cancel\"]").await,
            0,
            "a failed job cannot be cancelled"
        );
        press(&page, "retry").await;
        page.wait_page("job").await;
        assert_eq!(
            page.path().await,
            format!("/jobs/{failed}"),
            "back on the detail page"
        );
        page.wait_text(status, "to read queued", |t| t == "queued")
            .await;
        assert_eq!(dash.status(&failed).await, JobStatus::Queued);
        page.screenshot("job-after-retry").await;

        // Cancel the queued job.
        open(&page, &dash.url(&format!("/jobs/{queued}")), "job").await;
        assert_eq!(page.text(status).await.as_deref(), Some("queued"));
        press(&page, "cancel").await;
        page.wait_page("job").await;
        assert_eq!(
            page.path().await,
            format!("/jobs/{queued}"),
            "back on the detail page"
        );
        page.wait_text(status, "to read cancelled", |t| t == "cancelled")
            .await;
        assert_eq!(dash.status(&queued).await, JobStatus::Cancelled);
        assert_eq!(
            page.count("form[data-action=\"cancel\"]").await,
            0,
            "no cancel on a cancelled job"
        );
        page.screenshot("job-after-cancel").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_and_resume_from_the_queues_page() {
    let dash = Dash::start(WebOptions::new()).await;
    dash.enqueue(
        "send_welcome",
        json!({}),
        EnqueueOptions::new().queue("mail"),
    )
    .await;

    support::run("pause_and_resume", move |page| async move {
        open(&page, &dash.url("/queues"), "queues").await;
        press(&page, "pause").await;
        page.wait_page("queues").await;
        page.wait_present("form[data-action=\"resume\"]").await;
        page.screenshot("queues-paused").await;
        assert!(dash.paused("mail").await, "the store holds the pause");
        press(&page, "resume").await;
        page.wait_page("queues").await;
        page.wait_present("form[data-action=\"pause\"]").await;
        assert!(!dash.paused("mail").await, "the store holds the resume");
    })
    .await;
}
