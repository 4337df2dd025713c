//! `duraq worker`: runs the built-in handlers against the database until SIGINT
//! or SIGTERM, then stops claiming, lets running jobs finish up to the drain
//! deadline (`docs/jobs.md`) and exits 0. Claiming, fencing, heartbeats and recovery of
//! dead workers' leases are the core runtime's; this module only maps flags onto
//! its builder and reports the totals. A job cancelled while it runs is
//! stopped: its handler is told, and aborted after `--cancel-grace`.
//! `--schedule FILE` adds the periodic jobs a file declares (`schedule_file.rs`);
//! the flags and their parsers are in `worker_flags.rs`.

use anyhow::Result;
use duraq_core::{QueueConfig, Registry, Worker};
use serde_json::json;

use crate::builtin::{register_builtins, Builtins};
use crate::db::Database;
use crate::display::{count, thousands};
use crate::error::CliError;
use crate::output::{print_json, to_json};
use crate::parse::duration_ms;
use crate::signals::Signals;
use crate::worker_flags::{
    fairness_weight, prefetch_policy, priority_aging, queue_cap, WorkerArgs,
};

/// Resolves on the first signal (the worker then drains); a second signal during
/// the drain exits at once, as operators expect from a second Ctrl-C. Jobs still
/// running then are recovered from the stale lease like any crashed worker's.
async fn first_signal_then_force(mut signals: Signals, json: bool) {
    signals.next().await;
    eprintln!("duraq worker: draining running jobs; signal again to exit at once");
    tokio::spawn(async move {
        signals.next().await;
        let err = CliError::new(
            "drain-interrupted",
            "second signal: exiting without waiting for running jobs",
        );
        crate::output::print_error(&err.into(), json);
        std::process::exit(1);
    });
}

/// The most slots a worker may have (the runtime's bound).
const MAX_CONCURRENCY: usize = (u32::MAX >> 4) as usize;

pub async fn run(db: &Database, a: WorkerArgs, json: bool) -> Result<()> {
    let stale_after = duration_ms("--stale-after", &a.stale_after)?;
    let drain_timeout = duration_ms("--drain-timeout", &a.drain_timeout)?;
    let cancel_grace = duration_ms("--cancel-grace", &a.cancel_grace)?;
    let caps = a
        .queue_caps
        .iter()
        .map(|c| queue_cap(c))
        .collect::<Result<Vec<_>, _>>()?;
    let aging = (a.priority_aging.iter())
        .map(|raw| priority_aging(raw))
        .collect::<Result<Vec<_>, _>>()?;
    let weights = (a.fairness_weights.iter())
        .map(|raw| fairness_weight(raw))
        .collect::<Result<Vec<_>, _>>()?;
    // Each message names the one flag that is wrong.
    let bad_config = |message: &str| CliError::new("invalid-worker-config", message);
    if a.concurrency == 0 || a.concurrency > MAX_CONCURRENCY {
        return Err(bad_config("--concurrency must be from 1 to 268,435,455").into());
    }
    let prefetch = prefetch_policy(&a.prefetch)?;
    if ms(stale_after) < duraq_core::worker::MIN_STALE_AFTER {
        return Err(bad_config("--stale-after must be at least 1s").into());
    }
    // Every entry names a queue: `--queues mail,` or `--queues ''` is a
    // mistake, not "every queue" or `default`.
    let queues: Vec<String> = a
        .queues
        .iter()
        .map(|q| crate::parse::queue_name("--queues", q).map(String::from))
        .collect::<Result<_, _>>()?;

    let signals = Signals::new()?;
    // Bind before opening the store: a refused address leaves nothing behind.
    let metrics_listener = match &a.metrics_listen {
        Some(listen) => {
            let token = crate::web::token();
            Some((
                crate::web::bind("--metrics-listen", listen, token.as_deref()).await?,
                token,
            ))
        }
        None => None,
    };
    let mut registry = Registry::new();
    register_builtins(&mut registry, &Builtins::new())?;
    // A bad schedule file stops the worker before the database is opened.
    let periodic = crate::schedule_file::load(&a.schedules, &registry).map_err(CliError::from)?;
    let store = db.open_listening().await?;
    let mut builder = Worker::builder(store.clone(), registry)
        .concurrency(a.concurrency)
        .prefetch_policy(prefetch)
        .stale_after(ms(stale_after))
        .drain_timeout(ms(drain_timeout))
        .cancel_grace(ms(cancel_grace));
    if !queues.is_empty() {
        builder = builder.queues(queues.clone());
    }
    for (name, cap) in &caps {
        builder = builder.queue(
            name,
            QueueConfig {
                max_concurrent: Some(*cap),
                priority: 0,
            },
        );
    }
    for (name, aging) in aging {
        builder = builder.priority_aging(name, aging);
    }
    for (key, turns) in weights {
        builder = builder.fairness_weight(key, turns);
    }
    for job in periodic {
        announce(&job, &queues);
        builder = builder.periodic(job);
    }
    let worker = builder.build()?;
    let worker_id = worker.id().to_string();
    if let Some((listener, token)) = metrics_listener {
        let metrics = duraq_web::WorkerMetrics::new(a.concurrency);
        metrics.follow(worker.subscribe());
        let app = duraq_web::metrics_router(Some(store.clone()), Some(metrics), token);
        eprintln!(
            "duraq worker: metrics on http://{}/metrics",
            listener.local_addr()?
        );
        let limits = duraq_web::ServeLimits::default();
        tokio::spawn(duraq_web::serve(
            listener,
            app,
            limits,
            std::future::pending(),
        ));
    }
    let report = worker.run(first_signal_then_force(signals, json)).await;
    // The last reports' announcements leave before the process exits.
    crate::db::close(&store).await;
    let report = report?;
    if json {
        print_json(&json!({ "workerId": worker_id, "report": to_json(&report) }));
    } else {
        println!("duraq worker {worker_id} stopped: {}", stop_line(&report));
    }
    Ok(())
}

