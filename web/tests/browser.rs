//! The dashboard in a real browser: headless Chromium (Debian's `chromium`)
//! driven through `chromedriver` by `fantoccini` (`docs/dashboard.md`).
//!
//! Each test seeds a fresh SQLite store in a temp dir through the library,
//! serves `duraq_web::router` in-process on 127.0.0.1:0 with `axum::serve`, and
//! starts its own chromedriver + Chromium (private port, fresh profile). Waits
//! poll the DOM with a deadline ([`support::DEADLINE`]); nothing sleeps in place
//! of a condition. Screenshots go to `<target>/web-screenshots/`.
//!
//! Without Chromium these tests skip with a message; under `CI=true` they fail
//! (`.ci/run` installs `chromium` and `chromium-driver`).
//!
//! Run: `cargo test -p duraq-web --test browser`.

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use duraq_core::prelude::*;
use duraq_core::{
    ClaimRequest, EnqueueOptions, JobFilter, JobStatus, NewJob, Outcome, ScheduleKey,
};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use duraq_web::{router, WebOptions};
use serde_json::{json, Value};
use support::Page;

/// A dashboard on a fresh SQLite file, served on a loopback port.
struct Dash {
    base: String,
    store: SqliteStore,
    db: PathBuf,
    _dir: tempfile::TempDir,
}

impl Dash {
    /// Whether the store says `queue` is paused.
    async fn paused(&self, queue: &str) -> bool {
        let snap = self.store.queue_snapshot().await.expect("queue snapshot");
        snap.queue(queue).is_some_and(|q| q.paused)
    }

