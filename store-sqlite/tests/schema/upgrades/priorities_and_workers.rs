//! Version 7, added to the jobs and workers of a version-6 file in place:
//! priorities and rate limits on the jobs (the claim index replacing
//! `duraq_jobs_queued`), and the registration of visible workers.

use duraq_core::driver::WorkerInfo;
use duraq_core::inspect::WorkerState;
use duraq_core::prelude::*;
use duraq_core::EnqueueOptions;
use rusqlite::Connection;

use crate::support::{
    back_to_v6, claim_request, enqueue, job_rowids, open, open_existing, temp_db,
};

/// A version-6 file with a queued job is upgraded in place: `priority` (default
/// 0) and the rate columns are added without rebuilding the table, the claim
/// index replaces `duraq_jobs_queued`, the old row reads priority 0 and no rate
/// limit and is claimed after a new higher-priority, rate-limited job.
#[tokio::test]
async fn upgrade_to_v7_adds_priorities_and_rate_limits_in_place() {
    let (_dir, path) = temp_db("v6.db");
    let store = open(&path);
    let old = enqueue(&store, "j", serde_json::json!([]), EnqueueOptions::new()).await;
    drop(store);
    let conn = Connection::open(&path).unwrap();
    back_to_v6(&conn);
    let before = job_rowids(&conn);
    drop(conn);

    let store = open_existing(&path);
    assert_eq!(store.migration().applied, vec![7, 8]);
    let conn = Connection::open(&path).unwrap();
    assert_eq!(job_rowids(&conn), before, "rows kept in place, not rebuilt");
    let indexes: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'duraq_jobs'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        indexes.contains(&"duraq_jobs_claim_plain".to_owned()),
        "{indexes:?}"
    );
    assert!(
        !indexes.contains(&"duraq_jobs_queued".to_owned()),
        "{indexes:?}"
    );
    let row = store.get_job(&old).await.unwrap().unwrap();
    assert_eq!((row.priority, row.rate_key), (0, None));
    let opts =
        EnqueueOptions::new()
            .priority(9)
            .rate_limit("api", 1, std::time::Duration::from_secs(60));
    let high = enqueue(&store, "j", serde_json::json!([1]), opts).await;
    let claimed: Vec<String> = store
        .claim(&claim_request("w", &["j"], 5))
        .await
        .unwrap()
        .into_iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(claimed, [high, old]);
}

/// A version-6 file (today's before visible workers) with a worker's heartbeat
/// row is upgraded in place: `duraq_workers` gains the registration columns
/// (nullable), the old row keeps its heartbeat and is not listed (it never
/// registered), and a worker registers and is listed after the upgrade.
#[tokio::test]
async fn upgrade_to_v7_adds_worker_registrations_in_place() {
    let (_dir, path) = temp_db("v6.db");
    let store = open(&path);
    store.heartbeat("old").await.unwrap();
    drop(store);
    let conn = Connection::open(&path).unwrap();
    back_to_v6(&conn);
    let beat = |conn: &Connection| -> i64 {
        conn.query_row(
            "SELECT last_heartbeat_ms FROM duraq_workers WHERE worker_id = 'old'",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    let before = beat(&conn);
    drop(conn);

    let store = open_existing(&path);
    assert_eq!(store.migration().applied, vec![7, 8]);
    let conn = Connection::open(&path).unwrap();
    assert_eq!(beat(&conn), before, "the old row kept in place");
    let columns: Vec<(String, bool)> = {
        let mut stmt = conn
            .prepare(
                "SELECT name, \"notnull\" FROM pragma_table_info('duraq_workers') ORDER BY cid",
            )
            .unwrap();
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        rows.collect::<Result<_, _>>().unwrap()
    };
    let added: Vec<_> = columns[2..]
        .iter()
        .map(|(n, nn)| (n.as_str(), *nn))
        .collect();
    assert_eq!(
        added,
        [
            ("host", false),
            ("pid", false),
            ("queues", false),
            ("job_names", false),
            ("slots", false),
            ("started_at_ms", false)
        ]
    );
    assert!(
        store.list_workers(60_000).await.unwrap().is_empty(),
        "a heartbeat-only row is not a registered worker"
    );
    let info = WorkerInfo {
        worker_id: "new".into(),
        host: "h".into(),
        pid: 7,
        queues: None,
        job_names: vec!["j".into()],
        slots: 3,
    };
    store.register_worker(&info).await.unwrap();
    let listed = store.list_workers(60_000).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (&listed[0].info, listed[0].state),
        (&info, WorkerState::Alive)
    );
    drop(store);
    assert!(open_existing(&path).migration().applied.is_empty());
}
