//! Runs of jobs that only wait ([`NewJob::only_waits`]: dependencies or a
//! workflow step, nothing to register), the shape of a fan-out and of an
//! unkeyed workflow, decided and written together: a fixed number of
//! statements per run instead of four round trips per job.
//!
//! 1. The dependencies outside the run are locked and read with one statement
//!    ([`crate::dependencies::lock_dependencies`], id order, which also marks
//!    them `has_dependents`).
//! 2. Each job, in batch order, asks core's [`start_of`] with the statuses
//!    read and those of the run's *earlier* jobs as decided so far (a job
//!    depending on a later job of the run finds no such job, as it would one
//!    by one: `dependency-not-found`, and the batch rolls back).
//! 3. The rows go in with one insert ([`insert_jobs`]), then one update writes
//!    what the insert's columns do not carry (edges as `depends_on`, the open
//!    count, a cancelled start's time and error, the workflow and step, and
//!    `has_dependents` for a job a later job of the run waits for), and one
//!    insert writes every edge.

use std::collections::{HashMap, HashSet};

use duraq_core::driver::rules::{apply_start, start_of};
use duraq_core::driver::transitions::new_job_row;
use duraq_core::{EnqueueOutcome, JobStatus, NewJob, Result};

use crate::dependencies::lock_dependencies;
use crate::insert::insert_jobs;
use crate::tx::Tx;

/// Writes the columns the insert leaves at their defaults.
const WRITE_WAITING: &str = "UPDATE {s}.duraq_jobs AS j SET \
     depends_on = v.depends_on::jsonb, open_dependencies = v.open, \
     cancelled_at_ms = v.cancelled_at_ms, cancel_reason = v.cancel_reason, \
     last_error = v.last_error, workflow_id = v.workflow_id, step = v.step, \
     has_dependents = v.has_dependents \
     FROM unnest($1::text[], $2::text[], $3::int8[], $4::int8[], $5::text[], $6::text[], \
     $7::text[], $8::bool[], $9::text[]) AS v(id, depends_on, open, cancelled_at_ms, \
     last_error, workflow_id, step, has_dependents, cancel_reason) WHERE j.id = v.id";

/// Inserts every edge of the run.
const WRITE_EDGES: &str = "INSERT INTO {s}.duraq_job_dependents (dep_id, job_id, on_failure) \
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[])";

/// Enqueues `jobs`, each [`NewJob::only_waits`], in order (see the module docs).
pub(crate) async fn enqueue_waiting(
    tx: &mut Tx<'_>,
    jobs: &[NewJob],
) -> Result<Vec<EnqueueOutcome>> {
    let mut rows: Vec<_> = jobs.iter().map(|j| new_job_row(j, tx.now)).collect();
    let position: HashMap<&str, usize> =
        jobs.iter().enumerate().map(|(i, j)| (j.id(), i)).collect();
    let mut outside: Vec<&str> = jobs
        .iter()
        .flat_map(|j| j.dependencies())
        .map(|d| d.job_id.as_str())
        .filter(|id| !position.contains_key(id))
        .collect();
    outside.sort_unstable();
    outside.dedup();
    let statuses = if outside.is_empty() {
        HashMap::new()
    } else {
        lock_dependencies(&tx.db, &outside).await?
    };
    let mut depended_on: HashSet<usize> = HashSet::new();
    for (i, job) in jobs.iter().enumerate() {
        let earlier = |id: &str| position.get(id).copied().filter(|&k| k < i);
        let start = start_of(job.dependencies(), |id| match earlier(id) {
            Some(k) => Some(rows[k].status),
            None => statuses.get(id).copied(),
        })?;
        depended_on.extend(job.dependencies().iter().filter_map(|d| earlier(&d.job_id)));
        apply_start(&mut rows[i], &start, tx.now);
    }
    insert_jobs(&tx.db, jobs, &rows).await?;

    let depends_on: Vec<Option<String>> = (rows.iter())
        .map(|r| {
            (!r.depends_on.is_empty())
                .then(|| serde_json::to_string(&r.depends_on).expect("plain data encodes"))
        })
        .collect();
    let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    let open: Vec<i64> = rows.iter().map(|r| r.open_dependencies).collect();
    let cancelled: Vec<Option<i64>> = rows.iter().map(|r| r.cancelled_at_ms).collect();
    let errors: Vec<Option<&str>> = rows.iter().map(|r| r.last_error.as_deref()).collect();
    let reasons: Vec<Option<&str>> = (rows.iter())
        .map(|r| r.cancel_reason.map(|c| c.as_str()))
        .collect();
    let workflows: Vec<Option<&str>> = rows.iter().map(|r| r.workflow_id.as_deref()).collect();
    let steps: Vec<Option<&str>> = rows.iter().map(|r| r.step.as_deref()).collect();
    let has: Vec<bool> = (0..rows.len()).map(|i| depended_on.contains(&i)).collect();
    tx.db
        .execute(
            WRITE_WAITING,
            &[
                &ids,
                &depends_on,
                &open,
                &cancelled,
                &errors,
                &workflows,
                &steps,
                &has,
                &reasons,
            ],
        )
        .await?;

    let edges = rows.iter().flat_map(|r| {
        (r.depends_on.iter())
            .map(move |d| (d.job_id.as_str(), r.id.as_str(), d.on_failure.as_str()))
    });
    let (mut deps, mut dependents, mut policies) = (Vec::new(), Vec::new(), Vec::new());
    for (dep, job, policy) in edges {
        deps.push(dep);
        dependents.push(job);
        policies.push(policy);
    }
    if !deps.is_empty() {
        tx.db
            .execute(WRITE_EDGES, &[&deps, &dependents, &policies])
            .await?;
    }
    for row in &rows {
        tx.change.added(&row.queue, row.status);
        tx.work |= row.status == JobStatus::Queued;
    }
    Ok(rows
        .into_iter()
        .map(|r| EnqueueOutcome::Created(r.id))
        .collect())
}
