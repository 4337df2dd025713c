//! Getting around the dashboard: every page loads with its seeded data and
//! the store's numbers, every nav link leads to its page, and the jobs table
//! pages with `a[data-next]`, filters, and finds a job by id. These are the
//! paths an operator takes before doing anything, so they run first and
//! screenshot each page.

use duraq_core::inspect::JobFilter;
use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, JobStatus};
use duraq_web::WebOptions;
use serde_json::json;

use crate::dash::{open, Dash};
use crate::support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_loads_and_the_nav_links_lead_to_each() {
    let dash = Dash::start(WebOptions::new()).await;
    for i in 0..3 {
        dash.enqueue(
            "send_welcome",
            json!({"user": i}),
            EnqueueOptions::new().queue("mail"),
        )
        .await;
    }
    let failed = dash
        .failed(
            "charge_card",
            json!({"order": 7}),
            "billing",
            "card declined: insufficient funds",
        )
        .await;
    dash.completed("resize_image").await;
    let running = dash.running("transcode_video").await;
    let keyed = dash
        .scheduled("digest:user:42", "send_digest", json!({"user": 42}))
        .await;
    let counts = dash.store.count_snapshot().await.unwrap().counts;

    support::run("every_page_loads", move |page| async move {
        let pages = [
            ("/", "overview"),
            ("/queues", "queues"),
            ("/jobs", "jobs"),
            (&*format!("/jobs/{failed}"), "job"),
            ("/workers", "workers"),
            ("/keys?key=digest%3Auser%3A42", "keys"),
        ];
        for (path, name) in pages {
            open(&page, &dash.url(path), name).await;
            page.screenshot(name).await;
        }

        // Queues: once the page splits by queue, each seeded queue has a row.
        open(&page, &dash.url("/queues"), "queues").await;
        let mut queues = page
            .attrs("table[data-table=\"queues\"] tr[data-queue]", "data-queue")
            .await;
        queues.sort();
        if queues.is_empty() {
            support::note(
                "every_page_loads: /queues has one row for all queues (no tr[data-queue] yet)",
            );
        } else {
            for q in ["billing", "default", "mail"] {
                assert!(queues.iter().any(|x| x == q), "queue {q} in {queues:?}");
            }
        }

        // The overview's numbers are the store's.
        open(&page, &dash.url("/"), "overview").await;
        for status in JobStatus::ALL {
            let shown = page
                .text(&format!("[data-count=\"{}\"]", status.as_str()))
                .await
                .unwrap_or_else(|| panic!("no [data-count={status}] on the overview"));
            assert_eq!(shown, counts.get(status).to_string(), "count of {status}");
        }
        assert_eq!(
            page.text("[data-count=\"total\"]").await.as_deref(),
            Some(&*counts.all.to_string())
        );
        assert_eq!(page.count("#throughput").await, 1, "throughput chart");

        // The jobs table lists the seeded jobs; the failed one opens its page.
        open(&page, &dash.url("/jobs"), "jobs").await;
        let ids = page
            .attrs("table[data-table=\"jobs\"] tr[data-job-id]", "data-job-id")
            .await;
        assert_eq!(ids.len() as i64, counts.all, "every job in the table");
        assert!(ids.contains(&failed));
        open(&page, &dash.url(&format!("/jobs/{failed}")), "job").await;
        assert_eq!(
            page.text("[data-field=\"status\"]").await.as_deref(),
            Some("failed")
        );

        // Workers: the running job under its worker.
        open(&page, &dash.url("/workers"), "workers").await;
        assert_eq!(
            page.attrs(
                "[data-worker-id=\"browser-test\"] tr[data-job-id]",
                "data-job-id"
            )
            .await,
            vec![running.clone()],
            "the workers page shows worker browser-test running its job"
        );
        assert_eq!(
            page.attrs("[data-worker-id=\"browser-test\"]", "data-state")
                .await,
            vec!["alive".to_string()]
        );
        // No worker handles the queued mail jobs: the page names them, and the
        // queues table carries a badge on the mail row.
        let unhandled = page.attrs("li[data-unhandled]", "data-unhandled").await;
        assert!(
            unhandled.iter().any(|n| n == "send_welcome"),
            "{unhandled:?}"
        );
        page.screenshot("workers-unhandled").await;
        open(&page, &dash.url("/queues"), "queues").await;
        assert_eq!(
            page.count("tr[data-queue=\"mail\"] [data-unhandled=\"send_welcome\"]")
                .await,
            1,
            "the badge on the mail queue"
        );

        // Keys: the lookup form finds the key's current owner.
        open(&page, &dash.url("/keys"), "keys").await;
        page.type_into(
            "form[data-key-search] input[name=\"key\"]",
            "digest:user:42",
        )
        .await;
        page.mark_document().await;
        page.click("form[data-key-search] button").await;
        page.wait_navigated().await;
        page.wait_page("keys").await;
        assert_eq!(
            page.attrs("[data-owner] tr[data-job-id]", "data-job-id")
                .await,
            vec![keyed.clone()],
            "the key's owner"
        );

        // Every nav link, from every page, leads to its page.
        for from in ["/", "/jobs", "/keys"] {
            for target in ["overview", "queues", "jobs", "workers", "keys"] {
                page.goto(&dash.url(from)).await;
                page.wait_present("a[data-nav]").await;
                page.mark_document().await;
                page.click(&format!("a[data-nav=\"{target}\"]")).await;
                page.wait_navigated().await;
                page.wait_page(target).await;
            }
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_jobs_table_pages_with_next_and_finds_a_job_by_id() {
    let dash = Dash::start(WebOptions::new()).await;
    for i in 0..23 {
        let queue = if i % 2 == 0 { "default" } else { "mail" };
        dash.enqueue(
            "send_welcome",
            json!({"user": i}),
            EnqueueOptions::new().queue(queue),
        )
        .await;
    }
    let failed = dash
        .failed("charge_card", json!({"order": 1}), "billing", "declined")
        .await;
    let expected: Vec<String> = dash
        .store
        .search_jobs(&JobFilter::default())
        .await
        .unwrap()
        .jobs
        .into_iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(expected.len(), 24);
    let needle = expected[17].clone();

    support::run("jobs_paging_and_search", move |page| async move {
        // Page through 24 jobs, 10 at a time, with a[data-next] only.
        open(&page, &dash.url("/jobs?limit=10"), "jobs").await;
        let rows = "table[data-table=\"jobs\"] tr[data-job-id]";
        let mut seen: Vec<String> = Vec::new();
        let mut pages = 0;
        loop {
            pages += 1;
            assert!(
                pages <= 5,
                "a[data-next] kept going after {} rows",
                seen.len()
            );
            let ids = page.attrs(rows, "data-job-id").await;
            assert!(
                ids.len() <= 10,
                "page {pages} has {} rows, limit 10",
                ids.len()
            );
            seen.extend(ids);
            if pages == 2 {
                page.screenshot("jobs-page-2").await;
            }
            if page.count("a[data-next]").await == 0 {
                break;
            }
            page.mark_document().await;
            page.click("a[data-next]").await;
            page.wait_navigated().await;
            page.wait_page("jobs").await;
        }
        assert_eq!(
            seen, expected,
            "paging shows every job once, in the store's order"
        );
        assert!(pages >= 3, "24 jobs at 10 a page take 3 pages, saw {pages}");

        // Filters narrow the table.
        open(&page, &dash.url("/jobs?status=failed"), "jobs").await;
        assert_eq!(page.attrs(rows, "data-job-id").await, vec![failed.clone()]);
        open(&page, &dash.url("/jobs?queue=mail"), "jobs").await;
        assert_eq!(page.attrs(rows, "data-job-id").await.len(), 11);
        open(&page, &dash.url("/jobs?name=charge_card"), "jobs").await;
        assert_eq!(page.attrs(rows, "data-job-id").await, vec![failed.clone()]);

        // Search by id from the header form: it leads to that job's page.
        open(&page, &dash.url("/jobs"), "jobs").await;
        page.type_into("form[data-search] input[name=\"id\"]", &needle)
            .await;
        page.mark_document().await;
        page.click("form[data-search] button, form[data-search] input[type=\"submit\"]")
            .await;
        page.wait_navigated().await;
        page.wait_page("job").await;
        let url = page.url().await;
        assert!(url.contains(&needle), "search for {needle} landed on {url}");
        let body = page.text("main").await.unwrap_or_default();
        assert!(body.contains(&needle), "the job page shows the id");

        // An unknown id says so.
        page.type_into("form[data-search] input[name=\"id\"]", "no-such-job")
            .await;
        page.mark_document().await;
        page.click("form[data-search] button, form[data-search] input[type=\"submit\"]")
            .await;
        page.wait_navigated().await;
        page.wait_present("[data-not-found]").await;
    })
    .await;
}
