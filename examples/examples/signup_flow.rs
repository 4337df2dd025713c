//! A signup that fans out to three jobs and fans in to a summary reading their
//! outputs (`docs/workflows.md`): `create_account` first; `send_welcome`,
//! `provision_storage` and `score_risk` after it, in parallel; `signup_summary`
//! after all three, under the `run` policy so that it runs (and says so) even
//! when one of them fails.
//!
//! Run: `cargo run -p duraq-examples --example signup_flow`

use std::sync::Arc;
use std::time::Duration;

use duraq_core::prelude::*;
use duraq_core::worker::WorkerEvent;
use duraq_core::{
    DependencyFailure, EnqueueOptions, JobError, JobResult, JobStatus, NewJob, Registry, Worker,
};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use serde_json::{json, Value};
use tokio::sync::broadcast::error::RecvError;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(
        dir.path().join("jobs.db"),
        SqliteOptions::default(),
    )?);

    // The graph, enqueued up front: every job exists before any runs.
    let user = json!({"email": "ada@example.com"});
    let account = enqueue(
        &store,
        "create_account",
        user.clone(),
        EnqueueOptions::new(),
    )
    .await?;
    let mut fan_out = Vec::new();
    for name in ["send_welcome", "provision_storage", "score_risk"] {
        fan_out.push(
            enqueue(
                &store,
                name,
                user.clone(),
                EnqueueOptions::new().after(&account),
            )
            .await?,
        );
    }
    let summary_after = fan_out
        .iter()
        .fold(EnqueueOptions::new(), |opts, id| opts.after(id))
        .on_dependency_failure(DependencyFailure::Run);
    let summary = enqueue(&store, "signup_summary", user, summary_after).await?;
    let counts = store.count_snapshot().await?.counts;
    println!(
        "enqueued 5 jobs: {} queued, {} pending",
        counts.queued, counts.pending
    );

    let registry = Registry::new()
        .register_fn("create_account", |_ctx, args: Value| async move {
            Ok::<_, JobError>(JobResult::Output(
                json!({"userId": 42, "email": args["email"]}),
            ))
        })?
        .register_fn("send_welcome", |_ctx, _args| async move {
            Ok::<_, JobError>(JobResult::Output(json!({"messageId": "msg-1"})))
        })?
        .register_fn("provision_storage", |_ctx, _args| async move {
            Ok::<_, JobError>(JobResult::Output(
                json!({"bucket": "users/42", "quotaGb": 5}),
            ))
        })?
        .register_fn("score_risk", |_ctx, _args| async move {
            Err::<JobResult, _>(JobError::new("risk service unavailable").discard())
        })?
        .register_fn("signup_summary", |ctx, _args| async move {
            let mut lines = Vec::new();
            for dep in ctx.dependencies().await.map_err(JobError::new)? {
                let what = match (&dep.status, &dep.output) {
                    (JobStatus::Completed, Some(output)) => format!("completed {output}"),
                    (status, _) => format!("{status}: {}", dep.last_error.unwrap_or_default()),
                };
                lines.push(format!("{} {what}", dep.job_name));
            }
            Ok::<_, JobError>(JobResult::Output(json!({ "steps": lines })))
        })?;
    let worker = Worker::builder(store.clone(), registry)
        .concurrency(4)
        .build()?;
    let mut events = worker.subscribe(); // before spawning: see every event
    let handle = worker.spawn();
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match events.recv().await {
                Ok(WorkerEvent::Finished(f)) if f.job_id == summary => return Ok(()),
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(closed) => return Err(closed),
            }
        }
    })
    .await??;
    handle.shutdown_and_join().await?;
    let done = store.get_job(&summary).await?.expect("the summary exists");

    println!("signup_summary {}, it read:", done.status);
    for line in done
        .output
        .as_ref()
        .and_then(|o| o["steps"].as_array())
        .into_iter()
        .flatten()
    {
        println!("  {}", line.as_str().unwrap_or_default());
    }
    let counts = store.count_snapshot().await?.counts;
    println!(
        "store: {} completed, {} failed, {} pending",
        counts.completed, counts.failed, counts.pending
    );
    Ok(())
}

async fn enqueue(
    store: &Arc<dyn Store>,
    name: &str,
    args: Value,
    opts: EnqueueOptions,
) -> Result<String, duraq_core::Error> {
    let outcome = store.enqueue(NewJob::new(name, args, opts)?).await?;
    Ok(outcome.job_id().to_owned())
}
