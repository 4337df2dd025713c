//! Idempotency scopes recorded by an older binary keep replaying (`docs/idempotency.md`).
//!
//! Why: the request digest changed format (`request.v2` records the timing as
//! requested, so a retried "in 10 minutes" replays). Ownership rows written
//! before that hold the format-1 digest, and a retried immediate or absolute
//! request must still replay rather than fail with `idempotency-conflict`. The
//! Store API can only write the current format, so the row's digest is
//! rewritten here with raw SQL to exactly what the old binary stored.

use std::sync::Arc;

use duraq_core::driver::digest_hex;
use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, EnqueueOutcome, ErrorCode, ManualClock, NewJob};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use rusqlite::Connection;
use serde_json::{json, Value};

/// The format-1 request digest of a job with default options and `timing`.
fn v1_digest(args: Value, queue: &str, timing: Value) -> String {
    digest_hex(
        "request",
        &json!({
            "args": args,
            "queue": queue,
            "maxRetries": 10,
            "concurrency": null,
            "timeoutMs": null,
            "timing": timing,
        }),
    )
}

fn keyed(key: &str) -> EnqueueOptions {
    EnqueueOptions::new().idempotency_key(key)
}

/// Stores `digest` as the request of the scope that owns `job_id`.
fn record_v1(path: &std::path::Path, job_id: &str, digest: &str) {
    let conn = Connection::open(path).unwrap();
    let changed = conn
        .execute(
            "UPDATE duraq_idempotency SET request_digest = ?1 WHERE job_id = ?2",
            [digest, job_id],
        )
        .unwrap();
    assert_eq!(changed, 1, "one ownership row for {job_id}");
}

#[tokio::test]
async fn scopes_recorded_under_the_v1_digest_still_replay() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.db");
    let clock = ManualClock::new(1_700_000_000_000);
    let store =
        SqliteStore::open_with_clock(&path, SqliteOptions::default(), Arc::new(clock.clone()))
            .unwrap();
    let at = 1_700_000_500_000;
    let cases = [
        ("immediate", "now", None, json!("immediate")),
        ("absolute", "at", Some(at), json!({"scheduledAtMs": at})),
    ];
    for (what, key, at, timing) in cases {
        let opts = EnqueueOptions {
            scheduled_at_ms: at,
            ..keyed(key)
        };
        let new = NewJob::new("mail", json!([what]), opts.clone()).unwrap();
        let digest = v1_digest(json!([what]), "default", timing);
        assert_ne!(digest, new.request_digest(), "{what}: the formats differ");
        let id = store.enqueue(new).await.unwrap().job_id().to_owned();
        record_v1(&path, &id, &digest);

        clock.advance(1_000);
        let retry = NewJob::new("mail", json!([what]), opts).unwrap();
        assert_eq!(
            store.enqueue(retry).await.unwrap(),
            EnqueueOutcome::Replayed(id),
            "{what}"
        );
        let other = NewJob::new("mail", json!(["other"]), keyed(key)).unwrap();
        let err = store.enqueue(other).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::IdempotencyConflict, "{what}");
    }
}
