//! `search_jobs` and id prefixes: the filter's indexed conditions in SQL, in
//! list order (`duraq_jobs_list`), read in chunks that core's
//! [`SearchScan`] asks for and judges; id prefixes through the primary key.
//!
//! Only the conditions a filter sets are written into the statement (every
//! user value bound; statuses, constants, as literals), so the planner sees plain equalities and ranges it can use
//! an index for, never `(? IS NULL OR …)`.

use duraq_core::driver::id_prefix_bound;
use duraq_core::driver::rules::SearchScan;
use duraq_core::inspect::{JobCursor, JobFilter, JobPage, WorkflowListRequest, WorkflowSummary};
use duraq_core::{Job, JobStatus, Result};
use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, Connection};

use crate::columns::JOB_COLUMNS;
use crate::error::SqlResult;
use crate::rows::query_jobs;

/// Jobs matching `filter`, newest first, within its scan budget; every chunk
/// is read on `conn` (one read transaction, one snapshot).
pub(crate) fn search_jobs(conn: &Connection, filter: &JobFilter) -> Result<JobPage> {
    SearchScan::run(filter, |after, n| candidates(conn, filter, after, n))
}

/// At most `n` rows passing the indexed conditions, strictly after `after`.
fn candidates(
    conn: &Connection,
    filter: &JobFilter,
    after: Option<&JobCursor>,
    n: usize,
) -> Result<Vec<Job>> {
    let mut conds: Vec<String> = Vec::new();
    let mut values: Vec<Value> = Vec::new();
    let mut bind = |cond: &str, v: Vec<Value>, values: &mut Vec<Value>| {
        conds.push(cond.to_owned());
        values.extend(v);
    };
    if !filter.statuses.is_empty() {
        // Status names are constants, never user input: literals, so that the
        // planner can use a status's partial index.
        let names: Vec<String> = (filter.statuses.iter())
            .map(|s| format!("'{}'", s.as_str()))
            .collect();
        bind(
            &format!("status IN ({})", names.join(", ")),
            Vec::new(),
            &mut values,
        );
    }
    for (col, v) in [
        ("job_name", &filter.job_name),
        ("queue", &filter.queue),
        ("schedule_key", &filter.schedule_key),
        ("workflow_id", &filter.workflow_id),
        ("sequence_key", &filter.sequence_key),
        ("fairness_key", &filter.fairness_key),
    ] {
        if let Some(v) = v {
            bind(
                &format!("{col} = ?"),
                vec![Value::Text(v.clone())],
                &mut values,
            );
        }
    }
    if let Some(t) = filter.created_after_ms {
        bind("created_at_ms >= ?", vec![Value::Integer(t)], &mut values);
    }
    if let Some(t) = filter.created_before_ms {
        bind("created_at_ms < ?", vec![Value::Integer(t)], &mut values);
    }
    if let Some(c) = after {
        let v = vec![Value::Integer(c.created_at_ms), Value::Text(c.id.clone())];
        bind("(created_at_ms, id) < (?, ?)", v, &mut values);
    }
    let condition = if conds.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", conds.join(" AND "))
    };
    values.push(Value::Integer(i64::try_from(n).unwrap_or(i64::MAX)));
    let sql = format!(
        "SELECT {JOB_COLUMNS} FROM duraq_jobs {condition} \
         ORDER BY created_at_ms DESC, id DESC LIMIT ?"
    );
    query_jobs(conn, &sql, params_from_iter(values))
}

/// At most `limit` jobs whose id starts with `prefix`, by id, through the
/// primary key: a range scan from `prefix` to the first id past it.
pub(crate) fn jobs_with_id_prefix(
    conn: &Connection,
    prefix: &str,
    limit: usize,
) -> Result<Vec<Job>> {
    let sql = format!(
        "SELECT {JOB_COLUMNS} FROM duraq_jobs WHERE id >= ?1 AND id < ?2 ORDER BY id LIMIT ?3"
    );
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let jobs = query_jobs(conn, &sql, params![prefix, id_prefix_bound(prefix), limit])?;
    Ok(jobs
        .into_iter()
        .filter(|j| j.id.starts_with(prefix))
        .collect())
}

/// A page of workflows, largest id first: the page's ids through the partial
/// index on `workflow_id` (or, for a name, on `(workflow_name, workflow_id)`;
/// `DISTINCT` over it, backwards), then each id's steps grouped by status
/// through the `workflow_id` index; core folds the groups.
pub(crate) fn list_workflows(
    conn: &Connection,
    req: &WorkflowListRequest,
) -> Result<Vec<WorkflowSummary>> {
    let mut filter = String::new();
    let mut values: Vec<Value> = Vec::new();
    if let Some(name) = &req.name {
        filter.push_str(" AND workflow_name = ?");
        values.push(Value::Text(name.clone()));
    }
    if let Some(before) = &req.before {
        filter.push_str(" AND workflow_id < ?");
        values.push(Value::Text(before.clone()));
    }
    values.push(Value::Integer(i64::try_from(req.limit).unwrap_or(i64::MAX)));
    let sql = format!(
        "SELECT workflow_id, max(workflow_name), status, count(*), min(created_at_ms) \
         FROM duraq_jobs \
         WHERE workflow_id IN (SELECT DISTINCT workflow_id FROM duraq_jobs \
         WHERE workflow_id IS NOT NULL{filter} ORDER BY workflow_id DESC LIMIT ?) \
         GROUP BY workflow_id, status"
    );
    let mut stmt = conn.prepare_cached(&sql).db()?;
    let rows = stmt
        .query_map(params_from_iter(values), |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, String>(2)?,
                r.get(3)?,
                r.get(4)?,
            ))
        })
        .db()?;
    let mut groups = Vec::new();
    for row in rows {
        let (id, name, status, steps, created) = row.db()?;
        groups.push((id, name, status.parse::<JobStatus>()?, steps, created));
    }
    Ok(WorkflowSummary::from_groups(groups))
}
