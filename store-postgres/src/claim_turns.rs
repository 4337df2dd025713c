//! The claim's walk once some queued job has a fairness key: a queue-priority
//! level and a job priority at a time, in the fair turns core's `take_turns`
//! decides. The jobs without a key are read from the plain claim index and
//! each key's from `duraq_jobs_fair`, led by `(priority, queue, fairness_key)`:
//! a lane's due candidates are one range (`FOR UPDATE SKIP LOCKED`, after a
//! keyset cursor) and the next lane after another is one seek, so a key's
//! backlog is never walked to reach another key's jobs.

use std::collections::BTreeMap;

use duraq_core::driver::rules::{claim_levels, QueueSet};
use duraq_core::driver::steps::{take_turns, Claim, Turn, TurnReads};
use duraq_core::driver::ClaimRequest;
use duraq_core::inspect::{KeyBacklog, KEY_COUNT_CAP, MAX_KEYS_LISTED};
use duraq_core::{Job, Result};

use crate::backend::db::Db;
use crate::claim::Reads;
use crate::rows::{loaded_from_row, JOB_COLUMNS};

/// The distinct priorities of queued jobs with a fairness key, highest first
/// (a loose scan of `duraq_jobs_fair`).
const KEYED_PRIORITIES: &str = "WITH RECURSIVE k AS (\
     SELECT (SELECT priority FROM {s}.duraq_jobs WHERE status = 'queued' \
     AND fairness_key IS NOT NULL ORDER BY priority DESC LIMIT 1) AS p \
     UNION ALL SELECT (SELECT priority FROM {s}.duraq_jobs WHERE status = 'queued' \
     AND fairness_key IS NOT NULL AND priority < k.p ORDER BY priority DESC LIMIT 1) \
     FROM k WHERE k.p IS NOT NULL) \
     SELECT ARRAY(SELECT p FROM k WHERE p IS NOT NULL)";

/// The next lane after `($2, $3)` at priority `$1`, whatever its queue.
const LANE_AFTER: &str = "SELECT queue, fairness_key FROM {s}.duraq_jobs \
     WHERE status = 'queued' AND fairness_key IS NOT NULL AND priority = $1 \
     AND (queue COLLATE \"C\", fairness_key COLLATE \"C\") > ($2, $3) \
     ORDER BY queue COLLATE \"C\", fairness_key COLLATE \"C\" LIMIT 1";

/// The first lane of the first queue after `$2` at priority `$1`.
const QUEUE_AFTER: &str = "SELECT queue, fairness_key FROM {s}.duraq_jobs \
     WHERE status = 'queued' AND fairness_key IS NOT NULL AND priority = $1 \
     AND queue COLLATE \"C\" > $2 \
     ORDER BY queue COLLATE \"C\", fairness_key COLLATE \"C\" LIMIT 1";

/// A lane's candidates: `lane` is the filter that picks it.
fn candidates_sql(lane: &str) -> String {
    format!(
        "SELECT {JOB_COLUMNS} FROM {{s}}.duraq_jobs WHERE status = 'queued' {lane} \
         AND priority = $1 AND scheduled_at_ms <= $2 AND job_name = ANY($3) \
         AND queue NOT IN (SELECT queue FROM {{s}}.duraq_paused_queues) \
         AND (scheduled_at_ms, created_at_ms, id COLLATE \"C\") > ($5, $6, $7) \
         ORDER BY scheduled_at_ms, created_at_ms, id COLLATE \"C\" LIMIT $8 \
         FOR UPDATE SKIP LOCKED"
    )
}

