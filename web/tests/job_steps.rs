//! The job page's steps and signals through a real server: a durable job's
//! recorded steps in order, names escaped, a sleep shown with its wake-up
//! time, the signals it received; a job without either has no table; a
//! parent waiting for its child and the child link to each other.

mod common;

use std::sync::Arc;

use common::*;
use duraq_core::driver::StepWrite;
use duraq_core::{MemoryStore, Store};
use duraq_web::{router, WebOptions};
use serde_json::json;

#[tokio::test]
async fn the_job_page_lists_a_jobs_steps_and_sleeps() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let id = enqueue_plain(&store, "orders").await;
    let plain = enqueue_plain(&store, "orders").await;
    let running = claim(&store, 1).await.remove(0);
    assert_eq!(running.id, id);
    for (name, output) in [
        (format!("charge {SCRIPT}"), json!({"charge": "ch_1"})),
        (
            "duraq.sleep.1".to_owned(),
            json!({"untilMs": 4_102_444_800_000_i64}),
        ),
    ] {
        let write = StepWrite {
            lease: lease_of(&running),
            attempt: 1,
            name,
            output,
            keep_completed: true,
        };
        assert!(store.record_step(write).await.unwrap().is_some());
    }
    store.signal(&id, "shipped", json!("1Z")).await.unwrap();
    let addr = spawn_server(router(store.clone(), WebOptions::new())).await;
    let (status, _, page) = http(addr, "GET", &format!("/jobs/{id}"), &[], "").await;
    assert_eq!(status, 200, "{page}");
    let charge = page
        .find("charge &lt;script&gt;")
        .expect("the step, escaped");
    let sleep = page.find("data-step=\"duraq.sleep.1\"").expect("the sleep");
    assert!(charge < sleep, "in the order they were recorded");
    assert!(!page.contains(SCRIPT));
    assert!(page.contains("17 bytes of JSON"), "{page}");
    assert!(page.contains("sleeps until"), "{page}");
    assert!(page.contains("<tr data-signal=\"shipped\">"), "{page}");
    let (_, _, page) = http(addr, "GET", &format!("/jobs/{plain}"), &[], "").await;
    assert!(!page.contains("id=\"steps\"") && !page.contains("id=\"signals\""));
}

#[tokio::test]
async fn a_parent_and_its_child_link_to_each_other() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let parent = enqueue_plain(&store, "orders").await;
    let running = claim(&store, 1).await.remove(0);
    let new = duraq_core::NewJob::new("render", json!([]), duraq_core::EnqueueOptions::new());
    let child = new.unwrap().child_of(&parent, "pdf").unwrap();
    let child = store.enqueue(child).await.unwrap().job_id().to_owned();
    let wait = duraq_core::Outcome::AwaitSignal {
        name: format!("duraq.child.{child}"),
        until_ms: 4_102_444_800_000,
    };
    let reported = store.report_batch(vec![(lease_of(&running), wait)]).await;
    assert_eq!(reported.unwrap(), [true]);
    let addr = spawn_server(router(store.clone(), WebOptions::new())).await;
    let (status, _, page) = http(addr, "GET", &format!("/jobs/{parent}"), &[], "").await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Waiting for child"), "{page}");
    assert!(page.contains(&format!("href=\"/jobs/{child}\"")), "{page}");
    let (_, _, page) = http(addr, "GET", &format!("/jobs/{child}"), &[], "").await;
    assert!(page.contains("data-field=\"parentId\""), "{page}");
    assert!(page.contains(&format!("href=\"/jobs/{parent}\"")), "{page}");
}
