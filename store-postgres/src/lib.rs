//! `duraq-store-postgres`: the `duraq_core::Store` trait on PostgreSQL, for many
//! producer and worker processes on many hosts sharing one database.
//!
//! Not built yet: the PostgreSQL issue fills this crate (tokio-postgres with a
//! deadpool pool, `FOR UPDATE SKIP LOCKED` claims, `LISTEN/NOTIFY` wake-ups).
