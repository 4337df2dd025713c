//! (issue 16) Dashboard server time on a large table: the overview reads only
//! the O(1) queue snapshot and the jobs page one index-ordered `search_jobs` page
//! with a limit, so both should answer in well under 100 ms at 1,000,000 jobs.
//! The store is filled the way the `counts` scenario fills it (batch enqueue),
//! then each page is requested through the router in process (`oneshot`, no
//! socket): the figure is the median server time of many requests after a
//! warm-up, body read to the end.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use duraq_core::Store;
use duraq_web::{router, WebOptions};
use http_body_util::BodyExt;
use tower::ServiceExt;

use super::{Figure, Sizes};
use crate::producer::enqueue_batched;
use crate::target::Target;

const WARMUP: usize = 5;
const SAMPLES: usize = 50;

/// The pages timed: (figure name, path).
const PAGES: [(&str, &str); 4] = [
    ("overview", "/"),
    ("jobs", "/jobs"),
    ("jobs_queued", "/jobs?status=queued&limit=50"),
    ("queues", "/queues"),
];

pub async fn dashboard(target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    let store = target.open().await?;
    enqueue_batched(&store, sizes.count_large, 1_000).await?;
    let total = store.count_snapshot().await?.total;
    ensure!(total == sizes.count_large as i64, "filled {total} jobs");
    let app = router(store.clone() as Arc<dyn Store>, WebOptions::new());
    let mut figures = Vec::new();
    for (name, path) in PAGES {
        let median = median_time(&app, path).await?;
        figures.push(Figure::new(
            format!("get_{name}_{}_rows", sizes.count_large),
            median.as_secs_f64() * 1e3,
            "ms",
        ));
    }
    Ok(figures)
}

async fn median_time(app: &axum::Router, path: &str) -> Result<Duration> {
    let mut times = Vec::with_capacity(SAMPLES);
    for i in 0..WARMUP + SAMPLES {
        let started = Instant::now();
        let response = app
            .clone()
            .oneshot(Request::get(path).body(Body::empty())?)
            .await?;
        ensure!(
            response.status() == StatusCode::OK,
            "GET {path}: {}",
            response.status()
        );
        let body = response.into_body().collect().await?.to_bytes();
        let elapsed = started.elapsed();
        ensure!(!body.is_empty(), "GET {path}: empty page");
        if i >= WARMUP {
            times.push(elapsed);
        }
    }
    times.sort_unstable();
    Ok(times[times.len() / 2])
}
