//! The rows behind a schedule key's ownership (`duraq_schedule_owners`) and the
//! per-key advisory lock: the primitives that both the keyed calls
//! ([`crate::schedule`]) and every transition that ends a run
//! ([`crate::admin`]) need, kept apart so that those two modules depend on
//! this one and not on each other.

use duraq_core::Result;

use crate::backend::db::Db;

/// Serializes every mutation of `key` in this schema until the transaction ends.
pub(crate) async fn lock_key(db: &Db<'_>, key: &str) -> Result<()> {
    let class = format!("duraq.schedule:{}", db.names.schema);
    db.execute(
        "SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))::text",
        &[&class, &key],
    )
    .await?;
    Ok(())
}

/// Drops `key`'s ownership if (and only if) it still points at `job_id`.
pub(crate) async fn release_owner(db: &Db<'_>, key: Option<&str>, job_id: &str) -> Result<()> {
    if let Some(key) = key {
        db.execute(
            "DELETE FROM {s}.duraq_schedule_owners WHERE schedule_key = $1 AND job_id = $2",
            &[&key, &job_id],
        )
        .await?;
    }
    Ok(())
}

/// [`release_owner`] for many (key, job) pairs at once.
pub(crate) async fn release_owners(db: &Db<'_>, keys: &[String], job_ids: &[String]) -> Result<()> {
    if !keys.is_empty() {
        db.execute(
            "DELETE FROM {s}.duraq_schedule_owners AS o USING unnest($1::text[], $2::text[]) AS v(k, j) \
             WHERE o.schedule_key = v.k AND o.job_id = v.j",
            &[&keys, &job_ids],
        )
        .await?;
    }
    Ok(())
}

/// Makes `job_id` the owner of `key` unless the key has one.
pub(crate) async fn claim_ownership_if_free(db: &Db<'_>, key: &str, job_id: &str) -> Result<()> {
    db.execute(
        "INSERT INTO {s}.duraq_schedule_owners (schedule_key, job_id) VALUES ($1, $2) \
         ON CONFLICT (schedule_key) DO NOTHING",
        &[&key, &job_id],
    )
    .await?;
    Ok(())
}
