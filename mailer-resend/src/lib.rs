//! `duraq-mailer-resend`: Resend backends for `duraq-mailer`: SMTP with the
//! `Resend-Idempotency-Key` header and the HTTP API with `Idempotency-Key`.
//!
//! Not built yet: the mail issue fills this crate (SPEC §10).
