//! What reading and operating a store takes and answers: counts, history,
//! search, progress, workers, workflows and bulk actions, and the helpers the
//! `duraq` program and the dashboard share to show them (times, thousands,
//! id prefixes).
//!
//! The traits themselves ([`crate::Inspect`], [`crate::Operate`]) are at the
//! crate root; this module holds their request and answer types, so an
//! application that only enqueues and runs jobs never meets them.

pub use crate::bulk::{run_bulk, BulkReport, BulkRequest, BulkSelection};
pub use crate::counts::{CountDelta, CountSnapshot, QueueCounts, QueueSnapshot, StatusCounts};
pub use crate::display::{relative_time, thousands, utc_time, visible};
pub use crate::durable::{SignalRecord, StepRecord};
pub use crate::error::error_chain;
pub use crate::history::{
    history_minute, throughput, throughput_sum, with_current, HistoryRange, HistorySample,
    OutcomeTotals, QueueTotals, ThroughputPoint,
};
pub use crate::key_backlog::{key_backlogs, KeyBacklog, KEY_COUNT_CAP, MAX_KEYS_LISTED};
pub use crate::progress::{JobProgress, LogLine, ProgressPoint};
pub use crate::requests::{
    BulkAction, BulkBatch, Health, JobCursor, JobFilter, Operation, PruneReport, PruneRequest,
    ScheduledJobs,
};
pub use crate::resolve::{check_id_prefix, resolve_job};
pub use crate::search::JobPage;
pub use crate::time::parse_time_ms;
pub use crate::wait::{Waited, POLL as WAIT_POLL};
pub use crate::workers::{DueJobGroup, RunningJob, WorkerRecord, WorkerState};
pub use crate::workflow::{resolve_workflow, workflow_tally};
pub use crate::workflow_list::{
    WorkflowListRequest, WorkflowState, WorkflowSummary, WorkflowTally,
};
