//! `duraq jobs list`: one page of jobs, newest first, as a table or
//! `{"jobs":[…],"total","nextAfter","resume","scanned"}` with `--json`.
//!
//! `jobs list` pages by keyset (`--after <id>`: the jobs strictly older than that
//! one in list order), so a page never shifts while producers add jobs. The
//! "of N" total comes from the O(1) count snapshot, so it is shown only when the
//! filter is at most a status; other filters say whether more pages follow.
//!
//! A search that reads `--scan-limit` rows stops early and says where to
//! continue (`resume`).

use anyhow::Result;
use duraq_core::inspect::{JobCursor, JobFilter};
use serde_json::json;

use crate::db::{closing, Database};
use crate::display::{count, thousands};
use crate::error::CliError;
use crate::job_view::jobs_table;
use crate::output::print_json;

/// Prints one page of the jobs `filter` matches, after the job `after`.
pub async fn run(
    db: &Database,
    filter: JobFilter,
    after: Option<String>,
    json: bool,
) -> Result<()> {
    let store = db.open_existing(false).await?;
    closing(&store, list_on(&store, filter, after, json)).await
}

async fn list_on(
    store: &std::sync::Arc<dyn duraq_core::Store>,
    mut filter: JobFilter,
    after: Option<String>,
    json: bool,
) -> Result<()> {
    if let Some(id) = after {
        let last = store.get_job(&id).await?.ok_or_else(|| {
            CliError::new(
                "job-not-found",
                format!("--after {id:?}: no job with this id (was it pruned?)"),
            )
        })?;
        filter.after = Some(JobCursor::after(&last));
    }
    let page = store.search_jobs(&filter).await?;
    let (jobs, scanned) = (page.jobs, page.scanned);
    let resume = page.resume.map(|c| c.id);
    let only_statuses = JobFilter {
        statuses: filter.statuses.clone(),
        ..JobFilter::default()
    };
    let exact_total = JobFilter {
        after: None,
        limit: None,
        scan_limit: None,
        ..filter.clone()
    } == only_statuses;
    let total = if exact_total {
        let snap = store.count_snapshot().await?;
        Some(match filter.statuses.as_slice() {
            [] => snap.total,
            many => many.iter().map(|s| snap.counts.get(*s)).sum(),
        })
    } else {
        None
    };
    let full_page = filter.limit.is_some_and(|l| jobs.len() >= l);
    let next_after = full_page
        .then(|| jobs.last().map(|j| j.id.clone()))
        .flatten()
        .or_else(|| resume.clone());
    if json {
        print_json(&json!({
            "jobs": jobs,
            "total": total,
            "nextAfter": next_after,
            "resume": resume,
            "scanned": scanned,
        }));
        return Ok(());
    }
    let stopped = |resume: &str| {
        println!(
            "the search stopped after reading {} (--scan-limit); continue with --after {resume}",
            count(scanned as i64, "row")
        );
    };
    if jobs.is_empty() {
        println!("no jobs");
        if let Some(r) = &resume {
            stopped(r);
        }
        return Ok(());
    }
    print!("{}", jobs_table(&jobs, crate::parse::now_ms()));
    let shown = match total {
        Some(t) => format!(
            "showing {} of {}",
            thousands(jobs.len() as i64),
            count(t, "job")
        ),
        None => format!("showing {}", count(jobs.len() as i64, "job")),
    };
    match (&resume, next_after) {
        (Some(r), _) => {
            println!("{shown}");
            stopped(r);
        }
        (None, Some(id)) => println!("{shown}; next page: --after {id}"),
        (None, None) => println!("{shown}"),
    }
    Ok(())
}
