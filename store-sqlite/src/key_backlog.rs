//! A queue's fairness keys and their queued jobs (`Inspect::fairness_keys`),
//! read through `duraq_jobs_fair`, led by `(priority, queue, fairness_key)`:
//! per priority that keyed jobs hold, one seek per key of the queue and one
//! range per key counted up to the cap, so a key's backlog of a million jobs
//! costs at most the cap's rows.

use std::collections::BTreeMap;

use duraq_core::inspect::{KeyBacklog, KEY_COUNT_CAP, MAX_KEYS_LISTED};
use duraq_core::Result;
use rusqlite::{params, Connection, OptionalExtension};

use crate::error::SqlResult;

/// The distinct priorities of queued jobs with a fairness key.
fn keyed_priorities(conn: &Connection) -> Result<Vec<i64>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT priority FROM duraq_jobs INDEXED BY duraq_jobs_fair \
             WHERE status = 'queued' AND fairness_key IS NOT NULL AND priority < ?1 \
             ORDER BY priority DESC LIMIT 1",
        )
        .db()?;
    let mut priorities = Vec::new();
    let mut below = i64::MAX;
    while let Some(p) = stmt.query_row([below], |r| r.get(0)).optional().db()? {
        priorities.push(p);
        below = p;
    }
    Ok(priorities)
}

pub(crate) fn fairness_keys(conn: &Connection, queue: &str) -> Result<Vec<KeyBacklog>> {
    let mut next_key = conn
        .prepare_cached(
            "SELECT fairness_key FROM duraq_jobs INDEXED BY duraq_jobs_fair \
             WHERE status = 'queued' AND fairness_key IS NOT NULL AND priority = ?1 \
             AND queue = ?2 AND fairness_key > ?3 ORDER BY fairness_key LIMIT 1",
        )
        .db()?;
    let mut count = conn
        .prepare_cached(
            "SELECT count(*) FROM (SELECT 1 FROM duraq_jobs INDEXED BY duraq_jobs_fair \
             WHERE status = 'queued' AND fairness_key = ?3 AND priority = ?1 \
             AND queue = ?2 LIMIT ?4)",
        )
        .db()?;
    let mut keys: BTreeMap<String, u64> = BTreeMap::new();
    for priority in keyed_priorities(conn)? {
        let mut after = String::new();
        for _ in 0..MAX_KEYS_LISTED {
            let key: Option<String> = next_key
                .query_row(params![priority, queue, after], |r| r.get(0))
                .optional()
                .db()?;
            let Some(key) = key else { break };
            let n: i64 = count
                .query_row(params![priority, queue, key, KEY_COUNT_CAP + 1], |r| {
                    r.get(0)
                })
                .db()?;
            *keys.entry(key.clone()).or_default() += n as u64;
            after = key;
        }
    }
    Ok((keys.into_iter().take(MAX_KEYS_LISTED))
        .map(|(key, n)| KeyBacklog::counted(key, n))
        .collect())
}
