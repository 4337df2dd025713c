//! A new job row on its way into `duraq_jobs`: the job, plus what the store
//! adds to it (the args as the canonical text the caller serialized, the args
//! digest and dedupe key of [`crate::dedupe`]). The insert statements bind
//! its columns through [`crate::columns::COLUMNS`].

use duraq_core::Job;

use crate::dedupe::{key_of, NO_DIGEST};

/// A new row to insert.
pub(crate) struct NewRow<'a> {
    pub(crate) job: &'a Job,
    /// The args as canonical JSON text (what the `args` column stores).
    pub(crate) args: &'a str,
    /// What the `args_digest` column holds: the digest on a row with a dedupe
    /// key, the one lookup that reads it, [`NO_DIGEST`] on others.
    pub(crate) args_digest: &'a str,
    pub(crate) dedupe_key: Option<&'a str>,
}

impl<'a> NewRow<'a> {
    /// The row of `job`, whose args are `args`; `digest` when its scope is
    /// registered for dedupe.
    pub(crate) fn new(job: &'a Job, args: &'a str, digest: Option<&'a str>) -> Self {
        Self {
            job,
            args,
            args_digest: digest.unwrap_or(NO_DIGEST),
            dedupe_key: digest.map(key_of),
        }
    }
}
