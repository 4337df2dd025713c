//! `/metrics` scraped over a real TCP listener after a real worker ran jobs:
//! the exposition parses, and the job gauges, attempt counters, histograms and
//! slot gauges carry the expected names, labels and values.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::{http, spawn_server};
use duraq_core::{
    EnqueueOptions, JobError, JobStatus, MemoryStore, NewJob, Registry, Store, Worker,
};
use duraq_web::{metrics_router, router, WebOptions, WorkerMetrics};

/// `name{a="x",b="y"}` → value, from the OpenMetrics text (labels as written).
fn parse(text: &str) -> BTreeMap<String, f64> {
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.last(), Some(&"# EOF"), "ends with # EOF");
    assert_eq!(text.matches("# EOF").count(), 1);
    let mut samples = BTreeMap::new();
    for line in lines
        .iter()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("bad line {line}"));
        let value: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("bad value in {line}"));
        assert!(
            samples.insert(series.to_string(), value).is_none(),
            "duplicate {series}"
        );
    }
    samples
}

async fn enqueue(store: &Arc<dyn Store>, name: &str, queue: &str) {
    let opts = EnqueueOptions {
        queue: Some(queue.into()),
        max_retries: Some(0),
        ..EnqueueOptions::new()
    };
    store
        .enqueue(NewJob::new(name, serde_json::json!([]), opts).unwrap())
        .await
        .unwrap();
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
    let (status, head, body) = http(addr, "GET", "/metrics", &[], "").await;
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
    assert_eq!(get("duraq_worker_slot_utilization"), 0.0);
    assert_eq!(get(r#"duraq_jobs{status="completed"}"#), 3.0);
    assert_eq!(get(r#"duraq_jobs{status="queued"}"#), 1.0);
    assert_eq!(
        get(r#"duraq_jobs{queue="default",status="completed"}"#),
        3.0
    );
    assert_eq!(get(r#"duraq_jobs{queue="mail",status="failed"}"#), 1.0);
    assert_eq!(get(r#"duraq_jobs{queue="mail",status="queued"}"#), 1.0);
    assert!(m.contains_key(r#"duraq_queue_latency_seconds{queue="mail"}"#));
    assert!(get("duraq_jobs_revision") >= 1.0);
}

#[tokio::test]
async fn the_dashboards_metrics_need_the_token_when_one_is_set() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    enqueue(&store, "ok", "default").await;
    let token = "metrics-token-123";
    let addr = spawn_server(router(store, WebOptions::new().token(token))).await;
    assert_eq!(http(addr, "GET", "/metrics", &[], "").await.0, 401);
    let bearer = format!("Bearer {token}");
    let (status, _, body) = http(addr, "GET", "/metrics", &[("Authorization", &bearer)], "").await;
    assert_eq!(status, 200);
    let m = parse(&body);
    assert_eq!(m[r#"duraq_jobs{status="queued"}"#], 1.0);
    assert_eq!(m[r#"duraq_jobs{queue="default",status="queued"}"#], 1.0);
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
        if let duraq_core::WorkerEvent::Started(s) = events.recv().await.unwrap() {
            metrics.observe(&duraq_core::WorkerEvent::Started(s.clone()));
            break s.job_id;
        }
    };
    store.cancel_job(&id).await.unwrap();
    loop {
        let event = events.recv().await.unwrap();
        metrics.observe(&event);
        if matches!(event, duraq_core::WorkerEvent::Finished(_)) {
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
