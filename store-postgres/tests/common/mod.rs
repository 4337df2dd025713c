//! Helpers shared by the PostgreSQL integration tests: the server from
//! `DATABASE_URL` (required: the tests fail loudly without it) and a fresh,
//! uniquely named schema per test.

#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use duraq_core::{EnqueueOptions, NewJob};
use duraq_store_postgres::{PostgresOptions, PostgresStore};
use serde_json::json;
use tokio_postgres::NoTls;

pub fn url() -> String {
    std::env::var("DATABASE_URL").ok().filter(|u| !u.is_empty()).expect(
        "DATABASE_URL is not set: run `cargo xtask test-all`, or `cargo xtask pg` and export its URL",
    )
}

pub fn schema() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let micros = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    format!(
        "duraq_pg_{}_{micros}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

pub fn options(schema: &str) -> PostgresOptions {
    PostgresOptions {
        schema: Some(schema.to_owned()),
        pool_size: 4,
        ..PostgresOptions::default()
    }
}

pub async fn open(schema: &str) -> duraq_core::Result<PostgresStore> {
    PostgresStore::connect(&url(), options(schema)).await
}

/// Opens the existing schema `schema` without creating it: an older duraq
/// schema is upgraded, anything else refused.
pub async fn open_existing(schema: &str) -> duraq_core::Result<PostgresStore> {
    PostgresStore::connect_existing(&url(), options(schema)).await
}

pub async fn raw_client() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&url(), NoTls)
        .await
        .expect("connect");
    tokio::spawn(connection);
    client
}

/// The file nodes of `tables` in `schema`, in that order. A table keeps its
/// file node unless it is rewritten, so an upgrade that changes one rewrote
/// the table rather than altering it in place.
pub async fn filenodes(client: &tokio_postgres::Client, schema: &str, tables: &[&str]) -> Vec<i64> {
    client
        .query_one(
            "SELECT array_agg(pg_relation_filenode(format('%I.%I', $1::text, t)::regclass)::int8 \
             ORDER BY n) FROM unnest($2::text[]) WITH ORDINALITY AS u(t, n)",
            &[&schema, &tables],
        )
        .await
        .expect("filenodes")
        .get(0)
}

pub fn job(name: &str, opts: EnqueueOptions) -> NewJob {
    NewJob::new(name, json!([1]), opts).expect("valid job")
}

/// The next count delta on `rx`, or a panic naming `what` after 10 s.
pub async fn next_delta(
    rx: &mut tokio::sync::broadcast::Receiver<duraq_core::inspect::CountDelta>,
    what: &str,
) -> duraq_core::inspect::CountDelta {
    tokio::time::timeout(std::time::Duration::from_secs(10), rx.recv())
        .await
        .unwrap_or_else(|_| panic!("{what} within 10 s"))
        .expect("delta stream open")
}

/// A claim of up to `limit` jobs named `j` by worker `w`.
pub fn claim_req(limit: usize) -> duraq_core::driver::ClaimRequest {
    duraq_core::driver::ClaimRequest {
        worker_id: "w".into(),
        job_names: vec!["j".into()],
        limit,
        ..duraq_core::driver::ClaimRequest::default()
    }
}

/// A claim of one job named `name` by worker `w`.
pub fn claim_of(name: &str) -> duraq_core::driver::ClaimRequest {
    duraq_core::driver::ClaimRequest {
        worker_id: "w".into(),
        job_names: vec![name.into()],
        limit: 1,
        ..duraq_core::driver::ClaimRequest::default()
    }
}

/// A session that holds `schema`'s paused-queues table (which only a claim's
/// candidate reads touch) until it ends its transaction, and its backend pid.
pub async fn hold_paused_queues(schema: &str) -> (tokio_postgres::Client, i32) {
    let holder = raw_client().await;
    holder
        .batch_execute(&format!(
            "BEGIN; LOCK TABLE {schema}.duraq_paused_queues IN ACCESS EXCLUSIVE MODE"
        ))
        .await
        .expect("lock");
    let pid = holder
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .expect("pid")
        .get(0);
    (holder, pid)
}

/// Waits until a statement of `schema` containing `text` is blocked by the
/// backend `holder`, and returns the blocked backend's pid. The server cannot
/// announce it, so this polls (as PostgreSQL's isolation tester does); the
/// pause only paces the polls, the condition is what is waited for.
pub async fn blocked_by(holder: i32, schema: &str, text: &str) -> i32 {
    let watcher = raw_client().await;
    let blocked = "SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)) \
                   AND strpos(query, $2) > 0 AND strpos(query, $3) > 0";
    for _ in 0..10_000 {
        let row = watcher
            .query_opt(blocked, &[&holder, &schema, &text])
            .await
            .expect("pg_stat_activity");
        if let Some(row) = row {
            return row.get(0);
        }
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    panic!("no statement of {schema} waited for backend {holder}");
}
