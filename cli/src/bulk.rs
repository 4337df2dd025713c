//! `duraq jobs retry|cancel|delete|run-now` with several ids or a filter: the
//! bulk actions ([`duraq_core::inspect::run_bulk`]). One id and no filter keeps the
//! single-job answer of `retry` and `cancel` (`{"job":{…}}`, and an error when
//! the job's status forbids the action); anything else answers
//! `{"action","dryRun","matched","changed","skipped","batches","sample"}`,
//! where `skipped` counts the jobs the action does not change (for run-now,
//! also queued jobs already due). A real run
//! works in batches of `--batch-size` jobs, one transaction each, and shows
//! its progress on a terminal. A run stopped by an error says how far it got
//! ([`Interrupted`]): the batches before the error stay committed, and running
//! the same command again is safe (done jobs are skipped).

use std::io::{IsTerminal, Write};

use anyhow::Result;
use clap::Args;
use duraq_core::inspect::{
    resolve_job, run_bulk, BulkAction, BulkReport, BulkRequest, BulkSelection,
};
use duraq_core::{Error, ErrorCode};
use serde_json::json;

use crate::db::{closing, Database};
use crate::display::thousands;
use crate::error::{CliError, Interrupted};
use crate::output::print_json;
use crate::parse::now_ms;
use crate::search::{FilterFlags, FILTER_IDS};

/// Which jobs: ids (or unique id prefixes), or a filter (at least one of them).
#[derive(Debug, Args)]
pub struct BulkTarget {
    /// Job ids, or unique prefixes of them (one or more).
    #[arg(
        value_name = "ID",
        conflicts_with_all = FILTER_IDS,
        required_unless_present_any = FILTER_IDS
    )]
    pub ids: Vec<String>,
    #[command(flatten)]
    pub filter: FilterFlags,
}

/// A bulk action's flags.
#[derive(Debug, Args)]
pub struct BulkArgs {
    #[command(flatten)]
    pub target: BulkTarget,
    /// Print how many jobs match and a few of them; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Jobs per transaction.
    #[arg(long, value_name = "N", default_value_t = BulkRequest::DEFAULT_BATCH)]
    pub batch_size: usize,
}

impl BulkArgs {
    /// The one id of a plain single-job action (no filter, no dry run).
    pub fn single(&self) -> Option<&str> {
        match self.target.ids.as_slice() {
            [id] if !self.dry_run => Some(id),
            _ => None,
        }
    }
}

/// Runs `action` over the selection and prints the answer.
pub async fn run(db: &Database, action: BulkAction, args: BulkArgs, json: bool) -> Result<()> {
    if args.batch_size == 0 {
        return Err(CliError::new("invalid-batch-size", "--batch-size must be at least 1").into());
    }
    if args.target.ids.is_empty() {
        // Bad flags are refused before any database is opened.
        args.target.filter.filter(now_ms())?;
    }
    let store = db.open_existing(false).await?;
    let live = !json && std::io::stderr().is_terminal();
    let (dry_run, batch_size) = (args.dry_run, args.batch_size);
    let report = closing(&store, async {
        let selection = selection(store.as_ref(), args.target).await?;
        let single = matches!(&selection, BulkSelection::Ids(ids) if ids.len() == 1);
        let req = BulkRequest {
            dry_run,
            batch_size,
            ..BulkRequest::new(action, selection)
        };
        if let (true, false, BulkSelection::Ids(ids)) = (single, req.dry_run, &req.selection) {
            refuse_forbidden(store.as_ref(), action, &ids[0]).await?;
        }
        let mut last = BulkReport::default();
        let mut progress = |r: &BulkReport| {
            last.clone_from(r);
            if live {
                let mut err = std::io::stderr();
                let _ = write!(
                    err,
                    "\r{}: {} changed, {} skipped of {} matched",
                    action.as_str(),
                    thousands(r.changed as i64),
                    thousands(r.skipped as i64),
                    thousands(r.matched as i64)
                );
                let _ = err.flush();
            }
        };
        let outcome = run_bulk(store.as_ref(), &req, &mut progress).await;
        Ok(outcome.map_err(|error| Interrupted {
            progress: last,
            error,
        })?)
    })
    .await?;
    if live && report.matched > 0 && !dry_run {
        eprintln!();
    }
    print(action, dry_run, &report, json);
    Ok(())
}

/// A single named job whose status forbids the action is an error, as for
/// `jobs retry ID` (`invalid-job-state`); nothing is changed.
async fn refuse_forbidden(
    store: &dyn duraq_core::Store,
    action: BulkAction,
    id: &str,
) -> Result<()> {
    let job = store
        .get_job(id)
        .await?
        .ok_or_else(|| Error::job_not_found(id))?;
    if action.applies_to(job.status) {
        return Ok(());
    }
    let allowed = match action {
        BulkAction::Cancel => "queued and running jobs",
        BulkAction::Retry | BulkAction::Delete => "finished jobs",
        BulkAction::RunNow => "queued jobs",
    };
    Err(Error::invalid(
        ErrorCode::InvalidJobState,
        format!(
            "job {id} is {}; only {allowed} can be {}",
            job.status,
            past(action)
        ),
    )
    .into())
}

async fn selection(store: &dyn duraq_core::Store, target: BulkTarget) -> Result<BulkSelection> {
    if target.ids.is_empty() {
        return Ok(BulkSelection::Matching(target.filter.filter(now_ms())?));
    }
    let mut ids = Vec::with_capacity(target.ids.len());
    for input in &target.ids {
        ids.push(resolve_job(store, input).await?.id);
    }
    Ok(BulkSelection::Ids(ids))
}

fn past(action: BulkAction) -> &'static str {
    match action {
        BulkAction::Retry => "retried",
        BulkAction::Cancel => "cancelled",
        BulkAction::Delete => "deleted",
        BulkAction::RunNow => "made due now",
    }
}

fn skip_reason(action: BulkAction) -> &'static str {
    match action {
        BulkAction::RunNow => "already due, running or finished",
        _ => "their status forbids it",
    }
}

fn print(action: BulkAction, dry_run: bool, r: &BulkReport, json: bool) {
    if json {
        print_json(&json!({
            "action": action.as_str(),
            "dryRun": dry_run,
            "matched": r.matched,
            "changed": r.changed,
            "skipped": r.skipped,
            "batches": r.batches,
            "sample": r.sample,
        }));
        return;
    }
    let verb = if dry_run {
        format!("would be {}", past(action))
    } else {
        past(action).to_owned()
    };
    println!(
        "{} matched, {} {verb}, {} skipped ({}){}",
        thousands(r.matched as i64),
        thousands(r.changed as i64),
        thousands(r.skipped as i64),
        skip_reason(action),
        if dry_run {
            String::new()
        } else {
            format!(", in {} batches", thousands(r.batches as i64))
        }
    );
    if dry_run && !r.sample.is_empty() {
        println!("for example: {}", r.sample.join(", "));
    }
}
