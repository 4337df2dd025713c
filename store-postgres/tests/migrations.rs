//! Schema creation and migration (SPEC §9) on PostgreSQL: versions recorded once
//! however many processes start at once, incompatible tables and newer ledgers
//! refused, schema names validated. Needs `DATABASE_URL`.

mod common;

mod postgres {
    use duraq_core::{ErrorCode, Store};
    use duraq_store_postgres::SCHEMA_VERSION;

    use crate::common::{open, raw_client, schema};

    #[tokio::test]
    async fn migrations_are_recorded_once_and_concurrent_openers_agree() {
        let s = schema();
        let opens: Vec<_> = (0..6)
            .map(|_| {
                tokio::spawn({
                    let s = s.clone();
                    async move { open(&s).await }
                })
            })
            .collect();
        let mut applied = Vec::new();
        for handle in opens {
            applied.extend(
                handle
                    .await
                    .unwrap()
                    .expect("open")
                    .migration()
                    .applied
                    .clone(),
            );
        }
        assert_eq!(
            applied,
            (1..=SCHEMA_VERSION).collect::<Vec<_>>(),
            "each version applied exactly once"
        );
        let store = open(&s).await.unwrap();
        assert!(store.migration().applied.is_empty());
        let health = store.health().await.unwrap();
        assert_eq!(
            (health.backend.as_str(), health.schema_version),
            ("postgres", SCHEMA_VERSION)
        );
    }

    #[tokio::test]
    async fn incompatible_tables_and_newer_ledgers_are_refused() {
        let client = raw_client().await;
        let bad_columns = schema();
        client
            .batch_execute(&format!(
                "CREATE SCHEMA {bad_columns}; CREATE TABLE {bad_columns}.duraq_jobs (id text)"
            ))
            .await
            .unwrap();
        let err = open(&bad_columns).await.err().expect("refused");
        assert_eq!(err.code(), ErrorCode::SchemaIncompatible, "{err}");
        let exists: i64 = client
            .query_one(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1",
                &[&bad_columns],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(
            exists, 1,
            "nothing was created next to the incompatible table"
        );

        let newer = schema();
        open(&newer).await.unwrap();
        client
            .execute(
                &format!("INSERT INTO {newer}.duraq_migrations (scope, version, applied_at_ms) VALUES ($1, $2, 0)"),
                &[&duraq_store_postgres::MIGRATION_SCOPE, &(SCHEMA_VERSION + 1)],
            )
            .await
            .unwrap();
        assert_eq!(
            open(&newer).await.err().expect("refused").code(),
            ErrorCode::SchemaIncompatible
        );
    }

    #[tokio::test]
    async fn schema_names_must_be_identifiers() {
        for bad in ["", "1abc", "a b", "x\"; DROP TABLE y; --", &"a".repeat(64)] {
            assert!(open(bad).await.is_err(), "{bad:?} accepted");
        }
    }
}
