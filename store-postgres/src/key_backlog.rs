//! A queue's fairness keys and their queued jobs (`Inspect::fairness_keys`),
//! read through `duraq_jobs_fair`, led by `(priority, queue, fairness_key)`.

use std::collections::BTreeMap;

use duraq_core::inspect::{KeyBacklog, KEY_COUNT_CAP, MAX_KEYS_LISTED};
use duraq_core::Result;

use crate::backend::db::Db;
use crate::claim::lane_sql::KEYED_PRIORITIES;

/// A queue's fairness keys and their queued jobs (`Inspect::fairness_keys`):
/// per priority that keyed jobs hold, one seek per key of the queue and one
/// range per key counted up to the cap.
pub(crate) async fn fairness_keys(db: &Db<'_>, queue: &str) -> Result<Vec<KeyBacklog>> {
    const NEXT_KEY: &str = "SELECT fairness_key FROM {s}.duraq_jobs \
         WHERE status = 'queued' AND fairness_key IS NOT NULL AND priority = $1 \
         AND queue COLLATE \"C\" = $2 AND fairness_key COLLATE \"C\" > $3 \
         ORDER BY fairness_key COLLATE \"C\" LIMIT 1";
    const COUNT: &str = "SELECT count(*) FROM (SELECT 1 FROM {s}.duraq_jobs \
         WHERE status = 'queued' AND fairness_key IS NOT NULL AND priority = $1 \
         AND queue COLLATE \"C\" = $2 AND fairness_key COLLATE \"C\" = $3 LIMIT $4) AS k";
    let priorities: Vec<i64> = db.query_one(KEYED_PRIORITIES, &[]).await?.get(0);
    let cap = i64::try_from(KEY_COUNT_CAP + 1).unwrap_or(i64::MAX);
    let mut keys: BTreeMap<String, u64> = BTreeMap::new();
    for priority in priorities {
        let mut after = String::new();
        for _ in 0..MAX_KEYS_LISTED {
            let Some(row) = db.query_opt(NEXT_KEY, &[&priority, &queue, &after]).await? else {
                break;
            };
            let key: String = row.get(0);
            let n: i64 = db
                .query_one(COUNT, &[&priority, &queue, &key, &cap])
                .await?
                .get(0);
            *keys.entry(key.clone()).or_default() += u64::try_from(n).unwrap_or(0);
            after = key;
        }
    }
    Ok((keys.into_iter().take(MAX_KEYS_LISTED))
        .map(|(key, n)| KeyBacklog::counted(key, n))
        .collect())
}