/// Logs a scheduled job at start, and warns when this worker's `--queues` leave
/// out the queue its ticks go to (another worker must serve it).
fn announce(job: &duraq_core::PeriodicJob, queues: &[String]) {
    let queue = job
        .tick_job(0)
        .map(|j| j.queue().as_str().to_owned())
        .unwrap_or_default();
    tracing::info!(periodic = job.name(), schedule = %job.schedule(), job = job.job_name(), queue, "scheduled");
    if !queues.is_empty() && !queues.contains(&queue) {
        tracing::warn!(
            periodic = job.name(),
            queue,
            "this worker does not serve the queue the ticks go to (--queues)"
        );
    }
}

/// The totals in words: every claimed job is accounted for, and a failed
/// attempt that will be retried is not called a failed job.
fn stop_line(r: &duraq_core::worker::WorkerReport) -> String {
    let mut parts = vec![
        count(r.claimed as i64, "job") + " claimed",
        format!("{} completed", thousands(r.completed as i64)),
    ];
    let mut add = |n: u64, what: &str| {
        if n > 0 {
            parts.push(format!("{} {what}", thousands(n as i64)));
        }
    };
    add(r.retried, "failed and will be retried");
    add(r.failed, "failed for good");
    add(r.rescheduled, "rescheduled");
    add(
        r.returned_to_queue,
        "returned to the queue at the drain deadline",
    );
    add(
        r.returned_unstarted,
        "claimed ahead and given back unstarted (no attempt used)",
    );
    add(
        r.lost_leases,
        "finished after their lease was recovered (report ignored)",
    );
    add(r.cancelled, "cancelled while running (stopped)");
    add(
        r.cancel_aborted,
        "of them aborted after the cancel grace period",
    );
    add(r.unreported, "could not be reported");
    add(r.recovered, "recovered from dead workers");
    parts.join(", ")
}

fn ms(ms: i64) -> std::time::Duration {
    std::time::Duration::from_millis(ms as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stop_line_tells_retries_from_failures() {
        let report = duraq_core::worker::WorkerReport {
            claimed: 5,
            completed: 2,
            retried: 2,
            failed: 1,
            ..Default::default()
        };
        assert_eq!(
            stop_line(&report),
            "5 jobs claimed, 2 completed, 2 failed and will be retried, 1 failed for good"
        );
        assert_eq!(
            stop_line(&Default::default()),
            "0 jobs claimed, 0 completed"
        );
    }
}
