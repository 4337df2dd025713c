//! An in-memory backend for tests: it records every mail it is asked to send
//! (with the idempotency key it was given) instead of sending it, and can be
//! configured to advertise a capability, to freeze a default sender, and to
//! fail its next sends, so delivery logic can be tested without a network.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;

use crate::backend::{freeze_sender, Delivered, IdempotencyCapability, MailBackend};
use crate::error::{MailError, MailResult};
use crate::payload::MailPayload;

/// One mail the [`MemoryBackend`] accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SentMail {
    /// The mail as the backend received it (after its defaults were applied).
    pub payload: MailPayload,
    /// The idempotency key a real provider would have been given: the delivery
    /// operation id, or `None` for an at-least-once delivery.
    pub idempotency_key: Option<String>,
}

#[derive(Debug, Default)]
struct Inner {
    sent: Vec<SentMail>,
    failures: VecDeque<(String, bool)>,
    send_calls: usize,
}

/// A recording backend; clones share one record.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use duraq_mailer::{MailBackend, MailPayload, MemoryBackend};
/// let backend = MemoryBackend::new();
/// backend.send(&MailPayload::new("s").to("a@example.com").text("t"), Some("k")).await.unwrap();
/// assert_eq!(backend.sent()[0].idempotency_key.as_deref(), Some("k"));
/// # });
/// ```
#[derive(Clone, Debug, Default)]
pub struct MemoryBackend {
    inner: Arc<Mutex<Inner>>,
    capability: Option<IdempotencyCapability>,
    default_from: Option<String>,
}

impl MemoryBackend {
    /// A backend without capability or default sender.
    pub fn new() -> Self {
        Self::default()
    }

    /// Advertises an idempotency capability.
    pub fn idempotent(mut self, provider_kind: impl Into<String>, retention_ms: i64) -> Self {
        self.capability = Some(IdempotencyCapability::new(provider_kind, retention_ms));
        self
    }

    /// Freezes `from` into payloads without a sender.
    pub fn default_from(mut self, from: impl Into<String>) -> Self {
        self.default_from = Some(from.into());
        self
    }

    /// Makes the next send fail (transient unless `permanent`) with `message`.
    pub fn fail_next(&self, message: impl Into<String>, permanent: bool) {
        self.lock().failures.push_back((message.into(), permanent));
    }

    /// Every mail accepted so far, in order.
    pub fn sent(&self) -> Vec<SentMail> {
        self.lock().sent.clone()
    }

    /// How many times `send` was called (accepted or failed).
    pub fn send_calls(&self) -> usize {
        self.lock().send_calls
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait]
impl MailBackend for MemoryBackend {
    fn idempotency(&self) -> Option<IdempotencyCapability> {
        self.capability.clone()
    }

    fn prepare(&self, payload: MailPayload) -> MailResult<MailPayload> {
        payload.validate()?;
        match &self.default_from {
            Some(from) => freeze_sender(payload, Some(from)),
            None => Ok(payload),
        }
    }

    async fn send(
        &self,
        payload: &MailPayload,
        idempotency_key: Option<&str>,
    ) -> MailResult<Delivered> {
        payload.validate()?;
        let mut inner = self.lock();
        inner.send_calls += 1;
        if let Some((message, permanent)) = inner.failures.pop_front() {
            return Err(if permanent {
                MailError::Rejected { message }
            } else {
                MailError::Transient {
                    message,
                    retry_after: Some(Duration::from_secs(1)),
                }
            });
        }
        inner.sent.push(SentMail {
            payload: payload.clone(),
            idempotency_key: idempotency_key.map(str::to_owned),
        });
        Ok(Delivered {
            provider_message_id: Some(format!("memory-{}", inner.sent.len())),
        })
    }
}
