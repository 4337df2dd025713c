//! `duraq-mailer-resend`: Resend backends for `duraq-mailer` (`docs/mail.md`): SMTP
//! with the `Resend-Idempotency-Key` header and the HTTP API with the
//! `Idempotency-Key` header. Both advertise a 24-hour idempotency capability,
//! so required-idempotency deliveries through them are deduplicated by Resend
//! for as long as duraq lets them be attempted.
//!
//! Which one: the API backend answers with the provider's message id (kept on
//! the delivery operation) and tells a conflict, a rate limit and a refusal
//! apart exactly, so it retries only what can succeed; the SMTP backend fits
//! where only SMTP may leave the network. Both refuse a caller header that would
//! override the idempotency key, and both keep the API key out of every error.
//!
//! ```
//! use duraq_mailer::{MailBackend, SmtpSettings, TlsMode};
//! use duraq_mailer_resend::{ResendSmtpBackend, RESEND_RETENTION_MS};
//! let smtp = ResendSmtpBackend::new(SmtpSettings::new("smtp.resend.com", 465).tls(TlsMode::Tls)).unwrap();
//! assert_eq!(smtp.idempotency().unwrap().retention_ms, RESEND_RETENTION_MS);
//! ```

#![warn(missing_docs)]

mod api;
mod id;
mod smtp;

pub use api::{ResendApiBackend, ResendApiSettings, RESEND_API_BASE_URL, USER_AGENT};
pub use id::{
    refuse_reserved_header, validate_resend_id, MAX_ID_CHARS, RESEND_API_KIND,
    RESEND_IDEMPOTENCY_HEADER, RESEND_RETENTION_MS, RESEND_SMTP_KIND,
};
pub use smtp::{ResendSmtpBackend, RESEND_SMTP_HOST};
