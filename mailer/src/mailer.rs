//! `deliver_now` and `deliver_later`: the producer side of `docs/mail.md`. Every check
//! that can refuse a delivery (capability, operation id, payload, reserved
//! headers, sender, caller transaction) runs before the first write and the
//! first byte on the network, in the order `docs/mail.md` lists them.
//!
//! # Caller-owned transactions
//! The `Store` trait has no notion of a caller's database transaction, so the
//! caller declares it with a [`DeliveryContext`]. A required direct delivery
//! inside one is refused (`mail-delivery-idempotency-transaction-active`): the
//! provider's idempotency window starts with the first attempt, and a marker
//! written inside a transaction that later rolls back would be lost while the
//! mail was already sent. Enqueue the delivery instead (`deliver_later`): the
//! job runs after the commit.

use std::sync::Arc;

use duraq_core::{EnqueueOptions, EnqueueOutcome, NewJob, NewOperation, Producer};

use crate::backend::{Delivered, MailBackend};
use crate::error::{from_enqueue_error, MailError, MailResult};
use crate::job::DELIVER_JOB;
use crate::operation::{DeliverArgs, DeliveryOperation, OperationRecord, OperationTerms};
use crate::payload::MailPayload;

/// Whether the caller is inside a database transaction of its own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeliveryContext {
    /// `true` when the call happens inside a caller-owned transaction.
    pub in_transaction: bool,
}

impl DeliveryContext {
    /// Not inside any caller transaction (the default).
    pub fn standalone() -> Self {
        Self {
            in_transaction: false,
        }
    }
    /// Inside a transaction the caller will commit or roll back later.
    pub fn inside_transaction() -> Self {
        Self {
            in_transaction: true,
        }
    }
}

/// Sends mail through one backend and enqueues deliveries into one store.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use duraq_core::{EnqueueOptions, MemoryStore};
/// use duraq_mailer::{DeliveryOperation, MailPayload, Mailer, MemoryBackend};
/// let backend = MemoryBackend::new().default_from("app@example.com").idempotent("memory", 60_000);
/// let mailer = Mailer::new(Arc::new(MemoryStore::new()), Arc::new(backend.clone()));
/// let mail = MailPayload::new("Receipt").to("ada@example.com").text("Thanks");
/// let op = Some(DeliveryOperation::required("order-42:receipt"));
/// let first = mailer.deliver_later(mail.clone(), op.clone(), EnqueueOptions::new()).await.unwrap();
/// let again = mailer.deliver_later(mail, op, EnqueueOptions::new()).await.unwrap();
/// assert_eq!(first.job_id(), again.job_id());
/// assert_eq!(backend.sent().len(), 0); // nothing is sent until a worker runs the job
/// # });
/// ```
#[derive(Clone)]
pub struct Mailer {
    store: Arc<dyn Producer>,
    backend: Arc<dyn MailBackend>,
}

impl std::fmt::Debug for Mailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mailer")
            .field("capability", &self.backend.idempotency())
            .finish()
    }
}

impl Mailer {
    /// A mailer enqueueing into `store` and sending through `backend`. It only
    /// enqueues, so it takes the [`Producer`] part of a store (an
    /// `Arc<dyn Store>` converts).
    pub fn new(store: Arc<dyn Producer>, backend: Arc<dyn MailBackend>) -> Self {
        Self { store, backend }
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<dyn MailBackend> {
        &self.backend
    }

    /// Sends at once. With a required `operation` the backend must advertise a
    /// capability, accept the id, and the call must not be inside a caller
    /// transaction; the id is passed to the provider as its idempotency key.
    ///
    /// Errors: `mail-delivery-idempotency-unsupported`, `-key-invalid`,
    /// `-transaction-active`, the backend's preparation errors, delivery errors.
    pub async fn deliver_now(
        &self,
        payload: MailPayload,
        operation: Option<DeliveryOperation>,
        context: DeliveryContext,
    ) -> MailResult<Delivered> {
        if let Some(op) = &operation {
            self.check_required(op)?;
        }
        let payload = self.backend.prepare(payload)?;
        if operation.is_some() && context.in_transaction {
            return Err(MailError::TransactionActive);
        }
        self.backend
            .send(&payload, operation.as_ref().map(|op| op.id.as_str()))
            .await
    }

    /// Enqueues a `duraq.mail.deliver` job. With a required `operation`
    /// (`docs/mail.md`): refuses unsupported backends and invalid ids before anything is
    /// written, freezes the backend's defaults into the payload, and enqueues
    /// with `idempotencyKey` = the operation id plus the operation record in one
    /// transaction. An exact replay returns the original job id (also after the
    /// job was pruned); the same id with other content or another provider fails
    /// with `mail-delivery-idempotency-conflict`.
    ///
    /// `options` are the job's enqueue options; with an operation, an
    /// `idempotency_key` other than the operation id is refused
    /// (`mail-delivery-idempotency-key-invalid`).
    pub async fn deliver_later(
        &self,
        payload: MailPayload,
        operation: Option<DeliveryOperation>,
        options: EnqueueOptions,
    ) -> MailResult<EnqueueOutcome> {
        let job = self.prepare_job(payload, operation, options)?;
        self.store.enqueue(job).await.map_err(from_enqueue_error)
    }

    /// Builds the validated job [`Mailer::deliver_later`] enqueues, without I/O
    /// (for callers that enqueue through a store's transactional API).
    pub fn prepare_job(
        &self,
        payload: MailPayload,
        operation: Option<DeliveryOperation>,
        mut options: EnqueueOptions,
    ) -> MailResult<NewJob> {
        let Some(op) = operation else {
            let payload = self.backend.prepare(payload)?;
            let args = to_value(&DeliverArgs {
                payload,
                operation: None,
            })?;
            return Ok(NewJob::new(DELIVER_JOB, args, options)?);
        };
        let cap = self.check_required(&op)?;
        if options
            .idempotency_key
            .as_ref()
            .is_some_and(|k| *k != op.id)
        {
            return Err(MailError::IdempotencyKeyInvalid {
                message: "the job's idempotency key must be the delivery operation id".into(),
            });
        }
        let payload = self.backend.prepare(payload)?;
        let terms = OperationTerms::new(&op.id, &payload, &cap);
        let record = OperationRecord {
            terms: terms.clone(),
            payload: payload.clone(),
        };
        let key = terms.operation_key.clone();
        let args = to_value(&DeliverArgs {
            payload,
            operation: Some(terms),
        })?;
        options.idempotency_key = Some(op.id);
        let job = NewJob::new(DELIVER_JOB, args, options).map_err(from_enqueue_error)?;
        Ok(job.with_operation(NewOperation {
            key,
            data: to_value(&record)?,
        })?)
    }

    /// Capability first, then the id (step 1 of `docs/mail.md`'s required idempotency).
    fn check_required(&self, op: &DeliveryOperation) -> MailResult<crate::IdempotencyCapability> {
        let cap = self
            .backend
            .idempotency()
            .ok_or(MailError::IdempotencyUnsupported)?;
        self.backend.validate_operation_id(&op.id)?;
        Ok(cap)
    }
}

fn to_value<T: serde::Serialize>(v: &T) -> MailResult<serde_json::Value> {
    serde_json::to_value(v)
        .map_err(|e| MailError::invalid(format!("payload is not serializable: {e}")))
}
