//! `duraq jobs list|show|wait|retry|cancel|delete|run-now|prune`: operator views and actions
//! (`list` pages in [`crate::job_list`]; several ids or a filter go to [`crate::bulk`]). Tables by default, one JSON object with `--json`: `{"jobs":[…],"total",
//! "nextAfter"}`, `{"job":{…}}` (every field of the row; `jobs show` adds
//! `"progress"`: what the job said, `null` if nothing, see [`progress_text`]) and
//! `{"deleted":N,"batches":M}` (`prune --dry-run`: `{"wouldDelete":N,"dryRun":true}`,
//! counted by `PruneRequest::count_prunable`, a read that deletes nothing).
//!
//! `jobs wait` prints the job once it is finished (`{"job":{…}}`) and exits 0
//! when it completed, 1 with `job-failed` (failed or orphaned) or
//! `job-cancelled` when it did not, and 1 with `wait-timeout`, printing the
//! job as it is, when `--timeout` runs out first. An ephemeral job deleted
//! as it completed prints `{"job":null,"deleted":true}` and exits 0.
//!
//! Outcomes: `jobs cancel` of a job that is already cancelled is an answer (the
//! job, exit 0: cancelling is idempotent); of a finished job, or a missing id, an
//! error (exit 1). `jobs retry` of a job that is not terminal is an error.

use anyhow::Result;
use clap::{Args, Subcommand};
use duraq_core::inspect::{
    resolve_job, BulkAction, JobFilter, JobProgress, PruneRequest, SignalRecord, StepRecord, Waited,
};
use duraq_core::{ErrorCode, Job, JobStatus};
use serde_json::json;

use crate::bulk;
use crate::db::{closing, Database};
use crate::display::{count, relative, terminal_safe};
use crate::error::CliError;
use crate::job_view::job_detail;
use crate::output::{print_json, table, to_json};
use crate::parse::duration_ms;

#[derive(Debug, Subcommand)]
pub enum JobsCommand {
    /// Jobs, newest first.
    #[command(after_long_help = crate::examples::JOBS_LIST)]
    List {
        #[command(flatten)]
        filter: crate::search::FilterFlags,
        /// At most this many jobs.
        #[arg(long, value_name = "N", default_value_t = 50)]
        limit: usize,
        /// Continue after this job id (the last of the previous page): pages stay
        /// stable while jobs are added or change.
        #[arg(long, value_name = "ID")]
        after: Option<String>,
    },
    /// Every field of one job.
    #[command(after_long_help = crate::examples::JOBS_SHOW)]
    Show {
        /// The job id, as printed by `enqueue` or `jobs list`.
        id: String,
        /// Print the job again whenever it changes, and exit once it is
        /// finished (completed, failed, cancelled or orphaned).
        #[arg(long)]
        watch: bool,
    },
    /// Wait until a job is finished; exit 0 if it completed, 1 otherwise.
    #[command(after_long_help = crate::examples::JOBS_WAIT)]
    Wait {
        /// The job id, as printed by `enqueue` or `jobs list`.
        id: String,
        /// Give up after this long (`30s`, `5m`) with `wait-timeout`.
        #[arg(long, value_name = "DURATION", default_value = "30s")]
        timeout: String,
    },
    /// Deliver a signal to a job (what its handler's wait_for_signal reads).
    #[command(after_long_help = crate::examples::JOBS_SIGNAL)]
    Signal {
        /// The job id, as printed by `enqueue` or `jobs list`.
        id: String,
        /// The signal's name.
        name: String,
        /// The payload, as JSON (default `null`).
        #[arg(long, value_name = "JSON")]
        payload: Option<String>,
    },
    /// Re-queue finished jobs (operator retry): due now, attempts reset. One
    /// id, several, or a filter.
    #[command(after_long_help = crate::examples::JOBS_RETRY)]
    Retry(crate::bulk::BulkArgs),
    /// Cancel queued or running jobs (a running one is stopped: its worker is
    /// told and its handler ends). One id, several, or a filter.
    #[command(after_long_help = crate::examples::JOBS_CANCEL)]
    Cancel(crate::bulk::BulkArgs),
    /// Delete finished jobs (completed, failed, cancelled, orphaned). One id,
    /// several, or a filter.
    #[command(after_long_help = crate::examples::JOBS_DELETE)]
    Delete(crate::bulk::BulkArgs),
    /// Make queued jobs due later due now (only their scheduled time moves;
    /// idle workers are woken). One id, several, or a filter.
    #[command(after_long_help = crate::examples::JOBS_RUN_NOW)]
    RunNow(crate::bulk::BulkArgs),
    /// Delete old terminal jobs.
    #[command(after_long_help = crate::examples::JOBS_PRUNE)]
    Prune(PruneArgs),
}

