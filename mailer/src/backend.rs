//! The backend trait. A backend does three things for the delivery pipeline:
//! it says whether it can suppress duplicates ([`MailBackend::idempotency`]),
//! it prepares a payload before anything is persisted (freezing defaults such
//! as the sender into it, so the digest covers what will really be sent, and
//! refusing what it could never send), and it sends. Preparation and operation
//! id validation are pure, so every refusal happens before enqueue and I/O.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::error::{MailError, MailResult};
use crate::payload::MailPayload;

/// A provider's duplicate suppression: mails sent with the same idempotency key
/// within `retention_ms` of the first are delivered once.
///
/// ```
/// use duraq_mailer::IdempotencyCapability;
/// let cap = IdempotencyCapability::new("resend-api", 24 * 60 * 60 * 1000);
/// assert_eq!(cap.provider_kind, "resend-api");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdempotencyCapability {
    /// A stable name of the provider protocol (`resend-smtp`, `resend-api`).
    pub provider_kind: String,
    /// How long the provider remembers a key, in milliseconds.
    pub retention_ms: i64,
}

impl IdempotencyCapability {
    /// A capability of `provider_kind` remembering keys for `retention_ms`.
    pub fn new(provider_kind: impl Into<String>, retention_ms: i64) -> Self {
        Self {
            provider_kind: provider_kind.into(),
            retention_ms,
        }
    }
}

/// A successful hand-over to the provider.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Delivered {
    /// The provider's id for the message (API id, or the SMTP server's reply).
    pub provider_message_id: Option<String>,
}

/// A mail backend.
///
/// ```
/// use duraq_mailer::{MailBackend, MailPayload, MemoryBackend};
/// let backend = MemoryBackend::new().default_from("app@example.com");
/// let prepared = backend.prepare(MailPayload::new("Hi").to("a@example.com").text("x")).unwrap();
/// assert_eq!(prepared.from.as_deref(), Some("app@example.com"));
/// assert!(backend.idempotency().is_none());
/// ```
#[async_trait]
pub trait MailBackend: Send + Sync + 'static {
    /// The duplicate suppression this backend offers; `None` (the default) means
    /// at-least-once delivery only.
    fn idempotency(&self) -> Option<IdempotencyCapability> {
        None
    }

    /// Checks a delivery operation id against the provider's rules. The default
    /// accepts what `duraq-core` accepts as an idempotency key (1–1024 bytes).
    /// Errors: `mail-delivery-idempotency-key-invalid`.
    fn validate_operation_id(&self, id: &str) -> MailResult<()> {
        duraq_core::IdempotencyKey::new(id).map(drop).map_err(|e| {
            MailError::IdempotencyKeyInvalid {
                message: e.to_string(),
            }
        })
    }

    /// Validates `payload` and freezes this backend's defaults into it. Called
    /// before enqueue (and before a direct send); must not do I/O.
    fn prepare(&self, payload: MailPayload) -> MailResult<MailPayload> {
        payload.validate()?;
        Ok(payload)
    }

    /// Sends a prepared payload. `idempotency_key` is the delivery operation id
    /// when delivery is required to be idempotent; a backend that advertises a
    /// capability must pass it to the provider. Must refuse (without I/O) what
    /// [`MailBackend::prepare`] would refuse.
    async fn send(
        &self,
        payload: &MailPayload,
        idempotency_key: Option<&str>,
    ) -> MailResult<Delivered>;
}

#[async_trait]
impl<B: MailBackend + ?Sized> MailBackend for std::sync::Arc<B> {
    fn idempotency(&self) -> Option<IdempotencyCapability> {
        (**self).idempotency()
    }
    fn validate_operation_id(&self, id: &str) -> MailResult<()> {
        (**self).validate_operation_id(id)
    }
    fn prepare(&self, payload: MailPayload) -> MailResult<MailPayload> {
        (**self).prepare(payload)
    }
    async fn send(
        &self,
        payload: &MailPayload,
        idempotency_key: Option<&str>,
    ) -> MailResult<Delivered> {
        (**self).send(payload, idempotency_key).await
    }
}

/// Freezes `default_from` into a payload without a sender; shared by backends.
///
/// ```
/// use duraq_mailer::{freeze_sender, MailPayload};
/// let p = freeze_sender(MailPayload::new("s"), Some("app@example.com")).unwrap();
/// assert_eq!(p.from.as_deref(), Some("app@example.com"));
/// assert_eq!(freeze_sender(MailPayload::new("s"), None).unwrap_err().code(), "mail-delivery-from-missing");
/// ```
pub fn freeze_sender(
    mut payload: MailPayload,
    default_from: Option<&str>,
) -> MailResult<MailPayload> {
    if payload.from.as_deref().is_none_or(|f| f.trim().is_empty()) {
        payload.from = Some(default_from.ok_or(MailError::FromMissing)?.to_owned());
    }
    Ok(payload)
}
