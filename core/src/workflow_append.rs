//! Adding steps to a workflow that already exists (`docs/workflows.md`,
//! "Adding steps later"). [`Workflow::append_to`] describes the new steps with
//! the builder a new workflow has; [`append_workflow`] reads the workflow's
//! steps ([`workflow_steps`]), checks the new ones against them
//! ([`WorkflowAppend::plan`]: a name already taken is `duplicate-step`, an
//! `after` naming neither a new nor an existing step `dependency-not-found`,
//! new steps waiting for each other in a circle `workflow-cycle`), and inserts
//! them with one `enqueue_batch`: every new step or none. A new step may wait
//! for existing steps whatever their status: the store's enqueue applies the
//! dependency rules to each edge (completed is satisfied at once, a failure
//! under `cancel` inserts the step cancelled).
//!
//! Every appended step's job id is derived from (workflow id, step name), as
//! a keyed workflow's are. Reading the steps and inserting are two calls, so
//! two appends of one step name may both pass the check; the second insert
//! then meets the first's id and is refused by the store (`idempotency-conflict`),
//! nothing of it written. With an idempotency key each step is keyed
//! `<key>/<step>`: a retried append finds its own steps, lets the store replay
//! them, and answers with the first's ids and `replayed: true`.

use std::collections::{HashMap, HashSet};

use crate::error::{Error, ErrorCode, Result};
use crate::keys::IdempotencyKey;
use crate::new_job::NewJob;
use crate::requests::EnqueueOutcome;
use crate::store::{Inspect, Producer};
use crate::workflow::{workflow_steps, Workflow, WorkflowOutcome, WorkflowPlan};
use crate::workflow_graph::{plan_steps, step_id, step_key, StepSpec};
use crate::Job;

/// Steps to add to an existing workflow ([`Workflow::append_to`]), built like
/// a new workflow's, inserted by [`append_workflow`].
#[derive(Debug)]
pub struct WorkflowAppend {
    workflow_id: String,
    idempotency_key: Option<String>,
    steps: Vec<StepSpec>,
}

impl Workflow {
    /// Steps to add to the workflow `workflow_id` (as [`enqueue_workflow`]
    /// answered it); they may wait for each other and for the workflow's
    /// existing steps by name. Insert them with [`append_workflow`].
    ///
    /// [`enqueue_workflow`]: crate::enqueue_workflow
    pub fn append_to(workflow_id: impl Into<String>) -> WorkflowAppend {
        WorkflowAppend {
            workflow_id: workflow_id.into(),
            idempotency_key: None,
            steps: Vec::new(),
        }
    }
}

impl WorkflowAppend {
    /// The workflow the steps are added to.
    pub fn workflow_id(&self) -> &str {
        &self.workflow_id
    }

    /// Makes the append idempotent under `key`: each new step is keyed
    /// `<key>/<step>`, and a retry answers with the first append's ids.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// A new step that waits for no step.
    pub fn step(self, step: impl Into<String>, job: NewJob) -> Self {
        self.step_after(step, job, std::iter::empty::<String>())
    }

    /// A new step that waits for the steps named in `after`, new or existing
    /// (under the job's own dependency failure policy); the job's own `after`
    /// ids are kept too.
    pub fn step_after<S: Into<String>>(
        mut self,
        step: impl Into<String>,
        job: NewJob,
        after: impl IntoIterator<Item = S>,
    ) -> Self {
        self.steps.push(StepSpec {
            step: step.into(),
            job,
            after: after.into_iter().map(Into::into).collect(),
        });
        self
    }