    async fn start(options: WebOptions) -> Dash {
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

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn enqueue(&self, name: &str, args: Value, opts: EnqueueOptions) -> String {
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
    async fn failed(&self, name: &str, args: Value, queue: &str, error: &str) -> String {
        let id = self
            .enqueue(
                name,
                args,
                EnqueueOptions::new().queue(queue).max_retries(0),
            )
            .await;
        let claimed = self
            .store
            .claim(&ClaimRequest {
                worker_id: "browser-test".into(),
                job_names: vec![name.to_string()],
                queues: Some(vec![queue.to_string()]),
                limit: 1,
                ..ClaimRequest::default()
            })
            .await
            .expect("claim");
        assert_eq!(claimed.len(), 1, "claimed the job just enqueued");
        assert_eq!(claimed[0].id, id);
        let lease = claimed[0].lease().expect("a lease");
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
    async fn completed(&self, name: &str) -> String {
        let id = self.enqueue(name, json!({}), EnqueueOptions::new()).await;
        let claimed = self
            .store
            .claim(&ClaimRequest {
                worker_id: "browser-test".into(),
                job_names: vec![name.to_string()],
                limit: 1,
                ..ClaimRequest::default()
            })
            .await
            .expect("claim");
        assert_eq!(claimed.len(), 1);
        let lease = claimed[0].lease().expect("a lease");
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
    async fn running(&self, name: &str) -> String {
        self.store
            .register_worker(&duraq_core::WorkerInfo {
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
        let claimed = self
            .store
            .claim(&ClaimRequest {
                worker_id: "browser-test".into(),
                job_names: vec![name.to_string()],
                limit: 1,
                ..ClaimRequest::default()
            })
            .await
            .expect("claim");
        assert_eq!(claimed.len(), 1);
        assert_eq!(claimed[0].id, id);
        id
    }

    async fn scheduled(&self, key: &str, name: &str, args: Value) -> String {
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

    async fn status(&self, id: &str) -> JobStatus {
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

/// Percent-encodes a query value (every byte but unreserved ones).
fn q(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Loads `url` and waits for `<main data-page="name">`.
async fn open(page: &Page, url: &str, name: &str) {
    page.goto(url).await;
    page.wait_page(name).await;
}

/// Presses the submit button of `form[data-action="action"]` and waits for the
/// page the POST redirects to.
async fn press(page: &Page, action: &str) {
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
async fn post_without_csrf(page: &Page, action_path: &str) -> u64 {
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

/// The `duraq` binary cargo built beside this test (`<target>/<profile>/duraq`).
fn duraq_binary() -> Option<PathBuf> {
    let path = support::profile_dir().join(format!("duraq{}", std::env::consts::EXE_SUFFIX));
    path.exists().then_some(path)
}

fn enqueue_from_another_process(duraq: &Path, db: &Path, name: &str) {
    let out = std::process::Command::new(duraq)
        .arg("--database")
        .arg(format!("sqlite:{}", db.display()))
        .args(["enqueue", name, "--args", "{\"from\":\"another process\"}"])
        .env_remove("DURAQ_DATABASE_URL")
        .output()
        .expect("run duraq enqueue");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{} enqueue failed ({}): {}{stderr}{}",
        duraq.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        if stderr.contains("schema-incompatible") {
            "(that binary is older than this test's store: `cargo build -p duraq-cli`)"
        } else {
            ""
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overview_counts_change_live_when_another_process_enqueues() {
    let Some(duraq) = duraq_binary() else {
        let msg = format!(
            "overview_live: no `duraq` binary at {}; build it (`cargo build -p duraq-cli`, \
             or test the whole workspace) to run this test",
            support::profile_dir().join("duraq").display()
        );
        if support::in_ci() {
            panic!("{msg} (CI=true: nothing may skip)");
        }
        support::skip(&msg);
        return;
    };
    let dash = Dash::start(WebOptions::new()).await;
    dash.enqueue("send_welcome", json!({}), EnqueueOptions::new())
        .await;
    dash.failed("charge_card", json!({}), "billing", "declined")
        .await;

    support::run("overview_live", move |page| async move {
        open(&page, &dash.url("/"), "overview").await;
        let queued = "[data-count=\"queued\"]";
        let total = "[data-count=\"total\"]";
        assert_eq!(page.text(queued).await.as_deref(), Some("1"));
        assert_eq!(page.text(total).await.as_deref(), Some("2"));
        page.mark_document().await;

        let (d, db) = (duraq.clone(), dash.db.clone());
        tokio::task::spawn_blocking(move || {
            enqueue_from_another_process(&d, &db, "sync_inventory");
            enqueue_from_another_process(&d, &db, "sync_inventory");
        })
        .await
        .unwrap();

        page.wait_text(queued, "to read 3 (two enqueued by `duraq enqueue`)", |t| {
            t == "3"
        })
        .await;
        page.wait_text(total, "to read 4", |t| t == "4").await;
        assert_eq!(
            page.text("[data-count=\"failed\"]").await.as_deref(),
            Some("1")
        );
        // The overview's per-queue counts are live too.
        let cell = "table[data-table=\"queues\"] tr[data-queue=\"default\"] \
                    [data-queue-count=\"queued\"]";
        page.wait_text(cell, "to read 3 (live, per queue)", |t| t == "3")
            .await;
        assert!(
            page.still_marked().await,
            "the counts changed without a reload"
        );
        page.screenshot("overview-live").await;
    })
    .await;
}

/// Markup that would run or load something if a page ever failed to escape it.
const HOSTILE: &str = "<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">\"'><svg onload=window.__pwned=3>";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_names_args_keys_and_errors_render_as_text() {
    let dash = Dash::start(WebOptions::new()).await;
    let args = json!({"html": HOSTILE, "list": [HOSTILE]});
    let plain = dash
        .enqueue(
            HOSTILE,
            args.clone(),
            EnqueueOptions::new()
                .queue(HOSTILE)
                .idempotency_key(HOSTILE),
        )
        .await;
    let failed = dash
        .failed(&format!("{HOSTILE}!"), args.clone(), HOSTILE, HOSTILE)
        .await;
    let keyed = dash.scheduled(HOSTILE, HOSTILE, args).await;

    support::run("hostile_content", move |page| async move {
        let visits = [
            (dash.url("/"), "overview"),
            (dash.url("/queues"), "queues"),
            (dash.url("/jobs"), "jobs"),
            (dash.url(&format!("/jobs?name={}", q(HOSTILE))), "jobs"),
            (dash.url(&format!("/jobs?queue={}", q(HOSTILE))), "jobs"),
            (dash.url(&format!("/jobs/{plain}")), "job"),
            (dash.url(&format!("/jobs/{failed}")), "job"),
            (dash.url(&format!("/jobs/{keyed}")), "job"),
            (dash.url("/workers"), "workers"),
            (dash.url(&format!("/keys?key={}", q(HOSTILE))), "keys"),
        ];
        for (url, name) in visits {
            open(&page, &url, name).await;
            let injected = page
                .js(
                    "return { pwned: typeof window.__pwned, \
                       scripts: Array.from(document.scripts).filter(s => s.textContent.includes('__pwned')).length, \
                       imgs: document.querySelectorAll('img[src=\"x\"]').length, \
                       svgs: Array.from(document.querySelectorAll('svg')).filter(s => s.hasAttribute('onload')).length, \
                       handlers: Array.from(document.querySelectorAll('*')).filter(e => Array.from(e.attributes).some(a => a.name.startsWith('on'))).length };",
                    vec![],
                )
                .await;
            assert_eq!(
                injected,
                json!({"pwned": "undefined", "scripts": 0, "imgs": 0, "svgs": 0, "handlers": 0}),
                "hostile text became markup on {url}"
            );
        }
        // The detail page shows the text itself, escaped, not dropped.
        open(&page, &dash.url(&format!("/jobs/{failed}")), "job").await;
        let text = page.text("main").await.unwrap_or_default();
        assert!(
            text.contains("<script>window.__pwned=1</script>"),
            "the failed job's page shows the hostile text literally"
        );
        page.screenshot("job-hostile").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_dashboard_shows_no_actions_and_refuses_posts() {
    let dash = Dash::start(WebOptions::new().read_only(true)).await;
    let failed = dash
        .failed("charge_card", json!({}), "billing", "declined")
        .await;
    let queued = dash
        .enqueue("send_welcome", json!({}), EnqueueOptions::new())
        .await;
    let keyed = dash.scheduled("digest:1", "send_digest", json!({})).await;

    support::run("read_only", move |page| async move {
        for (path, name) in [
            ("/".to_string(), "overview"),
            ("/queues".to_string(), "queues"),
            ("/jobs".to_string(), "jobs"),
            (format!("/jobs/{failed}"), "job"),
            (format!("/jobs/{queued}"), "job"),
            (format!("/jobs/{keyed}"), "job"),
            ("/workers".to_string(), "workers"),
            ("/keys?key=digest%3A1".to_string(), "keys"),
        ] {
            open(&page, &dash.url(&path), name).await;
            assert_eq!(
                page.count("form[data-action]").await,
                0,
                "read-only {path} has an action form"
            );
        }
        open(&page, &dash.url(&format!("/jobs/{failed}")), "job").await;
        page.screenshot("job-read-only").await;
        // Even a hand-made POST changes nothing.
        for (id, action) in [(&failed, "retry"), (&queued, "cancel")] {
            let answer = post_without_csrf(&page, &format!("/jobs/{id}/{action}")).await;
            assert_eq!(answer, 403, "read-only POST {action} answered {answer}");
        }
        assert_eq!(dash.status(&failed).await, JobStatus::Failed);
        assert_eq!(dash.status(&queued).await, JobStatus::Queued);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_dashboard_logs_in_once_and_never_shows_a_secret() {
    const TOKEN: &str = "tok-3f9c2a7d5e1b";
    const PASSWORD: &str = "db-password-hunter2";
    let dash = Dash::start(WebOptions::new().token(TOKEN).secrets([PASSWORD])).await;
    let failed = dash
        .failed(
            "charge_card",
            json!({}),
            "billing",
            &format!("connect postgres://app:{PASSWORD}@db/app failed; token {TOKEN}"),
        )
        .await;

    support::run("token", move |page| async move {
        // Without the token: refused, no page.
        page.goto(&dash.url("/")).await;
        page.wait_for("the refusal", |p| async move {
            match p.text("body").await {
                Some(t) if t.contains("token") => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
        assert_eq!(
            page.count("main[data-page]").await,
            0,
            "no page without the token"
        );

        // `?token=` once: a cookie, and the URL loses the token.
        page.goto(&dash.url(&format!("/jobs?status=failed&token={TOKEN}")))
            .await;
        page.wait_page("jobs").await;
        let url = page.url().await;
        assert!(
            !url.contains(TOKEN),
            "the token stays out of the URL: {url}"
        );
        assert!(
            url.contains("status=failed"),
            "the rest of the query is kept: {url}"
        );
        let cookies = page.js("return document.cookie;", vec![]).await;
        assert!(
            !cookies.as_str().unwrap_or("").contains(TOKEN),
            "the token cookie is HttpOnly"
        );

        // The cookie carries every later request: nav, detail, the live
        // counts' event stream and a POST.
        page.mark_document().await;
        page.click("a[data-nav=\"overview\"]").await;
        page.wait_navigated().await;
        page.wait_page("overview").await;
        let source = page.client.source().await.expect("page source");
        assert!(!source.contains(TOKEN), "the overview renders the token");
        page.mark_document().await;
        dash.enqueue("send_welcome", json!({}), EnqueueOptions::new())
            .await;
        page.wait_text("[data-count=\"queued\"]", "to read 1 (live)", |t| t == "1")
            .await;
        assert!(page.still_marked().await, "live, without a reload");

        open(&page, &dash.url(&format!("/jobs/{failed}")), "job").await;
        let source = page.client.source().await.expect("page source");
        assert!(!source.contains(TOKEN), "the job page renders the token");
        assert!(!source.contains(PASSWORD), "the job page renders a secret");
        let error = page
            .text("[data-field=\"lastError\"]")
            .await
            .unwrap_or_default();
        assert!(
            error.contains("***"),
            "secrets are masked in lastError: {error}"
        );
        page.screenshot("job-secrets-masked").await;
        press(&page, "retry").await;
        page.wait_text("[data-field=\"status\"]", "to read queued", |t| {
            t == "queued"
        })
        .await;
        assert_eq!(dash.status(&failed).await, JobStatus::Queued);
    })
    .await;
}
