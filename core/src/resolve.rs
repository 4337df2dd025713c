//! What a person typed as a job id, resolved to one job: the exact id first,
//! else the one job whose id starts with it. Shared by `duraq jobs show` and
//! the bulk actions' ids, and the dashboard's id box, so a prefix means the
//! same everywhere.

use crate::error::{Error, ErrorCode, Result};
use crate::job::Job;
use crate::store::Inspect;

/// The longest text taken as an id or id prefix, in bytes.
pub const MAX_ID_BYTES: usize = 255;

/// Checks that `input` could be (the start of) a job id: 1 to
/// [`MAX_ID_BYTES`] bytes, no whitespace or control characters.
///
/// Errors: `invalid-id`.
pub fn check_id_prefix(input: &str) -> Result<()> {
    if input.is_empty() || input.len() > MAX_ID_BYTES {
        return Err(Error::invalid(
            ErrorCode::InvalidId,
            format!("a job id must be 1 to {MAX_ID_BYTES} bytes"),
        ));
    }
    if input.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(Error::invalid(
            ErrorCode::InvalidId,
            format!("a job id holds no spaces or control characters, not {input:?}"),
        ));
    }
    Ok(())
}

/// The job `input` names: the job with exactly that id, else the only job
/// whose id starts with it. One or two reads
/// ([`Inspect::get_job`], then [`Inspect::jobs_with_id_prefix`] with a limit of 2).
///
/// Errors: `invalid-id` (see [`check_id_prefix`]), `job-not-found` when no id
/// starts with it, `ambiguous-id` when several do.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use duraq_core::prelude::*;
/// use duraq_core::{EnqueueOptions, ErrorCode, MemoryStore, NewJob};
/// use duraq_core::inspect::resolve_job;
/// let store = MemoryStore::new();
/// let job = NewJob::new("report", serde_json::json!([]), EnqueueOptions::new()).unwrap();
/// let id = store.enqueue(job).await.unwrap().job_id().to_owned();
/// assert_eq!(resolve_job(&store, &id[..8]).await.unwrap().id, id);
/// let err = resolve_job(&store, "zz").await.unwrap_err();
/// assert_eq!(err.code(), ErrorCode::JobNotFound);
/// # });
/// ```
pub async fn resolve_job<S: Inspect + ?Sized>(store: &S, input: &str) -> Result<Job> {
    check_id_prefix(input)?;
    if let Some(job) = store.get_job(input).await? {
        return Ok(job);
    }
    let mut found = store.jobs_with_id_prefix(input, 2).await?;
    match found.len() {
        0 => Err(Error::job_not_found(input)),
        1 => Ok(found.remove(0)),
        _ => Err(Error::invalid(
            ErrorCode::AmbiguousId,
            format!("several jobs have an id starting with {input:?}; type more of it"),
        )),
    }
}

/// The exclusive upper bound of the ids starting with `prefix` in byte order,
/// for a store's range read (`id >= prefix AND id < bound`).
pub fn id_prefix_bound(prefix: &str) -> String {
    format!("{prefix}\u{10FFFF}")
}
