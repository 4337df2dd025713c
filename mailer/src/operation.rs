//! Delivery operations: the durable identity of one logical mail. A producer
//! names the mail with a stable id (`order-42:receipt`); duraq enqueues the
//! delivery job with that id as its idempotency key and stores, in the same
//! transaction, an operation record keyed by a digest of the id. The record
//! outlives the job row (pruning never touches it), so a replay converges on
//! the original job forever, and each attempt reads it to stay inside the
//! provider's idempotency window.

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::backend::IdempotencyCapability;
use crate::payload::MailPayload;

/// Digest kind of [`operation_key`].
pub const OPERATION_KEY_KIND: &str = "mail.operation.v1";

/// How strongly a delivery must be deduplicated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Idempotency {
    /// The backend must suppress duplicates, or the delivery is refused.
    Required,
}

/// `{id, idempotency: required}`: a delivery that must reach the provider at
/// most once under the producer's stable id (`docs/mail.md`).
///
/// ```
/// use duraq_mailer::DeliveryOperation;
/// let op = DeliveryOperation::required("order-42:receipt");
/// assert_eq!(op.id, "order-42:receipt");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryOperation {
    /// The producer's stable id; sent to the provider as the idempotency key.
    pub id: String,
    /// How strongly duplicates must be suppressed.
    pub idempotency: Idempotency,
}

impl DeliveryOperation {
    /// An operation whose delivery must be idempotent.
    pub fn required(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            idempotency: Idempotency::Required,
        }
    }
}

/// The operation record's key: a fixed-size digest of the operation id.
///
/// ```
/// use duraq_mailer::operation_key;
/// assert_eq!(operation_key("a").len(), 64);
/// assert_ne!(operation_key("a"), operation_key("b"));
/// ```
pub fn operation_key(id: &str) -> String {
    duraq_core::driver::digest_hex(OPERATION_KEY_KIND, &json!(id))
}

/// What a required delivery persists, both as the operation record's `data` and
/// (without the payload, which travels beside it) in the job's args.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationTerms {
    /// The operation id (the provider's idempotency key; never rotated).
    pub id: String,
    /// [`operation_key`] of `id`.
    pub operation_key: String,
    /// [`MailPayload::digest`] of the prepared payload.
    pub payload_digest: String,
    /// The provider kind the operation was enqueued for; each attempt refuses
    /// to run against another (`mail-delivery-provider-changed`).
    pub provider_kind: String,
    /// How long (ms) that provider remembers an idempotency key; no attempt
    /// starts once this long has passed since the first one.
    pub retention_ms: i64,
}

impl OperationTerms {
    /// The terms of delivering `payload` (already prepared) under `id` with `cap`.
    pub fn new(id: &str, payload: &MailPayload, cap: &IdempotencyCapability) -> Self {
        Self {
            id: id.to_owned(),
            operation_key: operation_key(id),
            payload_digest: payload.digest(),
            provider_kind: cap.provider_kind.clone(),
            retention_ms: cap.retention_ms,
        }
    }

    /// The capability these terms were made for.
    pub fn capability(&self) -> IdempotencyCapability {
        IdempotencyCapability::new(self.provider_kind.clone(), self.retention_ms)
    }
}

/// The operation record's `data`: the terms plus the persisted payload.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationRecord {
    /// What the delivery was enqueued under (flattened into the record).
    #[serde(flatten)]
    pub terms: OperationTerms,
    /// The prepared payload, so that each attempt can re-check it against
    /// `terms.payload_digest` before anything is sent.
    pub payload: MailPayload,
}

/// The args of a `duraq.mail.deliver` job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliverArgs {
    /// The prepared payload.
    pub payload: MailPayload,
    /// Present for a required-idempotency delivery; absent means at-least-once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<OperationTerms>,
}

/// What `record_operation_result` stores after a delivery.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationResult {
    /// When the provider accepted the mail (ms since the Unix epoch).
    pub delivered_at_ms: i64,
    /// The provider's id for the message, when it gives one (Resend's API
    /// does), to find the mail in the provider's logs.
    pub provider_message_id: Option<String>,
}
