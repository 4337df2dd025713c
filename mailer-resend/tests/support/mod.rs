//! Test support: the mailer's SMTP listener and store matrix (shared source),
//! plus a small HTTP listener standing in for the Resend API.
#![allow(dead_code)]

#[path = "../../../mailer/tests/support/common.rs"]
pub mod common;
pub mod http;
#[path = "../../../mailer/tests/support/smtp.rs"]
pub mod smtp;
