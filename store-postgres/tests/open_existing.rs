//! Reading opens never create (`SECURITY.md`), and connection failures name the server
//! and the cause but never the password. Needs `DATABASE_URL`.
//!
//! Why: reading commands used to `connect`, which ran `CREATE SCHEMA` and every
//! `CREATE TABLE` for a mistyped schema, and an unreachable server printed only
//! `PostgreSQL connection failed`. Each case checks the error code, substrings of
//! [`error_chain`] (address, schema, cause) and, for refusals, that nothing was
//! created — never whole message text.

mod common;

mod postgres {
    use duraq_core::inspect::error_chain;
    use duraq_core::prelude::*;
    use duraq_core::ErrorCode;
    use duraq_store_postgres::{PostgresOptions, PostgresStore, LEDGER_TABLE};

    use crate::common::{open, options, raw_client, schema, url};

    const PASSWORD: &str = "pw-never-printed-8c1f";

    /// `DATABASE_URL` with [`PASSWORD`] added to its user (the throwaway server
    /// trusts local connections, so the password is accepted and ignored).
    fn url_with_password() -> String {
        let url = url();
        let (scheme, rest) = url.split_once("://").expect("a postgres:// URL");
        let (user, host) = rest.split_once('@').expect("a URL with a user");
        let user = user.split(':').next().unwrap_or(user);
        format!("{scheme}://{user}:{PASSWORD}@{host}")
    }

    /// `host:port/dbname` of `DATABASE_URL`, as messages name it.
    fn target() -> String {
        let config: tokio_postgres::Config = url().parse().unwrap();
        let host = match &config.get_hosts()[0] {
            tokio_postgres::config::Host::Tcp(h) => h.clone(),
            other => panic!("tests expect a TCP DATABASE_URL, got {other:?}"),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        format!(
            "{host}:{port}/{}",
            config.get_dbname().unwrap_or("postgres")
        )
    }

    async fn schema_exists(name: &str) -> bool {
        raw_client()
            .await
            .query_opt("SELECT 1 FROM pg_namespace WHERE nspname = $1", &[&name])
            .await
            .unwrap()
            .is_some()
    }

    #[tokio::test]
    async fn a_missing_schema_is_database_not_found_and_is_not_created() {
        let s = schema();
        let err = PostgresStore::connect_existing(&url_with_password(), options(&s))
            .await
            .err()
            .expect("refused");
        assert_eq!(err.code(), ErrorCode::DatabaseNotFound);
        let chain = error_chain(&err);
        assert!(chain.contains(&target()), "{chain}");
        assert!(chain.contains(&s), "{chain}");
        assert!(!chain.contains(PASSWORD), "{chain}");
        assert!(!format!("{err:?}").contains(PASSWORD));
        assert!(!schema_exists(&s).await, "no CREATE SCHEMA");
    }

    #[tokio::test]
    async fn a_schema_without_the_ledger_gets_no_tables() {
        let s = schema();
        let client = raw_client().await;
        client
            .batch_execute(&format!(
                "CREATE SCHEMA {s}; CREATE TABLE {s}.app_users (id int)"
            ))
            .await
            .unwrap();
        let err = PostgresStore::connect_existing(&url(), options(&s))
            .await
            .err()
            .expect("refused");
        assert_eq!(err.code(), ErrorCode::DatabaseNotFound);
        assert!(error_chain(&err).contains(&s), "{err}");
        let tables: Vec<String> = client
            .query(
                "SELECT table_name::text FROM information_schema.tables WHERE table_schema = $1",
                &[&s],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(tables, vec!["app_users".to_owned()], "no CREATE TABLE");
    }

    #[tokio::test]
    async fn an_existing_duraq_schema_opens_and_works() {
        let s = schema();
        drop(open(&s).await.unwrap());
        let store = PostgresStore::connect_existing(&url(), options(&s))
            .await
            .unwrap();
        assert!(store.migration().applied.is_empty());
        assert_eq!(store.count_snapshot().await.unwrap().total, 0);
        let ledger = format!("SELECT count(*) FROM {s}.{LEDGER_TABLE}");
        let rows: i64 = raw_client()
            .await
            .query_one(&ledger, &[])
            .await
            .unwrap()
            .get(0);
        assert!(rows > 0);
    }

    #[tokio::test]
    async fn a_missing_database_is_database_not_found() {
        let missing = "duraq_no_such_database_4e2a";
        let url = url();
        let (server, _db) = url.rsplit_once('/').expect("a URL with a database");
        let bad = format!("{server}/{missing}");
        for err in [
            PostgresStore::connect_existing(&bad, options("public"))
                .await
                .err(),
            PostgresStore::connect(&bad, options("public")).await.err(),
        ] {
            let err = err.expect("refused");
            assert_eq!(err.code(), ErrorCode::DatabaseNotFound);
            assert!(error_chain(&err).contains(missing), "{err}");
        }
    }

    #[tokio::test]
    async fn a_refused_connection_names_host_port_and_cause_not_the_password() {
        let url = format!("postgres://app:{PASSWORD}@127.0.0.1:9/jobs");
        let opts = PostgresOptions {
            listen: false,
            ..options("public")
        };
        for err in [
            PostgresStore::connect_existing(&url, opts.clone())
                .await
                .err(),
            PostgresStore::connect(&url, opts.clone()).await.err(),
            duraq_store_postgres::migrate(&url, &opts).await.err(),
        ] {
            let err = err.expect("nothing listens on port 9");
            assert_eq!(err.code(), ErrorCode::Backend);
            let chain = error_chain(&err);
            assert!(chain.contains("127.0.0.1:9"), "{chain}");
            assert!(
                chain.to_lowercase().contains("connection refused"),
                "{chain}"
            );
            assert!(!chain.contains(PASSWORD), "{chain}");
            assert!(!format!("{err:?}").contains(PASSWORD));
        }
    }
}
