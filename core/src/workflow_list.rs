//! Listing workflows (`duraq workflows list`, the dashboard's overview). A
//! workflow is no row of its own: it is the jobs that carry its id
//! ([`crate::Workflow`]). So a store answers [`crate::Inspect::list_workflows`] with
//! one group per (workflow, status) for a page of workflow ids, walked
//! newest id first through its partial index on `workflow_id`, and
//! [`WorkflowSummary::from_groups`] folds those groups into summaries here,
//! once for every store. The cost of a page is the steps of the workflows on
//! it; [`crate::inspect::workflow_tally`] walks pages up to a budget, so the overview's counts
//! stay bounded however many workflows retention keeps.

use serde::{Deserialize, Serialize};

use crate::counts::StatusCounts;
use crate::job::{JobStatus, STATUS_COUNT};

/// A page of [`crate::Inspect::list_workflows`]: the workflows (named `name`,
/// when given) whose id sorts before `before` (all when `None`), at most
/// `limit`, largest id first (the ids duraq makes are UUIDv7, so newest first;
/// keyed workflows' ids are derived from their key and sort anywhere). A name
/// is an index range on both stores, however rare it is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkflowListRequest {
    /// Only workflow ids sorting strictly before this one.
    pub before: Option<String>,
    /// At most this many workflows.
    pub limit: usize,
    /// Only workflows enqueued with this name (`Workflow::new(name)`).
    pub name: Option<String>,
}

/// Where a workflow stands, from its steps' statuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkflowState {
    /// A step has not finished (pending, queued or running).
    Active,
    /// Every step completed.
    Completed,
    /// Every step finished, and at least one did not complete.
    Failed,
}

impl WorkflowState {
    /// The state's name as the CLI and the dashboard print it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Completed => "completed",
            Self::Failed => "failed",
        }
    }
}

/// One workflow as listed: its id and name, how many of its steps are in
/// each status, and when its first step was enqueued.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowSummary {
    /// The workflow's id.
    pub workflow_id: String,
    /// The workflow's name (`Workflow::new`); `None` for a workflow stored
    /// before names were.
    pub name: Option<String>,
    /// Its steps per status.
    pub counts: StatusCounts,
    /// The earliest `createdAtMs` among its steps.
    pub created_at_ms: i64,
}

impl WorkflowSummary {
    /// Folds a store's groups `(workflow id, workflow name, status, steps,
    /// earliest createdAtMs)` into summaries, largest id first.
    ///
    /// ```
    /// use duraq_core::JobStatus;
    /// use duraq_core::inspect::{WorkflowState, WorkflowSummary};
    /// let name = |n: &str| Some(n.to_owned());
    /// let groups = vec![
    ///     ("a".to_owned(), name("nightly"), JobStatus::Completed, 3, 10),
    ///     ("b".to_owned(), name("onboard"), JobStatus::Completed, 1, 20),
    ///     ("b".to_owned(), name("onboard"), JobStatus::Pending, 2, 21),
    /// ];
    /// let list = WorkflowSummary::from_groups(groups);
    /// assert_eq!(list[0].workflow_id, "b");
    /// assert_eq!(list[0].name.as_deref(), Some("onboard"));
    /// assert_eq!((list[0].steps(), list[0].state()), (3, WorkflowState::Active));
    /// assert_eq!((list[1].created_at_ms, list[1].state()), (10, WorkflowState::Completed));
    /// ```
    pub fn from_groups(
        groups: impl IntoIterator<Item = (String, Option<String>, JobStatus, i64, i64)>,
    ) -> Vec<WorkflowSummary> {
        type Folded = (Option<String>, [i64; STATUS_COUNT], i64);
        let mut by_id: std::collections::BTreeMap<String, Folded> =
            std::collections::BTreeMap::new();
        for (id, name, status, steps, created) in groups {
            let entry = by_id
                .entry(id)
                .or_insert((None, [0; STATUS_COUNT], created));
            entry.0 = entry.0.take().or(name);
            entry.1[status.index()] += steps;
            entry.2 = entry.2.min(created);
        }
        by_id
            .into_iter()
            .rev()
            .map(
                |(workflow_id, (name, per_status, created_at_ms))| WorkflowSummary {
                    workflow_id,
                    name,
                    counts: StatusCounts::from_array(per_status),
                    created_at_ms,
                },
            )
            .collect()
    }

    /// How many steps the workflow has.
    pub fn steps(&self) -> i64 {
        self.counts.all
    }

    /// Where the workflow stands ([`WorkflowState`]).
    pub fn state(&self) -> WorkflowState {
        let open: i64 = JobStatus::ALL
            .iter()
            .filter(|s| !s.is_terminal())
            .map(|s| self.counts.get(*s))
            .sum();
        if open > 0 {
            WorkflowState::Active
        } else if self.counts.completed == self.counts.all {
            WorkflowState::Completed
        } else {
            WorkflowState::Failed
        }
    }
}

/// How many workflows are in each [`WorkflowState`] ([`crate::inspect::workflow_tally`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowTally {
    /// Workflows with a step not finished.
    pub active: u64,
    /// Workflows whose steps all completed.
    pub completed: u64,
    /// Finished workflows with a step that did not complete.
    pub failed: u64,
    /// Whether the walk stopped at its budget (more workflows exist).
    pub truncated: bool,
}
