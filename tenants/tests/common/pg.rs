//! PostgreSQL helpers: the server from `DATABASE_URL`, one fresh schema per tenant.

use std::sync::atomic::{AtomicUsize, Ordering};

use tokio_postgres::{Client, NoTls};

pub fn database_url() -> String {
    match std::env::var("DATABASE_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => panic!(
            "DATABASE_URL is not set: the duraq-tenants PostgreSQL tests need a server \
             (`cargo xtask test-all` starts one; or run `cargo test -- --skip postgres`)"
        ),
    }
}

pub async fn admin() -> Client {
    let (client, connection) = tokio_postgres::connect(&database_url(), NoTls)
        .await
        .unwrap();
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

/// A unique schema name for this process and call.
pub fn unique(label: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "dqt_{label}_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Creates a schema holding an application table and, when `applied` is given, a
/// tenant ledger with those versions; returns the tenant URL.
pub async fn tenant_schema(client: &Client, schema: &str, applied: Option<&[i64]>) -> String {
    client
        .batch_execute(&format!(
            "CREATE SCHEMA {schema}; CREATE TABLE {schema}.app_data (x int)"
        ))
        .await
        .unwrap();
    if let Some(applied) = applied {
        client
            .batch_execute(&format!(
                "CREATE TABLE {schema}.duraq_tenant_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at_ms BIGINT NOT NULL)"
            ))
            .await
            .unwrap();
        for v in applied {
            let insert =
                format!("INSERT INTO {schema}.duraq_tenant_migrations VALUES ($1, 'm', 0)");
            client.execute(&insert, &[v]).await.unwrap();
        }
    }
    url_for(schema)
}

pub fn url_for(schema: &str) -> String {
    format!("{}#{schema}", database_url())
}

pub async fn tables(client: &Client, schema: &str) -> Vec<String> {
    let rows = client
        .query("SELECT table_name::text FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1", &[&schema])
        .await
        .unwrap();
    rows.iter().map(|r| r.get(0)).collect()
}

pub async fn drop_schemas(client: &Client, schemas: &[&str]) {
    for s in schemas {
        client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {s} CASCADE"))
            .await
            .unwrap();
    }
}
