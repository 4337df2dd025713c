//! `duraq-mailer`: mail payloads, the backend trait, generic SMTP (lettre), an
//! in-memory backend for tests, required-idempotency delivery operations stored
//! with the job, and the built-in `duraq.mail.deliver` job (`docs/mail.md`).
//! [`Mailer`] enqueues through a store's [`duraq_core::Producer`] part; the
//! delivery job reads and stamps operation records through its
//! [`duraq_core::MailOperations`] part.
//!
//! Why operations: a mail provider that suppresses duplicates does so only for
//! one key and only for a while. duraq makes the key the producer's stable
//! operation id, stores the operation atomically with its delivery job (so a
//! replay finds it, even after the job was pruned), and refuses to send once the
//! provider's window may have closed, rather than risk a second delivery.
//!
//! Why a [`Scrubber`]: servers echo credentials (the SMTP AUTH line, an API
//! key) in their error replies, and that text would otherwise land in logs and
//! `lastError`. Every provider reply passes one before it becomes a
//! [`MailError`], and SMTP credentials are refused over plaintext except to
//! loopback (`SECURITY.md`).
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use duraq_core::{EnqueueOptions, MemoryStore};
//! use duraq_mailer::{DeliveryOperation, MailPayload, Mailer, SmtpBackend, SmtpSettings};
//! let smtp = SmtpBackend::new(SmtpSettings::new("smtp.example.com", 587)).unwrap();
//! let mailer = Mailer::new(Arc::new(MemoryStore::new()), Arc::new(smtp));
//! let mail = MailPayload::new("Hi").from("app@example.com").to("ada@example.com").text("Hello");
//! // Generic SMTP is at-least-once: requiring idempotency fails before enqueue.
//! let err = mailer
//!     .deliver_later(mail.clone(), Some(DeliveryOperation::required("op-1")), EnqueueOptions::new())
//!     .await
//!     .unwrap_err();
//! assert_eq!(err.code(), "mail-delivery-idempotency-unsupported");
//! // Without an operation the job is simply enqueued.
//! mailer.deliver_later(mail, None, EnqueueOptions::new()).await.unwrap();
//! # });
//! ```

#![warn(missing_docs)]

mod backend;
mod error;
mod job;
mod mailer;
mod memory;
mod operation;
mod payload;
mod scrub;
mod secret;
mod settings;
mod smtp;

pub use backend::{freeze_sender, Delivered, IdempotencyCapability, MailBackend};
pub use error::{MailError, MailResult};
pub use job::{MailDeliverJob, DELIVER_JOB};
pub use mailer::{DeliveryContext, Mailer};
pub use memory::{MemoryBackend, SentMail};
pub use operation::{
    operation_key, DeliverArgs, DeliveryOperation, Idempotency, OperationRecord, OperationResult,
    OperationTerms, OPERATION_KEY_KIND,
};
pub use payload::{MailPayload, PAYLOAD_DIGEST_KIND};
pub use scrub::{ProviderFailure, Scrubber, MASK};
pub use secret::Secret;
pub use settings::{SmtpSettings, TlsMode};
pub use smtp::{build_message, SmtpBackend, SmtpClient};
