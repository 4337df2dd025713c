//! Version 8: a job row keeps its args digest only while it has a dedupe key
//! (the one lookup that reads it), and files written before keep theirs.

use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, EnqueueOutcome, NewJob};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use rusqlite::Connection;
use serde_json::{json, Value};

mod common;

fn plain(args: Value, queue: &str) -> NewJob {
    NewJob::new("j", args, EnqueueOptions::new().queue(queue)).unwrap()
}

fn dedupe(args: Value, queue: &str) -> NewJob {
    let opts = EnqueueOptions::new()
        .queue(queue)
        .deduplicate_while_queued();
    NewJob::new("j", args, opts).unwrap()
}

/// The stored `(args_digest, dedupe_key)` of job `id`.
fn stored(conn: &Connection, id: &str) -> (String, Option<String>) {
    conn.query_row(
        "SELECT args_digest, dedupe_key FROM duraq_jobs WHERE id = ?1",
        [id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .unwrap()
}

/// A version-7 file (every row with its digest) is upgraded without touching a
/// row; old and new jobs of a scope are both matched by its first dedupe
/// request; from then on the scope's new jobs keep their digest, other scopes'
/// jobs do not.
#[tokio::test]
async fn upgrade_to_v8_keeps_old_digests_and_keys_rows_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v7.db");
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let old_args = json!({"b": [1, {"y": 2, "x": 1}], "a": "old"});
    let old = store.enqueue(plain(old_args, "q")).await.unwrap();
    let old = old.job_id().to_owned();
    drop(store);
    let conn = Connection::open(&path).unwrap();
    common::back_to_v7(&conn);
    let (old_digest, old_key) = stored(&conn, &old);
    assert_eq!(
        (old_digest.len(), old_key),
        (64, None),
        "as version 7 wrote it"
    );
    drop(conn);

    let store = SqliteStore::open_existing(&path, SqliteOptions::default()).unwrap();
    assert_eq!(store.migration().applied, vec![8]);
    let batch = vec![
        plain(json!({"n": 1, "a": "new"}), "q"),
        plain(json!([2]), "q"),
    ];
    let new: Vec<String> = store
        .enqueue_batch(batch)
        .await
        .unwrap()
        .iter()
        .map(|o| o.job_id().to_owned())
        .collect();
    let conn = Connection::open(&path).unwrap();
    assert_eq!(
        stored(&conn, &old).0,
        old_digest,
        "an old row keeps its digest"
    );
    assert_eq!(stored(&conn, &new[0]), (String::new(), None));

    let out = store
        .enqueue(dedupe(json!({"a": "old", "b": [1, {"x": 1, "y": 2}]}), "q"))
        .await
        .unwrap();
    assert_eq!(out, EnqueueOutcome::Deduplicated(old.clone()));
    let out = store
        .enqueue(dedupe(json!({"a": "new", "n": 1}), "q"))
        .await
        .unwrap();
    assert_eq!(out, EnqueueOutcome::Deduplicated(new[0].clone()));
    let (digest, key) = stored(&conn, &new[1]);
    assert_eq!(key.as_deref(), Some(&digest[..16]), "keyed with its digest");

    let keyed = store.enqueue(plain(json!([3]), "q")).await.unwrap();
    let (digest, key) = stored(&conn, keyed.job_id());
    assert_eq!((digest.len(), key.map(|k| k.len())), (64, Some(16)));
    let elsewhere = store.enqueue(plain(json!([3]), "other")).await.unwrap();
    assert_eq!(stored(&conn, elsewhere.job_id()), (String::new(), None));
}
