//! Live updates across processes: the overview's counts, total and per queue,
//! change without a reload when the `duraq` binary enqueues into the same
//! SQLite file from another process, the way workers and producers share a
//! store in production.

use std::path::{Path, PathBuf};

use duraq_core::EnqueueOptions;
use duraq_web::WebOptions;
use serde_json::json;

use crate::dash::{open, Dash};
use crate::support;

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
