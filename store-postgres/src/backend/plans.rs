//! Planner settings that pin the plans of the claim's and the reports'
//! statements: set for the rest of their transaction, sent with their first
//! statements (as select items through the macros, or as their own statement).

/// The setting of [`WALK_DUE_INDEX`] as a select item (the claim sends it
/// inside its first statement).
macro_rules! walk_due_index {
    () => {
        "set_config('enable_sort', 'off', true)"
    };
}
pub(crate) use walk_due_index;

/// Makes the rest of the transaction plan without explicit sorts, so a query
/// ordered like `duraq_jobs_claim` can only walk that index. Without it, before
/// ANALYZE has seen the table (or with stale statistics) the planner may read
/// every queued row of a name through another index and sort them (schema v1's
/// dedupe index did: about 90 ms per claim at 50,000 queued jobs), instead of
/// reading a few rows in claim order. Queries that need a sort anyway (queue priorities) still get one.
pub(crate) const WALK_DUE_INDEX: &str = concat!("SELECT ", walk_due_index!());

/// The settings of [`BY_KEY_ONLY`] as select items (the claim sends them
/// inside its first statement).
macro_rules! by_key_only {
    () => {
        "set_config('enable_seqscan', 'off', true), \
         set_config('plan_cache_mode', 'force_generic_plan', true)"
    };
}
pub(crate) use by_key_only;

/// Makes the rest of the transaction reach rows through indexes, and plan
/// each statement once.
///
/// Reports and claims touch their rows by primary key. On a table whose
/// statistics are young or small the planner prefers to read the whole table
/// and hash-join it against the ids (measured: a 10,000-row table read twice
/// per report batch, most of a drain's database time).
///
/// Every statement of a claim or report transaction has one right plan
/// whatever its parameters (rows by key through `unnest`, the claim index
/// walked in order, counter rows by key), and the settings here and in
/// [`WALK_DUE_INDEX`] rule out the others. Left to PostgreSQL's default
/// (`plan_cache_mode = auto`), a cached statement is planned again on each of
/// its first five executions and after that whenever custom plans looked
/// cheaper, so a worker's statements were re-planned every round: a sixth of
/// a drain's database time (binds took 238 ms of 1,584 ms for 10,000 jobs,
/// measured with `log_min_duration_statement = 0`), and the in-process drain
/// with prefetch ran 1.11× faster without it. A plan cached on a connection is
/// still invalidated as usual (schema changes, ANALYZE).
pub(crate) const BY_KEY_ONLY: &str = concat!("SELECT ", by_key_only!());
