//! `search_jobs` and id prefixes: the filter's indexed conditions in SQL, in
//! list order (`created_at_ms, id COLLATE "C"`, see [`candidate_sql`]), read in
//! chunks that core's [`SearchScan`] asks for and judges; id prefixes through
//! the primary key.
//!
//! Only the conditions a filter sets are written into the statement (every
//! user value bound; statuses, constants, as literals), so the planner sees
//! plain equalities and ranges it can use an index for, never
//! `($1 IS NULL OR …)`; `store-postgres/tests/search_plans.rs` checks that a
//! status or a queue never costs a sequential scan of the jobs table.

use duraq_core::driver::id_prefix_bound;
use duraq_core::driver::rules::SearchScan;
use duraq_core::inspect::{JobCursor, JobFilter, JobPage, WorkflowListRequest, WorkflowSummary};
use duraq_core::{Job, JobStatus, Result};
use tokio_postgres::types::ToSql;

use crate::backend::db::Db;
use crate::rows::{jobs_from_rows, parse_status, JOB_COLUMNS};

/// Jobs matching `filter`, newest first, within its scan budget: every chunk
/// in one read-only repeatable-read transaction (one snapshot), with
/// sequential scans off, so that a rare status or queue is walked through an
/// index rather than by reading the whole table.
pub(crate) async fn search_jobs(db: &Db<'_>, filter: &JobFilter) -> Result<JobPage> {
    db.batch(
        "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; \
         SELECT set_config('enable_seqscan', 'off', true)",
    )
    .await?;
    let walked = walk(db, filter).await;
    let end = db
        .batch(if walked.is_ok() { "COMMIT" } else { "ROLLBACK" })
        .await;
    let page = walked?;
    end?;
    Ok(page)
}

async fn walk(db: &Db<'_>, filter: &JobFilter) -> Result<JobPage> {
    let mut scan = SearchScan::new(filter);
    while let Some(n) = scan.next_chunk() {
        let rows = candidates(db, filter, scan.after(), n).await?;
        scan.feed(rows);
    }
    Ok(scan.finish())
}

/// The statement reading at most `$last` candidates after an optional cursor,
/// for `filter`'s indexed conditions (a template over `{s}`).
///
/// Waiting and finished jobs are read in list order through
/// `duraq_jobs_created_waiting` and `duraq_jobs_created_done`; running jobs
/// (`handed_off`), which a claim keeps out of the first so that it writes no
/// entry there, through `duraq_jobs_running`, sorted: there are only as many
/// as the workers' slots and prefetch. A filter that wants both reads both,
/// each limited, and merges them.
pub(crate) fn candidate_sql(filter: &JobFilter, with_cursor: bool) -> String {
    let mut conds: Vec<String> = Vec::new();
    let mut n = 0;
    let mut next = || {
        n += 1;
        n
    };
    for (col, set) in [
        ("job_name", filter.job_name.is_some()),
        ("queue", filter.queue.is_some()),
        ("schedule_key", filter.schedule_key.is_some()),
        ("workflow_id", filter.workflow_id.is_some()),
        ("sequence_key", filter.sequence_key.is_some()),
        ("fairness_key", filter.fairness_key.is_some()),
    ] {
        if set {
            conds.push(format!("{col} = ${}::text", next()));
        }
    }
    if filter.created_after_ms.is_some() {
        conds.push(format!("created_at_ms >= ${}::bigint", next()));
    }
    if filter.created_before_ms.is_some() {
        conds.push(format!("created_at_ms < ${}::bigint", next()));
    }
    if with_cursor {
        let (a, b) = (next(), next());
        conds.push(format!(
            "(created_at_ms, id COLLATE \"C\") < (${a}::bigint, ${b}::text COLLATE \"C\")"
        ));
    }
    let limit = next();
    let mut arms: Vec<String> = status_arms(&filter.statuses)
        .into_iter()
        .map(|status| {
            let all: Vec<&str> = std::iter::once(status.as_str())
                .chain(conds.iter().map(String::as_str))
                .collect();
            format!(
                "SELECT {JOB_COLUMNS} FROM {{s}}.duraq_jobs WHERE {} {ORDER} LIMIT ${limit}::bigint",
                all.join(" AND ")
            )
        })
        .collect();
    if arms.len() == 1 {
        return arms.remove(0);
    }
    format!(
        "SELECT * FROM (({})) AS u {ORDER} LIMIT ${limit}::bigint",
        arms.join(") UNION ALL (")
    )
}

/// The statement [`candidate_sql`] builds, on `schema`, for the plan tests
/// (`tests/search_plans.rs`, feature `plan-tests`): not an API.
#[cfg(feature = "plan-tests")]
pub fn search_candidate_sql(schema: &str, filter: &JobFilter, with_cursor: bool) -> String {
    candidate_sql(filter, with_cursor).replace("{s}", &crate::backend::db::quote_identifier(schema))
}