    /// Checks the new steps against `existing`, the workflow's steps as
    /// [`workflow_steps`] reads them, and orders them. Errors, with nothing
    /// decided: `workflow-not-found` (no existing step), `invalid-workflow` (no
    /// new step, a bad step name), `duplicate-step`, `dependency-not-found`,
    /// `workflow-cycle`, and `unsupported-option` for a step with an
    /// idempotency key of its own in a keyed append. An existing step this
    /// append's key already inserted (same name, id and step key) is its
    /// earlier try, not a duplicate: the store replays it.
    pub fn plan(self, existing: &[Job]) -> Result<WorkflowPlan> {
        if existing.is_empty() {
            return Err(not_found(&self.workflow_id));
        }
        if self.steps.is_empty() {
            return Err(Error::invalid(
                ErrorCode::InvalidWorkflow,
                format!("nothing to append to workflow {}", self.workflow_id),
            ));
        }
        let key = self
            .idempotency_key
            .as_deref()
            .map(IdempotencyKey::new)
            .transpose()?;
        // Appended steps carry the workflow's name, as its first steps do.
        let name = existing.iter().find_map(|j| j.workflow_name.clone());
        let new: HashSet<&str> = self.steps.iter().map(|s| s.step.as_str()).collect();
        let mut taken = HashMap::with_capacity(existing.len());
        for job in existing {
            let Some(step) = job.step.as_deref() else {
                continue;
            };
            if new.contains(step) && self.earlier_try(key.as_ref(), job, step)? {
                continue;
            }
            taken.insert(step.to_owned(), job.id.clone());
        }
        let (jobs, steps) = plan_steps(
            &self.workflow_id,
            name.as_deref(),
            key.as_ref(),
            self.steps,
            &taken,
            true,
        )?;
        Ok(WorkflowPlan {
            workflow_id: self.workflow_id,
            jobs,
            steps,
        })
    }

    /// Whether existing step `step` (`job`) is what this append inserts
    /// under its key: a retry of the same request.
    fn earlier_try(&self, key: Option<&IdempotencyKey>, job: &Job, step: &str) -> Result<bool> {
        let Some(key) = key else {
            return Ok(false);
        };
        Ok(job.id == step_id(&self.workflow_id, step)
            && job.idempotency_key.as_deref() == Some(step_key(key, step)?.as_str()))
    }
}

fn not_found(workflow_id: &str) -> Error {
    Error::NotFound {
        code: ErrorCode::WorkflowNotFound,
        message: format!("no workflow with id {workflow_id}"),
    }
}

/// Adds `append`'s steps to its workflow: reads the workflow's steps, checks
/// the new ones against them ([`WorkflowAppend::plan`]), and inserts them with
/// one `enqueue_batch`, every new step or none. Takes any store that both
/// reads and enqueues: a concrete store, or a `&dyn Store`.
///
/// ```
/// # duraq_core::__private::tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use duraq_core::{append_workflow, enqueue_workflow, EnqueueOptions, JobStatus, MemoryStore, NewJob, Workflow};
/// use duraq_core::prelude::*;
/// let store = MemoryStore::new();
/// let job = |name: &str| NewJob::new(name, serde_json::json!([]), EnqueueOptions::new()).unwrap();
/// let flow = enqueue_workflow(&store, Workflow::new("nightly").step("export", job("export")))
///     .await
///     .unwrap();
/// let more = || Workflow::append_to(&flow.workflow_id)
///     .idempotency_key("add-report")
///     .step_after("report", job("report"), ["export"])
///     .step_after("mail", job("mail"), ["report"]);
/// let added = append_workflow(&store, more()).await.unwrap();
/// let report = store.get_job(&added.jobs["report"]).await.unwrap().unwrap();
/// assert_eq!((report.status, report.step.as_deref()), (JobStatus::Pending, Some("report")));
/// let again = append_workflow(&store, more()).await.unwrap();
/// assert_eq!((again.jobs, again.replayed), (added.jobs, true));
///
/// let taken = Workflow::append_to(&flow.workflow_id).step("export", job("export"));
/// let err = append_workflow(&store, taken).await.unwrap_err();
/// assert_eq!(err.code().as_str(), "duplicate-step");
/// # });
/// ```
pub async fn append_workflow<S>(store: &S, append: WorkflowAppend) -> Result<WorkflowOutcome>
where
    S: Producer + Inspect + ?Sized,
{
    let existing = workflow_steps(store, append.workflow_id()).await?;
    let plan = append.plan(&existing)?;
    let outcomes = store.enqueue_batch(plan.jobs).await?;
    Ok(WorkflowOutcome {
        workflow_id: plan.workflow_id,
        jobs: plan.steps,
        replayed: outcomes
            .iter()
            .all(|o| matches!(o, EnqueueOutcome::Replayed(_))),
    })
}

#[cfg(test)]
#[path = "workflow_append_tests.rs"]
mod tests;
