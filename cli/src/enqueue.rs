//! `duraq enqueue`: one job, validated entirely before the database is opened, so
//! a rejected invocation writes nothing. Prints `{"jobId":…,"replayed":…,
//! "deduplicated":…}`: a replay of an idempotent request or a deduplicated
//! enqueue answers with the existing job and says so. `--after ID` makes the
//! job wait for another (`docs/workflows.md`); an unknown ID is
//! `dependency-not-found` and writes nothing.

use anyhow::Result;
use clap::Args;
use duraq_core::{After, DependencyFailure, EnqueueOutcome, NewJob};
use serde_json::json;
use tracing::Instrument;

use crate::db::Database;
use crate::options::{job_options, JobArgs};
use crate::output::print_json;
use crate::parse::flag_error;

#[derive(Debug, Args)]
pub struct EnqueueArgs {
    /// The job name: which handler runs it, e.g. `duraq.noop`.
    pub name: String,
    #[command(flatten)]
    pub job: JobArgs,
    /// Return an identical queued job instead of adding a second one.
    #[arg(long)]
    pub dedupe_while_queued: bool,
    /// Durable idempotency key: a replay returns the original job id.
    #[arg(long, value_name = "KEY")]
    pub idempotency_key: Option<String>,
    /// Wait for job ID (repeatable): the job stays pending until ID has
    /// finished, then is due at its own time or at once, whichever is later.
    #[arg(long, value_name = "ID")]
    pub after: Vec<String>,
    /// What happens when a job of --after does not complete: `cancel` (the
    /// default: this job is cancelled too) or `run` (it runs anyway).
    #[arg(long, value_name = "POLICY")]
    pub on_dependency_failure: Option<String>,
}

pub async fn run(db: &Database, a: EnqueueArgs) -> Result<()> {
    let (args, mut opts) = job_options(&a.job)?;
    crate::builtin::checked_args(&a.name, &args)?;
    opts.deduplicate_while_queued = a.dedupe_while_queued;
    opts.idempotency_key = a.idempotency_key;
    opts.after = a.after.into_iter().map(After::Id).collect();
    opts.on_dependency_failure = a
        .on_dependency_failure
        .as_deref()
        .map(str::parse::<DependencyFailure>)
        .transpose()
        .map_err(flag_error)?;
    // The producer span a CLI enqueue starts its trace with: the job stores its
    // context, so the attempts' spans link to it (`docs/tracing.md`).
    let span = tracing::info_span!(
        "enqueue",
        otel.name = %format!("enqueue {}", a.name),
        otel.kind = "producer",
        messaging.system = "duraq",
        messaging.operation.type = "send",
        duraq.job.name = %a.name,
        duraq.job.id = tracing::field::Empty,
    );
    let job = span
        .in_scope(|| NewJob::new(&a.name, args, opts))
        .map_err(flag_error)?;
    span.record("duraq.job.id", job.id());
    let store = db.open().await?;
    let outcome = crate::db::closing(&store, async { Ok(store.enqueue(job).await?) })
        .instrument(span)
        .await?;
    print_json(&json!({
        "jobId": outcome.job_id(),
        "replayed": matches!(outcome, EnqueueOutcome::Replayed(_)),
        "deduplicated": matches!(outcome, EnqueueOutcome::Deduplicated(_)),
    }));
    Ok(())
}