/// The list order, newest first.
const ORDER: &str = "ORDER BY created_at_ms DESC, id COLLATE \"C\" DESC";

/// The status condition of each read [`candidate_sql`] makes: one for the
/// jobs that are not running, one for running jobs, as `statuses` asks.
/// Status names are constants, never user input: written as literals so that
/// the planner can prove each partial index (an OR of them becomes a
/// BitmapOr).
fn status_arms(statuses: &[JobStatus]) -> Vec<String> {
    let running = statuses.is_empty() || statuses.contains(&JobStatus::HandedOff);
    let others: Vec<String> = (statuses.iter())
        .filter(|s| **s != JobStatus::HandedOff)
        .map(|s| format!("status = '{}'", s.as_str()))
        .collect();
    let mut arms = Vec::new();
    if statuses.is_empty() {
        arms.push("status <> 'handed_off'".to_owned());
    } else if !others.is_empty() {
        arms.push(format!(
            "status <> 'handed_off' AND ({})",
            others.join(" OR ")
        ));
    }
    if running {
        arms.push("status = 'handed_off'".to_owned());
    }
    arms
}

async fn candidates(
    db: &Db<'_>,
    filter: &JobFilter,
    after: Option<&JobCursor>,
    n: usize,
) -> Result<Vec<Job>> {
    let sql = candidate_sql(filter, after.is_some());
    let limit = i64::try_from(n).unwrap_or(i64::MAX);
    let mut params: Vec<&(dyn ToSql + Sync)> = Vec::new();
    for v in [
        &filter.job_name,
        &filter.queue,
        &filter.schedule_key,
        &filter.workflow_id,
        &filter.sequence_key,
        &filter.fairness_key,
    ]
    .into_iter()
    .flatten()
    {
        params.push(v);
    }
    for v in [&filter.created_after_ms, &filter.created_before_ms]
        .into_iter()
        .flatten()
    {
        params.push(v);
    }
    if let Some(c) = after {
        params.push(&c.created_at_ms);
        params.push(&c.id);
    }
    params.push(&limit);
    jobs_from_rows(&db.query(&sql, &params).await?)
}

/// At most `limit` jobs whose id starts with `prefix`, by id: a range scan of
/// the primary key from `prefix` to the first id past it (byte order, as a
/// `C` collation gives; ids are ASCII).
pub(crate) async fn jobs_with_id_prefix(
    db: &Db<'_>,
    prefix: &str,
    limit: usize,
) -> Result<Vec<Job>> {
    let sql = format!(
        "SELECT {JOB_COLUMNS} FROM {{s}}.duraq_jobs WHERE id >= $1::text AND id < $2::text \
         AND starts_with(id, $1::text) ORDER BY id LIMIT $3::bigint"
    );
    let bound = id_prefix_bound(prefix);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    jobs_from_rows(&db.query(&sql, &[&prefix, &bound, &limit]).await?)
}

/// A page of workflows, largest id first: the page's ids through the partial
/// index `duraq_jobs_workflow` (or, for a name, `duraq_jobs_workflow_name`; a
/// backward walk made distinct), then each id's steps grouped by status
/// through `duraq_jobs_workflow`; core folds the groups. Workflow ids are
/// UUIDs, whose order is the same in every collation.
pub(crate) async fn list_workflows(
    db: &Db<'_>,
    req: &WorkflowListRequest,
) -> Result<Vec<WorkflowSummary>> {
    // Only the conditions the request sets, as the module docs say.
    let mut filter = String::new();
    let mut params: Vec<&(dyn ToSql + Sync)> = Vec::new();
    if let Some(name) = &req.name {
        params.push(name);
        filter.push_str(&format!(" AND workflow_name = ${}::text", params.len()));
    }
    if let Some(before) = &req.before {
        params.push(before);
        filter.push_str(&format!(" AND workflow_id < ${}::text", params.len()));
    }
    let limit = i64::try_from(req.limit).unwrap_or(i64::MAX);
    params.push(&limit);
    let sql = format!(
        "SELECT workflow_id, max(workflow_name), status, count(*), min(created_at_ms) \
         FROM {{s}}.duraq_jobs WHERE workflow_id = ANY(ARRAY(SELECT DISTINCT workflow_id \
         FROM {{s}}.duraq_jobs WHERE workflow_id IS NOT NULL{filter} \
         ORDER BY workflow_id DESC LIMIT ${}::bigint)) GROUP BY workflow_id, status",
        params.len()
    );
    let rows = db.query(&sql, &params).await?;
    let mut groups = Vec::with_capacity(rows.len());
    for r in &rows {
        groups.push((
            r.get(0),
            r.get(1),
            parse_status(r.get(2))?,
            r.get(3),
            r.get(4),
        ));
    }
    Ok(WorkflowSummary::from_groups(groups))
}
