//! The built-in `duraq.mail.deliver` job. An attempt of a required-idempotency
//! delivery runs the pre-attempt checks of `docs/mail.md`, in order, before the
//! backend may open a connection:
//!
//! 1. the configured backend still has the operation's provider kind and
//!    retention (`mail-delivery-provider-changed`);
//! 2. the payload still matches the persisted digest;
//! 3. `firstAttemptStartedAtMs` is stamped durably (committed by the store
//!    before `start_operation_attempt` returns) if it is unset;
//! 4. now ≥ first attempt + retention fails closed
//!    (`mail-delivery-idempotency-expired`), without retries: the provider may
//!    have forgotten the key, and a new key could deliver twice. The key is the
//!    operation id and is never rotated.
//!
//! A delivery already recorded on the operation (the worker died between send
//! and report) completes without sending again.

use std::sync::Arc;

use async_trait::async_trait;
use duraq_core::{Job, JobArgs, JobContext, JobError, JobHandler, JobResult, MailOperations};

use crate::backend::MailBackend;
use crate::error::{MailError, MailResult};
use crate::operation::{DeliverArgs, OperationRecord, OperationResult, OperationTerms};

/// The job name of the built-in mail delivery job.
pub const DELIVER_JOB: &str = "duraq.mail.deliver";

/// The `duraq.mail.deliver` handler over a configured backend.
///
/// ```
/// use std::sync::Arc;
/// use duraq_core::Registry;
/// use duraq_mailer::{MailDeliverJob, MemoryBackend};
/// let registry = Registry::new().register(MailDeliverJob::new(Arc::new(MemoryBackend::new()))).unwrap();
/// assert!(registry.contains("duraq.mail.deliver"));
/// ```
#[derive(Clone)]
pub struct MailDeliverJob {
    backend: Arc<dyn MailBackend>,
}

impl std::fmt::Debug for MailDeliverJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MailDeliverJob")
            .field("capability", &self.backend.idempotency())
            .finish()
    }
}

impl JobArgs for DeliverArgs {
    const NAME: &'static str = DELIVER_JOB;
}

#[async_trait]
impl JobHandler for MailDeliverJob {
    type Args = DeliverArgs;

    async fn perform(&self, ctx: &JobContext, args: DeliverArgs) -> Result<JobResult, JobError> {
        self.deliver(ctx.store().as_ref(), ctx.now_ms(), args)
            .await
            .map_err(MailError::into_job_error)?;
        Ok(JobResult::Completed)
    }
}

impl MailDeliverJob {
    /// A handler sending through `backend`.
    pub fn new(backend: Arc<dyn MailBackend>) -> Self {
        Self { backend }
    }

    /// One attempt of a claimed `job` at `now_ms`, as [`JobHandler::perform`]
    /// runs it (for callers that drive attempts themselves). The error's
    /// [`MailError::into_job_error`] is what the worker reports.
    pub async fn attempt(
        &self,
        store: &dyn MailOperations,
        now_ms: i64,
        job: &Job,
    ) -> MailResult<()> {
        let args: DeliverArgs = serde_json::from_value(job.args.clone())
            .map_err(|e| MailError::invalid(format!("invalid {DELIVER_JOB} args: {e}")))?;
        self.deliver(store, now_ms, args).await
    }

    async fn deliver(
        &self,
        store: &dyn MailOperations,
        now_ms: i64,
        args: DeliverArgs,
    ) -> MailResult<()> {
        let Some(terms) = &args.operation else {
            self.backend.send(&args.payload, None).await?;
            return Ok(());
        };
        let record = self.check_terms(store, terms, &args).await?;
        let op = store
            .start_operation_attempt(&record.terms.operation_key)
            .await?;
        if op.result.is_some() {
            tracing::info!(operation = %terms.id, "mail already delivered; not sending again");
            return Ok(());
        }
        let first = op.first_attempt_started_at_ms.unwrap_or(now_ms);
        let expires = first.saturating_add(record.terms.retention_ms);
        if now_ms >= expires {
            return Err(MailError::IdempotencyExpired {
                message: format!(
                    "the {}ms idempotency window of {} that began with the first attempt at {first} \
                     has passed; not sending (a new key could deliver twice)",
                    record.terms.retention_ms, record.terms.provider_kind
                ),
            });
        }
        let delivered = self
            .backend
            .send(&record.payload, Some(&record.terms.id))
            .await?;
        let result = OperationResult {
            delivered_at_ms: now_ms,
            provider_message_id: delivered.provider_message_id,
        };
        let value = serde_json::to_value(&result).unwrap_or_default();
        store
            .record_operation_result(&record.terms.operation_key, value)
            .await?;
        Ok(())
    }

    /// Pre-attempt checks 1 and 2 against the persisted record.
    async fn check_terms(
        &self,
        store: &dyn MailOperations,
        terms: &OperationTerms,
        args: &DeliverArgs,
    ) -> MailResult<OperationRecord> {
        let op = store
            .get_operation(&terms.operation_key)
            .await?
            .ok_or_else(|| {
                MailError::Store(duraq_core::Error::NotFound {
                    code: duraq_core::ErrorCode::OperationNotFound,
                    message: format!("no delivery operation record for {:?}", terms.id),
                })
            })?;
        let record: OperationRecord =
            serde_json::from_value(op.data).map_err(|_| MailError::PayloadDigestMismatch)?;
        let configured = self.backend.idempotency();
        if configured.as_ref() != Some(&record.terms.capability()) {
            let now = configured.map_or("none".to_owned(), |c| {
                format!("{} ({}ms)", c.provider_kind, c.retention_ms)
            });
            return Err(MailError::ProviderChanged {
                message: format!(
                    "enqueued for {} ({}ms), configured backend is {now}",
                    record.terms.provider_kind, record.terms.retention_ms
                ),
            });
        }
        let persisted = record.payload.digest();
        if record.terms != *terms
            || persisted != terms.payload_digest
            || args.payload.digest() != persisted
        {
            return Err(MailError::PayloadDigestMismatch);
        }
        Ok(record)
    }
}
