//! `duraq-mailer`: mail payloads, the backend trait, generic SMTP (lettre), and
//! required-idempotency delivery operations stored through `duraq_core::Store`.
//!
//! Not built yet: the mail issue fills this crate (SPEC §10).
