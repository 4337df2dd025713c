//! Idempotency scopes recorded by an older binary keep replaying (`docs/idempotency.md`).
//! Needs `DATABASE_URL`.
//!
//! Why: the request digest changed format (`request.v2` records the timing as
//! requested, so a retried "in 10 minutes" replays). Ownership rows written
//! before that hold the format-1 digest, and a retried immediate or absolute
//! request must still replay rather than fail with `idempotency-conflict`. The
//! Store API can only write the current format, so the row's digest is
//! rewritten here with raw SQL to exactly what the old binary stored.

mod common;

mod postgres {
    use std::sync::Arc;

    use duraq_core::driver::digest_hex;
    use duraq_core::prelude::*;
    use duraq_core::{EnqueueOptions, EnqueueOutcome, ErrorCode, ManualClock, NewJob};
    use duraq_store_postgres::PostgresStore;
    use serde_json::{json, Value};

    use crate::common::{options, raw_client, schema, url};

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

    #[tokio::test]
    async fn scopes_recorded_under_the_v1_digest_still_replay() {
        let s = schema();
        let clock = ManualClock::new(1_700_000_000_000);
        let store = PostgresStore::connect_with_clock(&url(), options(&s), Arc::new(clock.clone()))
            .await
            .unwrap();
        let client = raw_client().await;
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
            let sql =
                format!("UPDATE {s}.duraq_idempotency SET request_digest = $1 WHERE job_id = $2");
            let changed = client.execute(&sql, &[&digest, &id]).await.unwrap();
            assert_eq!(changed, 1, "one ownership row for {id}");

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
}
