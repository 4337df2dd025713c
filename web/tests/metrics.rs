//! `/metrics` scraped over a real TCP listener after a real worker ran jobs:
//! the exposition parses, and the job gauges, attempt counters, histograms and
//! slot gauges carry the expected names, labels and values. Then the
//! conventions of `docs/dashboard.md`, checked on names and labels: one
//! aggregation level per name, every known queue's series present (at 0 when
//! there is nothing to count), the build info, and the same sorted order at
//! every scrape. A scrape that asks for OpenMetrics (as Prometheus does) gets
//! it; any other gets the classic text format, which `promtool check metrics`
//! reads (`tests/promtool.rs`).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use common::{http, spawn_server};
use duraq_core::driver::ClaimRequest;
use duraq_core::{
    EnqueueOptions, JobError, JobStatus, ManualClock, MemoryStore, NewJob, Outcome, QueueName,
    Registry, Store, Worker,
};
use duraq_web::{metrics_router, render_metrics, router, WebOptions, WorkerMetrics};

/// One sample line: its name, its labels as written, its value.
#[derive(Clone, Debug, PartialEq)]
struct Sample {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
}

impl Sample {
    /// `name{a="x",b="y"}`, as the exposition writes it.
    fn series(&self) -> String {
        if self.labels.is_empty() {
            return self.name.clone();
        }
        let labels: Vec<String> = self
            .labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{v}\""))
            .collect();
        format!("{}{{{}}}", self.name, labels.join(","))
    }

    fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn keys(&self) -> Vec<String> {
        self.labels.iter().map(|(k, _)| k.clone()).collect()
    }
}

/// Every sample of the OpenMetrics text, in the order written.
fn samples(text: &str) -> Vec<Sample> {
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.last(), Some(&"# EOF"), "ends with # EOF");
    assert_eq!(text.matches("# EOF").count(), 1);
    lines
        .iter()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|line| {
            let (series, value) = line
                .rsplit_once(' ')
                .unwrap_or_else(|| panic!("bad line {line}"));
            let value: f64 = value
                .parse()
                .unwrap_or_else(|_| panic!("bad value in {line}"));
            let (name, labels) = match series.split_once('{') {
                None => (series.to_string(), Vec::new()),
                Some((name, rest)) => {
                    let inner = rest
                        .strip_suffix('}')
                        .unwrap_or_else(|| panic!("bad labels in {line}"));
                    (name.to_string(), parse_labels(inner))
                }
            };
            Sample {
                name,
                labels,
                value,
            }
        })
        .collect()
}

/// `a="x",b="y"` (values may hold `\"`, `\\` and `,`).
fn parse_labels(mut inner: &str) -> Vec<(String, String)> {
    let mut labels = Vec::new();
    while !inner.is_empty() {
        let (key, rest) = inner.split_once("=\"").expect("key=\"value\"");
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next().expect("closing quote") {
                (_, '\\') => value.push(chars.next().expect("escaped char").1),
                (i, '"') => break i,
                (_, c) => value.push(c),
            }
        };
        labels.push((key.to_string(), value));
        inner = rest[end + 1..].trim_start_matches(',');
    }
    labels
}

/// The `Accept` header Prometheus sends.
const PROMETHEUS_ACCEPT: &str = "application/openmetrics-text;version=1.0.0,\
    application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// `GET /metrics` as Prometheus asks for it: (status, head, body).
async fn scrape(addr: std::net::SocketAddr, headers: &[(&str, &str)]) -> (u16, String, String) {
    let mut headers = headers.to_vec();
    headers.push(("Accept", PROMETHEUS_ACCEPT));
    http(addr, "GET", "/metrics", &headers, "").await
}

/// `name{a="x",b="y"}` → value, from the OpenMetrics text (labels as written).
fn parse(text: &str) -> BTreeMap<String, f64> {
    let mut map = BTreeMap::new();
    for s in samples(text) {
        assert!(
            map.insert(s.series(), s.value).is_none(),
            "duplicate {}",
            s.series()
        );
    }
    map
}

async fn enqueue(store: &Arc<dyn Store>, name: &str, queue: &str) -> String {
    enqueue_with(store, name, queue, EnqueueOptions::new()).await
}

