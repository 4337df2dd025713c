//! The application-client suite (`duraq_tests::app_clients`) against
//! `PostgresStore`, once per client it takes a transaction from: sqlx and
//! tokio-postgres, each in a fresh schema of the `DATABASE_URL` server.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use duraq_core::{EnqueueOutcome, JobContext, NewJob, Result, Store};
use duraq_store_postgres::{PostgresOptions, PostgresStore};
use duraq_tests::app_clients::{App, InTx};
use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::AssertSqlSafe;

fn url() -> String {
    let url = std::env::var("DATABASE_URL").unwrap_or_default();
    assert!(
        !url.is_empty(),
        "DATABASE_URL is not set: run `cargo xtask test-all`, or `cargo xtask pg` and export its URL"
    );
    url
}

/// A store in a fresh schema `duraq_app_<pid>_<time>_<n>`, with the
/// application's tables in it.
async fn fresh() -> (String, Arc<PostgresStore>) {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let micros = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let schema = format!("duraq_app_{}_{micros}_{n}", std::process::id());
    let options = PostgresOptions {
        schema: Some(schema.clone()),
        pool_size: 4,
        ..PostgresOptions::default()
    };
    let store = PostgresStore::connect(&url(), options).await.unwrap();
    let client = connect().await;
    client
        .batch_execute(&format!(
            "CREATE TABLE {schema}.users (email text NOT NULL); \
             CREATE TABLE {schema}.receipts (job_id text NOT NULL);"
        ))
        .await
        .unwrap();
    (schema, Arc::new(store))
}

async fn connect() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// Counts rows on a tokio-postgres connection.
async fn count_rows(sql: &str, email: Option<&str>) -> i64 {
    let client = connect().await;
    let row = match email {
        Some(email) => client.query_one(sql, &[&email]).await,
        None => client.query_one(sql, &[]).await,
    };
    row.unwrap().get(0)
}

fn users_sql(s: &str, email: Option<&str>) -> String {
    match email {
        Some(_) => format!("SELECT count(*) FROM {s}.users WHERE email = $1"),
        None => format!("SELECT count(*) FROM {s}.users"),
    }
}

/// sqlx: `store.enqueue_in(&mut *tx, …)`.
struct Sqlx {
    schema: String,
    store: Arc<PostgresStore>,
    pool: PgPool,
}

impl Sqlx {
    async fn new() -> Self {
        let (schema, store) = fresh().await;
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .connect(&url())
            .await
            .unwrap();
        Self {
            schema,
            store,
            pool,
        }
    }
}

#[async_trait]
impl App for Sqlx {
    fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    async fn sign_up(
        &self,
        emails: &[&str],
        jobs: Vec<NewJob>,
        batch: bool,
        commit: bool,
    ) -> Vec<Result<Vec<EnqueueOutcome>>> {
        let s = &self.schema;
        let mut tx = self.pool.begin().await.unwrap();
        let insert = |email: String| {
            let sql = format!("INSERT INTO {s}.users (email) VALUES ($1)");
            sqlx::query(AssertSqlSafe(sql)).bind(email)
        };
        insert(emails[0].to_owned())
            .execute(&mut *tx)
            .await
            .unwrap();
        let mut answers = Vec::new();
        if batch {
            answers.push(self.store.enqueue_many_in(&mut tx, jobs).await);
        } else {
            for job in jobs {
                answers.push(self.store.enqueue_in(&mut *tx, job).await.map(|o| vec![o]));
            }
        }
        for email in &emails[1..] {
            insert((*email).to_owned()).execute(&mut *tx).await.unwrap();
        }
        if commit {
            tx.commit().await.unwrap();
        } else {
            tx.rollback().await.unwrap();
        }
        answers
    }

    async fn users(&self, email: Option<&str>) -> i64 {
        count_rows(&users_sql(&self.schema, email), email).await
    }

    async fn receipt_and(&self, ctx: &JobContext, action: InTx, commit: bool) -> Result<()> {
        let mut tx = self.pool.begin().await.unwrap();
        let sql = format!("INSERT INTO {}.receipts (job_id) VALUES ($1)", self.schema);
        sqlx::query(AssertSqlSafe(sql))
            .bind(ctx.job_id())
            .execute(&mut *tx)
            .await
            .unwrap();
        let reported = match action {
            InTx::Report(outcome) => self.store.report_in(&mut tx, ctx, outcome).await,
            InTx::Step(name, output) => {
                self.store
                    .record_step_in(&mut tx, ctx, &name, &output)
                    .await
            }
        };
        if commit && reported.is_ok() {
            tx.commit().await.unwrap();
        } else {
            tx.rollback().await.unwrap();
        }
        reported
    }

    async fn receipts(&self) -> i64 {
        count_rows(
            &format!("SELECT count(*) FROM {}.receipts", self.schema),
            None,
        )
        .await
    }
}

/// tokio-postgres: `store.enqueue_in(&tx, …)`.
struct TokioPostgres {
    schema: String,
    store: Arc<PostgresStore>,
}

impl TokioPostgres {
    async fn new() -> Self {
        let (schema, store) = fresh().await;
        Self { schema, store }
    }
}

#[async_trait]
impl App for TokioPostgres {
    fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    async fn sign_up(
        &self,
        emails: &[&str],
        jobs: Vec<NewJob>,
        batch: bool,
        commit: bool,
    ) -> Vec<Result<Vec<EnqueueOutcome>>> {
        let mut client = connect().await;
        let tx = client.transaction().await.unwrap();
        let insert = format!("INSERT INTO {}.users (email) VALUES ($1)", self.schema);
        tx.execute(&insert, &[&emails[0]]).await.unwrap();
        let mut answers = Vec::new();
        if batch {
            answers.push(self.store.enqueue_many_in(&tx, jobs).await);
        } else {
            for job in jobs {
                answers.push(self.store.enqueue_in(&tx, job).await.map(|o| vec![o]));
            }
        }
        for email in &emails[1..] {
            tx.execute(&insert, &[email]).await.unwrap();
        }
        if commit {
            tx.commit().await.unwrap();
        } else {
            tx.rollback().await.unwrap();
        }
        answers
    }

    async fn users(&self, email: Option<&str>) -> i64 {
        count_rows(&users_sql(&self.schema, email), email).await
    }

    async fn receipt_and(&self, ctx: &JobContext, action: InTx, commit: bool) -> Result<()> {
        let mut client = connect().await;
        let tx = client.transaction().await.unwrap();
        let insert = format!("INSERT INTO {}.receipts (job_id) VALUES ($1)", self.schema);
        tx.execute(&insert, &[&ctx.job_id()]).await.unwrap();
        let reported = match action {
            InTx::Report(outcome) => self.store.report_in(&tx, ctx, outcome).await,
            InTx::Step(name, output) => self.store.record_step_in(&tx, ctx, &name, &output).await,
        };
        if commit && reported.is_ok() {
            tx.commit().await.unwrap();
        } else {
            tx.rollback().await.unwrap();
        }
        reported
    }

    async fn receipts(&self) -> i64 {
        count_rows(
            &format!("SELECT count(*) FROM {}.receipts", self.schema),
            None,
        )
        .await
    }
}

duraq_tests::app_client_suite!(postgres_sqlx, async { Arc::new(Sqlx::new().await) });
duraq_tests::app_client_suite!(postgres_tokio, async {
    Arc::new(TokioPostgres::new().await)
});