#[derive(Debug, Args)]
pub struct PruneArgs {
    #[command(flatten)]
    pub ages: PruneAges,
    /// Print how many jobs would be deleted and delete nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// The ages of `jobs prune`: at least one is required.
#[derive(Debug, Args)]
#[group(required = true, multiple = true)]
pub struct PruneAges {
    /// Delete completed jobs finished longer ago than this (`7d`).
    #[arg(long, value_name = "DURATION")]
    pub completed_older_than: Option<String>,
    /// Delete failed and orphaned jobs older than this.
    #[arg(long, value_name = "DURATION")]
    pub failed_older_than: Option<String>,
    /// Delete cancelled jobs older than this.
    #[arg(long, value_name = "DURATION")]
    pub cancelled_older_than: Option<String>,
}

pub async fn run(db: &Database, cmd: JobsCommand, json: bool) -> Result<()> {
    match cmd {
        JobsCommand::List {
            filter,
            limit,
            after,
        } => {
            if limit == 0 {
                return Err(CliError::new("invalid-limit", "--limit must be at least 1").into());
            }
            let filter = JobFilter {
                limit: Some(limit),
                ..filter.filter(crate::parse::now_ms())?
            };
            crate::job_list::run(db, filter, after, json).await?;
        }
        JobsCommand::Show { id, watch } => {
            let store = db.open_existing(false).await?;
            closing(&store, async {
                let id = resolve_job(store.as_ref(), &id).await?.id;
                let read = || async {
                    let job = store.get_job(&id).await?;
                    let job = job.ok_or_else(|| duraq_core::Error::job_not_found(&id))?;
                    let progress = store.job_progress(&job.id).await?;
                    let steps = store.job_steps(&job.id).await?;
                    let signals = store.job_signals(&job.id).await?;
                    Ok(Shown {
                        job,
                        progress,
                        steps,
                        signals,
                    })
                };
                let to_json = |shown: &Shown| {
                    json!({
                        "job": to_json(&shown.job),
                        "progress": to_json(&shown.progress),
                        "steps": to_json(&shown.steps),
                        "signals": to_json(&shown.signals),
                    })
                };
                let to_text = |shown: &Shown| {
                    let now = crate::parse::now_ms();
                    let mut out = progress_text(&shown.job, shown.progress.as_ref());
                    out.push_str(&steps_detail(&shown.steps, now));
                    out.push_str(&signals_detail(&shown.signals, now));
                    out.push_str(&signals_detail(&shown.signals, now));
                    out
                };
                if watch {
                    let done = |shown: &Shown| shown.job.status.is_terminal();
                    crate::watch::until_done(read, to_json, to_text, done, json).await
                } else {
                    let shown = read().await?;
                    if json {
                        print_json(&to_json(&shown));
                    } else {
                        print!("{}", to_text(&shown));
                    }
                    Ok(())
                }
            })
            .await?;
        }
        JobsCommand::Wait { id, timeout } => wait(db, &id, &timeout, json).await?,
        JobsCommand::Signal { id, name, payload } => {
            signal(db, &id, &name, payload.as_deref(), json).await?;
        }
        JobsCommand::Retry(args) => {
            let Some(id) = args.single().map(str::to_owned) else {
                return bulk::run(db, BulkAction::Retry, args, json).await;
            };
            let store = db.open_existing(false).await?;
            let job = closing(&store, async {
                let id = resolve_job(store.as_ref(), &id).await?.id;
                Ok(store.retry_job(&id).await?)
            })
            .await?;
            show(&job, json)
        }
        JobsCommand::Cancel(args) => {
            let Some(id) = args.single().map(str::to_owned) else {
                return bulk::run(db, BulkAction::Cancel, args, json).await;
            };
            // A running job is cancelled too: its worker is told and stops it.
            let store = db.open_existing(false).await?;
            let job = closing(&store, async {
                let id = resolve_job(store.as_ref(), &id).await?.id;
                match store.cancel_job(&id).await {
                    Ok(job) => Ok(job),
                    // Already cancelled: the request's goal holds; answer with the job.
                    Err(e) if e.code() == ErrorCode::InvalidJobState => {
                        match store.get_job(&id).await? {
                            Some(job) if job.status == JobStatus::Cancelled => Ok(job),
                            _ => Err(e.into()),
                        }
                    }
                    Err(e) => Err(e.into()),
                }
            })
            .await?;
            show(&job, json);
        }
        JobsCommand::Delete(args) => bulk::run(db, BulkAction::Delete, args, json).await?,
        JobsCommand::RunNow(args) => bulk::run(db, BulkAction::RunNow, args, json).await?,
        JobsCommand::Prune(p) => prune(db, p, json).await?,
    }
    Ok(())
}

/// `jobs wait`: see the module docs for what it prints and its exit codes.
/// `jobs signal`: prints `{"jobId", "signal", "delivered": true}` (with
/// `replayed` and `woke`).
async fn signal(
    db: &Database,
    id: &str,
    name: &str,
    payload: Option<&str>,
    json: bool,
) -> Result<()> {
    let payload: serde_json::Value = match payload {
        None => serde_json::Value::Null,
        Some(text) => serde_json::from_str(text)
            .map_err(|e| CliError::new("invalid-signal", format!("--payload is not JSON: {e}")))?,
    };
    duraq_core::driver::rules::check_signal(name, &payload)?;
    let store = db.open_existing(false).await?;
    let (id, done) = closing(&store, async {
        let id = resolve_job(store.as_ref(), id).await?.id;
        let done = store.signal(&id, name, payload).await?;
        Ok((id, done))
    })
    .await?;
    if json {
        print_json(&json!({
            "jobId": id,
            "signal": name,
            "delivered": true,
            "replayed": done.replayed,
            "woke": done.woke,
        }));
    } else if done.replayed {
        println!(
            "signal {} was already delivered to job {id}",
            terminal_safe(name)
        );
    } else if done.woke {
        println!(
            "delivered signal {} to job {id}, which was waiting: it is queued",
            terminal_safe(name)
        );
    } else {
        println!("delivered signal {} to job {id}", terminal_safe(name));
    }
    Ok(())
}

async fn wait(db: &Database, id: &str, timeout: &str, json: bool) -> Result<()> {
    let timeout = duration_ms("--timeout", timeout)?;
    let timeout = std::time::Duration::from_millis(timeout.max(0) as u64);
    let store = db.open_existing(false).await?;
    let waited = closing(&store, async {
        let id = resolve_job(store.as_ref(), id).await?.id;
        Ok(store.wait_for(&id, timeout).await?)
    })
    .await?;
    let job = match waited {
        Waited::Deleted => {
            if json {
                print_json(&json!({ "job": null, "deleted": true }));
            } else {
                println!("completed and deleted (keepCompleted = false)");
            }
            return Ok(());
        }
        Waited::Finished(job) | Waited::TimedOut(job) => job,
    };
    show(&job, json);
    let failure = match job.status {
        JobStatus::Completed => return Ok(()),
        JobStatus::Failed | JobStatus::Orphaned => ("job-failed", "did not complete"),
        JobStatus::Cancelled => ("job-cancelled", "was cancelled"),
        status => {
            let waited = humantime_ms(timeout);
            let message = format!("job {} is still {} after {waited}", job.id, status.as_str());
            return Err(CliError::new("wait-timeout", message).into());
        }
    };
    let (code, what) = failure;
    let message = format!("job {} {what}: {}", job.id, job.status.as_str());
    Err(CliError::new(code, message).into())
}

/// A duration as `--timeout` takes it.
fn humantime_ms(d: std::time::Duration) -> String {
    match d.as_millis() {
        ms if ms % 1000 == 0 => format!("{}s", ms / 1000),
        ms => format!("{ms}ms"),
    }
}

fn show(job: &Job, json: bool) {
    if json {
        print_json(&json!({ "job": to_json(job) }));
    } else {
        print!("{}", job_detail(job, crate::parse::now_ms()));
    }
}

/// `jobs show` for people: the job, then its progress and newest log lines
/// (`--json`: `{"job":{…},"progress":{"fraction","message","updatedAtMs",
/// "linesTotal","logs":[{"seq","atMs","attempt","line"}]}}`, `null` when it
/// said nothing).
/// What `jobs show` reads of a job.
struct Shown {
    job: Job,
    progress: Option<JobProgress>,
    steps: Vec<StepRecord>,
    signals: Vec<SignalRecord>,
}

/// The text of the signals a job received (nothing when none).
fn signals_detail(signals: &[SignalRecord], now_ms: i64) -> String {
    if signals.is_empty() {
        return String::new();
    }
    let rows: Vec<Vec<String>> = (signals.iter())
        .map(|s| {
            let payload = s.payload.to_string();
            vec![
                terminal_safe(&s.name).into_owned(),
                relative(s.at_ms, now_ms),
                format!("{} bytes of JSON", payload.len()),
            ]
        })
        .collect();
    let mut out = format!("\nSignals received ({}):\n", signals.len());
    out.push_str(&table(&["NAME", "WHEN", "PAYLOAD"], &rows));
    out
}

/// The text of a job's durable steps (nothing when it has none): a table of
/// name, attempt, when and what it stored; a sleep says until when.
fn steps_detail(steps: &[StepRecord], now_ms: i64) -> String {
    if steps.is_empty() {
        return String::new();
    }
    let rows: Vec<Vec<String>> = steps
        .iter()
        .map(|s| {
            let stored = match s.output["untilMs"].as_i64() {
                Some(until) if s.name.starts_with("duraq.sleep.") => {
                    format!("sleeps until {}", relative(until, now_ms))
                }
                _ => format!("{} bytes of JSON", s.output.to_string().len()),
            };
            vec![
                terminal_safe(&s.name).into_owned(),
                s.attempt.to_string(),
                relative(s.at_ms, now_ms),
                stored,
            ]
        })
        .collect();
    let mut out = format!("\nSteps ({}):\n", steps.len());
    out.push_str(&table(&["NAME", "ATTEMPT", "WHEN", "STORED"], &rows));
    out
}

fn progress_text(job: &Job, progress: Option<&JobProgress>) -> String {
    let now = crate::parse::now_ms();
    let mut out = job_detail(job, now);
    if let Some(p) = progress {
        out.push_str(&progress_detail(p, now));
    }
    out
}

/// The text of a job's progress: one line for the fraction and message, then
/// the kept log lines, oldest first, in a table.
fn progress_detail(p: &JobProgress, now_ms: i64) -> String {
    let fraction = p
        .fraction
        .map_or_else(|| "-".to_owned(), |f| format!("{:.0}%", f * 100.0));
    let mut out = format!(
        "\nProgress: {} {} (updated {})\n",
        fraction,
        terminal_safe(p.message.as_deref().unwrap_or("")),
        relative(p.updated_at_ms, now_ms)
    );
    if !p.logs.is_empty() {
        let rows: Vec<Vec<String>> = p
            .logs
            .iter()
            .map(|l| {
                vec![
                    l.seq.to_string(),
                    l.attempt.to_string(),
                    relative(l.at_ms, now_ms),
                    l.line.clone(),
                ]
            })
            .collect();
        out.push_str(&format!(
            "\nLog (the newest {} of {}, oldest first):\n",
            p.logs.len(),
            count(p.lines_total, "line")
        ));
        out.push_str(&table(&["#", "ATTEMPT", "WHEN", "LINE"], &rows));
    }
    out
}

async fn prune(db: &Database, p: PruneArgs, json: bool) -> Result<()> {
    let age = |flag: &str, v: &Option<String>| -> Result<Option<std::time::Duration>, CliError> {
        v.as_deref()
            .map(|d| duration_ms(flag, d).map(|ms| std::time::Duration::from_millis(ms as u64)))
            .transpose()
    };
    let req = PruneRequest {
        completed_older_than: age("--completed-older-than", &p.ages.completed_older_than)?,
        failed_older_than: age("--failed-older-than", &p.ages.failed_older_than)?,
        cancelled_older_than: age("--cancelled-older-than", &p.ages.cancelled_older_than)?,
        ..PruneRequest::default()
    };
    let store = db.open_existing(false).await?;
    if p.dry_run {
        // A read, never a delete: what `prune` would remove as of now.
        let now = crate::parse::now_ms();
        let matched = closing(&store, async {
            Ok(req.count_prunable(&*store, now).await?)
        })
        .await?;
        if json {
            print_json(&prune_dry_run_json(matched));
        } else {
            println!(
                "would delete {} (dry run: nothing was deleted)",
                count(matched as i64, "job")
            );
        }
        return Ok(());
    }
    let report = closing(&store, async { Ok(store.prune(&req).await?) }).await?;
    if json {
        print_json(&to_json(&report));
    } else {
        println!(
            "deleted {} in {}",
            count(report.deleted as i64, "job"),
            count(report.batches as i64, "batch")
        );
    }
    Ok(())
}

/// `{"wouldDelete":N,"dryRun":true}`: the answer of `jobs prune --dry-run`.
fn prune_dry_run_json(would_delete: u64) -> serde_json::Value {
    json!({ "wouldDelete": would_delete, "dryRun": true })
}