async fn enqueue_with(
    store: &Arc<dyn Store>,
    name: &str,
    queue: &str,
    opts: EnqueueOptions,
) -> String {
    let opts = EnqueueOptions {
        queue: Some(queue.into()),
        max_retries: Some(0),
        ..opts
    };
    store
        .enqueue(NewJob::new(name, serde_json::json!([]), opts).unwrap())
        .await
        .unwrap()
        .job_id()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_and_store_metrics_after_running_jobs() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    for _ in 0..3 {
        enqueue(&store, "ok", "default").await;
    }
    enqueue(&store, "boom", "mail").await;
    enqueue(&store, "later", "mail").await; // no handler: stays queued

    let registry = Registry::new()
        .register_fn("ok", |_, _| async { Ok::<(), JobError>(()) })
        .unwrap()
        .register_fn("boom", |_, _| async {
            Err::<(), _>(JobError::new("boom").discard())
        })
        .unwrap();
    let worker = Worker::builder(store.clone(), registry)
        .concurrency(4)
        .build()
        .unwrap();
    let metrics = WorkerMetrics::new(4);
    let mut events = worker.subscribe();
    let mut counts = store.subscribe_counts();
    let handle = worker.spawn();
    loop {
        let c = store.count_snapshot().await.unwrap().counts;
        if c.get(JobStatus::Completed) == 3 && c.get(JobStatus::Failed) == 1 {
            break;
        }
        counts.recv().await.unwrap();
    }
    handle.shutdown_and_join().await.unwrap();
    while let Ok(event) = events.try_recv() {
        metrics.observe(&event);
    }

    let addr = spawn_server(metrics_router(Some(store.clone()), Some(metrics), None)).await;
    let (status, head, body) = scrape(addr, &[]).await;
    assert_eq!(status, 200, "{head}");
    assert!(head
        .to_ascii_lowercase()
        .contains("content-type: application/openmetrics-text"));
    let m = parse(&body);
    let get = |k: &str| *m.get(k).unwrap_or_else(|| panic!("no {k} in\n{body}"));
    assert_eq!(
        get(r#"duraq_attempts_total{job_name="ok",outcome="completed"}"#),
        3.0
    );
    assert_eq!(
        get(r#"duraq_attempts_total{job_name="boom",outcome="failed"}"#),
        1.0
    );
    assert_eq!(get(r#"duraq_job_run_seconds_count{job_name="ok"}"#), 3.0);
    assert_eq!(get(r#"duraq_job_wait_seconds_count{job_name="ok"}"#), 3.0);
    assert_eq!(get(r#"duraq_job_wait_seconds_count{job_name="boom"}"#), 1.0);
    assert_eq!(
        get(r#"duraq_job_run_seconds_bucket{le="+Inf",job_name="ok"}"#),
        3.0
    );
    assert_eq!(get("duraq_worker_slots"), 4.0);
    assert_eq!(get("duraq_worker_running"), 0.0);
    assert_eq!(get("duraq_worker_slot_utilization_ratio"), 0.0);
    assert_eq!(get(r#"duraq_jobs{status="completed"}"#), 3.0);
    assert_eq!(get(r#"duraq_jobs{status="queued"}"#), 1.0);
    assert_eq!(
        get(r#"duraq_queue_jobs{queue="default",status="completed"}"#),
        3.0
    );
    assert_eq!(
        get(r#"duraq_queue_jobs{queue="mail",status="failed"}"#),
        1.0
    );
    assert_eq!(
        get(r#"duraq_queue_jobs{queue="mail",status="queued"}"#),
        1.0
    );
    assert!(m.contains_key(r#"duraq_queue_latency_seconds{queue="mail"}"#));
    assert!(get("duraq_jobs_revision") >= 1.0);
    // The worker has stopped, so nothing handles `later` any more.
    assert_eq!(
        get(r#"duraq_unhandled_due_jobs{queue="mail",job_name="later"}"#),
        1.0
    );
    assert_eq!(get(r#"duraq_queue_unhandled_due_jobs{queue="mail"}"#), 1.0);
    assert_eq!(
        get(r#"duraq_queue_unhandled_due_jobs{queue="default"}"#),
        0.0
    );
}

#[tokio::test]
async fn the_dashboards_metrics_need_the_token_when_one_is_set() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    enqueue(&store, "ok", "default").await;
    let token = "metrics-token-123";
    let addr = spawn_server(router(store, WebOptions::new().token(token))).await;
    assert_eq!(http(addr, "GET", "/metrics", &[], "").await.0, 401);
    let bearer = format!("Bearer {token}");
    let (status, _, body) = scrape(addr, &[("Authorization", &bearer)]).await;
    assert_eq!(status, 200);
    let m = parse(&body);
    assert_eq!(m[r#"duraq_jobs{status="queued"}"#], 1.0);
    assert_eq!(
        m[r#"duraq_queue_jobs{queue="default",status="queued"}"#],
        1.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_cancelled_while_running_counts_as_cancelled() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    enqueue(&store, "long", "default").await;
    let registry = Registry::new()
        .register_fn("long", |ctx: duraq_core::JobContext, _| async move {
            ctx.cancelled().await;
            Err::<(), _>(JobError::new("stopped").discard())
        })
        .unwrap();
    let worker = Worker::builder(store.clone(), registry).build().unwrap();
    let metrics = WorkerMetrics::new(10);
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    let id = loop {
        if let duraq_core::worker::WorkerEvent::Started(s) = events.recv().await.unwrap() {
            metrics.observe(&duraq_core::worker::WorkerEvent::Started(s.clone()));
            break s.job_id;
        }
    };
    store.cancel_job(&id).await.unwrap();
    loop {
        let event = events.recv().await.unwrap();
        metrics.observe(&event);
        if matches!(event, duraq_core::worker::WorkerEvent::Finished(_)) {
            break;
        }
    }
    handle.shutdown_and_join().await.unwrap();
    let m = parse(&metrics.render());
    assert_eq!(
        m[r#"duraq_attempts_total{job_name="long",outcome="cancelled"}"#],
        1.0
    );
    assert!(!m.contains_key(r#"duraq_attempts_total{job_name="long",outcome="lost_lease"}"#));
    assert_eq!(m["duraq_worker_running"], 0.0);
}

/// A store on a manual clock with jobs in many queues: `due-00` … `due-11`
/// with one due job each, `later` with a job due in an hour, `done` with a
/// completed job and `paused` paused without jobs; then the clock moves 5 s on.
async fn many_queues() -> (Arc<dyn Store>, ManualClock) {
    let clock = ManualClock::new(1_700_000_000_000);
    let store: Arc<dyn Store> = Arc::new(MemoryStore::with_clock(Arc::new(clock.clone())));
    for i in 0..12 {
        enqueue(&store, &format!("job-{}", i % 3), &format!("due-{i:02}")).await;
    }
    let later = EnqueueOptions::new().run_in(Duration::from_secs(3600));
    enqueue_with(&store, "nightly", "later", later).await;
    enqueue(&store, "finish", "done").await;
    let claimed = store
        .claim(&ClaimRequest {
            worker_id: "w".into(),
            job_names: vec!["finish".into()],
            limit: 1,
            ..ClaimRequest::default()
        })
        .await
        .unwrap();
    let lease = claimed[0].lease().unwrap();
    assert_eq!(
        store
            .report_batch(vec![(lease, Outcome::Completed)])
            .await
            .unwrap(),
        [true]
    );
    let paused = QueueName::new("paused").unwrap();
    store.pause_queue(&paused).await.unwrap();
    clock.advance(5_000);
    (store, clock)
}

/// Both endpoints' text for `store`: the dashboard's and a worker's.
async fn scrapes(store: &Arc<dyn Store>, worker: &WorkerMetrics) -> Vec<String> {
    let dashboard = spawn_server(router(store.clone(), WebOptions::new())).await;
    let metrics = spawn_server(metrics_router(
        Some(store.clone()),
        Some(worker.clone()),
        None,
    ))
    .await;
    let mut texts = Vec::new();
    for addr in [dashboard, metrics] {
        let (status, head, body) = scrape(addr, &[]).await;
        assert_eq!(status, 200, "{head}");
        texts.push(body);
    }
    texts
}

/// A worker's metrics after a real worker ran `names` (one job each, the
/// ones named `fail*` failing).
async fn worker_metrics_after(names: &[&str]) -> WorkerMetrics {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let mut registry = Registry::new();
    for name in names {
        let fails = name.starts_with("fail");
        registry = registry
            .register_fn(name, move |_, _| async move {
                if fails {
                    Err(JobError::new("no").discard())
                } else {
                    Ok(())
                }
            })
            .unwrap();
        enqueue(&store, name, "default").await;
    }
    let worker = Worker::builder(store.clone(), registry).build().unwrap();
    let metrics = WorkerMetrics::new(3);
    let mut events = worker.subscribe();
    let mut counts = store.subscribe_counts();
    let handle = worker.spawn();
    while store.count_snapshot().await.unwrap().counts.queued > 0
        || store.count_snapshot().await.unwrap().counts.handed_off > 0
    {
        counts.recv().await.unwrap();
    }
    handle.shutdown_and_join().await.unwrap();
    while let Ok(event) = events.try_recv() {
        metrics.observe(&event);
    }
    metrics
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_metric_name_has_two_aggregation_levels() {
    let (store, _clock) = many_queues().await;
    let worker = worker_metrics_after(&["send", "fail_charge", "export"]).await;
    for text in scrapes(&store, &worker).await {
        let mut levels: BTreeMap<String, BTreeSet<Vec<String>>> = BTreeMap::new();
        for s in samples(&text) {
            levels.entry(s.name.clone()).or_default().insert(s.keys());
        }
        for (name, label_sets) in &levels {
            assert_eq!(
                label_sets.len(),
                1,
                "{name} mixes label sets {label_sets:?}:\n{text}"
            );
        }
        let keys = |name: &str| levels[name].iter().next().unwrap().clone();
        assert_eq!(keys("duraq_jobs"), ["status"]);
        assert_eq!(keys("duraq_queue_jobs"), ["queue", "status"]);
        assert_eq!(keys("duraq_queue_latency_seconds"), ["queue"]);
        assert_eq!(keys("duraq_queue_unhandled_due_jobs"), ["queue"]);
        assert_eq!(keys("duraq_unhandled_due_jobs"), ["queue", "job_name"]);
        assert_eq!(keys("duraq_build_info"), ["version"]);
        // The per-queue series add up to the all-queue ones.
        for status in JobStatus::ALL {
            let all: f64 = samples(&text)
                .iter()
                .filter(|s| s.name == "duraq_jobs" && s.label("status") == Some(status.as_str()))
                .map(|s| s.value)
                .sum();
            let per_queue: f64 = samples(&text)
                .iter()
                .filter(|s| {
                    s.name == "duraq_queue_jobs" && s.label("status") == Some(status.as_str())
                })
                .map(|s| s.value)
                .sum();
            assert_eq!(all, per_queue, "{}", status.as_str());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_known_queue_has_its_series_at_zero_when_nothing_is_due() {
    let (store, _clock) = many_queues().await;
    let text = render_metrics(Some(store.as_ref()), None).await.unwrap();
    let m = parse(&text);
    let get = |k: &str| *m.get(k).unwrap_or_else(|| panic!("no {k} in\n{text}"));
    let mut queues: Vec<String> = (0..12).map(|i| format!("due-{i:02}")).collect();
    queues.extend(["later", "done", "paused"].map(String::from));
    for queue in &queues {
        for status in JobStatus::ALL {
            let series = format!(
                "duraq_queue_jobs{{queue=\"{queue}\",status=\"{}\"}}",
                status.as_str()
            );
            get(&series);
        }
        get(&format!("duraq_queue_latency_seconds{{queue=\"{queue}\"}}"));
        get(&format!(
            "duraq_queue_unhandled_due_jobs{{queue=\"{queue}\"}}"
        ));
    }
    // No due job: latency 0, nothing unhandled, and no per-name series.
    for queue in ["later", "done", "paused"] {
        assert_eq!(
            get(&format!("duraq_queue_latency_seconds{{queue=\"{queue}\"}}")),
            0.0,
            "{queue}"
        );
        assert_eq!(
            get(&format!(
                "duraq_queue_unhandled_due_jobs{{queue=\"{queue}\"}}"
            )),
            0.0,
            "{queue}"
        );
        assert!(!samples(&text)
            .iter()
            .any(|s| s.name == "duraq_unhandled_due_jobs" && s.label("queue") == Some(queue)));
    }
    assert_eq!(
        get(r#"duraq_queue_jobs{queue="later",status="queued"}"#),
        1.0
    );
    assert_eq!(
        get(r#"duraq_queue_jobs{queue="done",status="completed"}"#),
        1.0
    );
    // A due job, 5 s old, that no worker handles.
    assert_eq!(get(r#"duraq_queue_latency_seconds{queue="due-04"}"#), 5.0);
    assert_eq!(
        get(r#"duraq_queue_unhandled_due_jobs{queue="due-04"}"#),
        1.0
    );
    assert_eq!(
        get(r#"duraq_unhandled_due_jobs{queue="due-04",job_name="job-1"}"#),
        1.0
    );
}

#[tokio::test]
async fn build_info_names_the_version() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let worker = WorkerMetrics::new(1);
    for text in [
        render_metrics(Some(store.as_ref()), None).await.unwrap(),
        render_metrics(None, Some(&worker)).await.unwrap(),
        render_metrics(None, None).await.unwrap(),
    ] {
        let build: Vec<Sample> = samples(&text)
            .into_iter()
            .filter(|s| s.name == "duraq_build_info")
            .collect();
        assert_eq!(build.len(), 1, "{text}");
        assert_eq!(build[0].label("version"), Some(env!("CARGO_PKG_VERSION")));
        assert_eq!(build[0].value, 1.0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn series_come_in_label_order_the_same_at_every_scrape() {
    let (store, _clock) = many_queues().await;
    let names = [
        "send", "fail_a", "export", "fail_b", "resize", "notify", "bill",
    ];
    let worker = worker_metrics_after(&names).await;
    let first = scrapes(&store, &worker).await;
    let second = scrapes(&store, &worker).await;
    assert_eq!(first, second, "two scrapes of unchanged state differ");
    for (endpoint, text) in first.iter().enumerate() {
        let all = samples(text);
        // Within each name, the label sets (without a histogram's `le`) do not go back.
        let mut seen: BTreeMap<&str, Vec<Vec<(String, String)>>> = BTreeMap::new();
        for s in &all {
            let labels: Vec<(String, String)> = s
                .labels
                .iter()
                .filter(|(k, _)| k != "le")
                .cloned()
                .collect();
            let list = seen.entry(s.name.as_str()).or_default();
            if list.last() != Some(&labels) {
                list.push(labels);
            }
        }
        for (name, list) in &seen {
            let mut sorted = list.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(list, &sorted, "{name} is not in label order:\n{text}");
        }
        assert_eq!(seen["duraq_queue_jobs"].len(), 15 * JobStatus::ALL.len());
        if endpoint == 1 {
            assert_eq!(seen["duraq_attempts_total"].len(), names.len());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_that_does_not_ask_for_openmetrics_gets_the_classic_format() {
    let (store, _clock) = many_queues().await;
    let worker = worker_metrics_after(&["send", "fail_charge"]).await;
    let addr = spawn_server(metrics_router(Some(store), Some(worker), None)).await;
    let (status, head, classic) = http(addr, "GET", "/metrics", &[("Accept", "*/*")], "").await;
    assert_eq!(status, 200, "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4"),
        "{head}"
    );
    let (_, _, openmetrics) = scrape(addr, &[]).await;
    // The same samples; a counter's metadata named after its samples; no `# EOF`.
    let lines = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .map(String::from)
            .collect()
    };
    assert_eq!(lines(&classic), lines(&openmetrics));
    assert!(!classic.contains("# EOF"), "{classic}");
    assert!(
        classic.contains("\n# TYPE duraq_attempts_total counter\n"),
        "{classic}"
    );
    assert!(
        classic.contains("\n# HELP duraq_attempts_total "),
        "{classic}"
    );
    assert!(openmetrics.contains("\n# TYPE duraq_attempts counter\n"));
    assert!(classic.contains("\n# TYPE duraq_queue_jobs gauge\n"));
}