/// Walks every level and priority in fair turns; the ids of the candidates
/// some job depends on.
pub(crate) async fn walk(
    db: &Db<'_>,
    req: &ClaimRequest,
    claim: &mut Claim<'_>,
    mut priorities: Vec<i64>,
    now: i64,
) -> Result<Vec<String>> {
    let mut with_dependents = Vec::new();
    if req.limit == 0 || req.job_names.is_empty() {
        return Ok(with_dependents);
    }
    let keyed: Vec<i64> = db.query_one(KEYED_PRIORITIES, &[]).await?.get(0);
    priorities.extend(keyed);
    priorities.sort_unstable_by(|a, b| b.cmp(a));
    priorities.dedup();
    let sql = Sql {
        plain_in: candidates_sql("AND fairness_key IS NULL AND queue = ANY($4)"),
        plain_not_in: candidates_sql("AND fairness_key IS NULL AND NOT (queue = ANY($4))"),
        keyed: candidates_sql(
            "AND fairness_key IS NOT NULL AND queue COLLATE \"C\" = ($4::text[])[1] \
             AND fairness_key COLLATE \"C\" = $9",
        ),
    };
    for level in claim_levels(req) {
        for priority in &priorities {
            let mut lanes = Lanes {
                db,
                req,
                sql: &sql,
                level: &level,
                priority: *priority,
                now,
                with_dependents: &mut with_dependents,
            };
            take_turns(claim, &req.turns, &mut lanes, &mut Reads(db)).await?;
            if claim.is_full() {
                return Ok(with_dependents);
            }
        }
    }
    Ok(with_dependents)
}

/// The candidate statements of a walk.
struct Sql {
    plain_in: String,
    plain_not_in: String,
    keyed: String,
}

/// One walk's reads.
struct Lanes<'a, 'n> {
    db: &'a Db<'n>,
    req: &'a ClaimRequest,
    sql: &'a Sql,
    level: &'a QueueSet,
    priority: i64,
    now: i64,
    with_dependents: &'a mut Vec<String>,
}

impl Lanes<'_, '_> {
    async fn lane(
        &self,
        sql: &str,
        queue: &str,
        key: Option<&str>,
    ) -> Result<Option<(String, String)>> {
        let row = match key {
            Some(key) => {
                self.db
                    .query_opt(sql, &[&self.priority, &queue, &key])
                    .await?
            }
            None => self.db.query_opt(sql, &[&self.priority, &queue]).await?,
        };
        Ok(row.map(|r| (r.get(0), r.get(1))))
    }
}

impl TurnReads for Lanes<'_, '_> {
    async fn next_lane(&mut self, after: Option<(&str, &str)>) -> Result<Option<(String, String)>> {
        // Queue names and keys are never empty: ("", "") is before every lane.
        let (queue, key) = after.unwrap_or(("", ""));
        let mut next = self.lane(LANE_AFTER, queue, Some(key)).await?;
        // A queue outside the level is passed by whole, one seek.
        while let Some((queue, _)) = &next {
            if self.level.contains(queue) {
                break;
            }
            next = self.lane(QUEUE_AFTER, queue, None).await?;
        }
        Ok(next)
    }

    async fn candidates(&mut self, lane: &Turn, after: Option<&Job>, n: usize) -> Result<Vec<Job>> {
        let (at, created, id) = after.map_or((i64::MIN, i64::MIN, ""), |j| {
            (j.scheduled_at_ms, j.created_at_ms, j.id.as_str())
        });
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        let common = (self.priority, self.now, &self.req.job_names);
        let rows = match lane {
            Turn::Unkeyed => {
                let (sql, queues) = match self.level {
                    QueueSet::In(qs) => (&self.sql.plain_in, qs),
                    QueueSet::NotIn(qs) => (&self.sql.plain_not_in, qs),
                };
                let params: [&(dyn tokio_postgres::types::ToSql + Sync); 8] = [
                    &common.0, &common.1, common.2, queues, &at, &created, &id, &n,
                ];
                self.db.query(sql, &params).await?
            }
            Turn::Key { queue, key } => {
                let queues = [queue.as_str()];
                let queues: &[&str] = &queues;
                let params: [&(dyn tokio_postgres::types::ToSql + Sync); 9] = [
                    &common.0, &common.1, common.2, &queues, &at, &created, &id, &n, key,
                ];
                self.db.query(&self.sql.keyed, &params).await?
            }
        };
        let mut jobs = Vec::with_capacity(rows.len());
        for row in &rows {
            let loaded = loaded_from_row(row)?;
            if loaded.has_dependents {
                self.with_dependents.push(loaded.job.id.clone());
            }
            jobs.push(loaded.job);
        }
        Ok(jobs)
    }
}

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
