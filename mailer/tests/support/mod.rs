//! Test support for the mailer's integration tests (also included by
//! `duraq-mailer-resend`'s tests through `#[path]`).
#![allow(dead_code)]

pub mod common;
pub mod smtp;
