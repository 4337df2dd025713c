//! The application-client suite (`duraq_tests::app_clients`) against
//! `SqliteStore`, once per client it takes a transaction from: sqlx, rusqlite
//! and diesel, each in a fresh file.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use duraq_core::{EnqueueOutcome, JobContext, NewJob, Result, Store};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use duraq_tests::app_clients::{App, InTx};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};

const TABLES: &str = "CREATE TABLE users (email TEXT NOT NULL); \
                      CREATE TABLE receipts (job_id TEXT NOT NULL);";

/// A store in a fresh file with the application's tables.
fn fresh() -> (tempfile::TempDir, String, Arc<SqliteStore>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.db").display().to_string();
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(TABLES)
        .unwrap();
    (dir, path, Arc::new(store))
}

/// Counts rows with `SELECT count(*) …` on a rusqlite connection.
fn count_rows(path: &str, sql: &str, email: Option<&str>) -> i64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    match email {
        Some(email) => conn.query_row(sql, [email], |r| r.get(0)),
        None => conn.query_row(sql, [], |r| r.get(0)),
    }
    .unwrap()
}

fn users_sql(email: Option<&str>) -> &'static str {
    match email {
        Some(_) => "SELECT count(*) FROM users WHERE email = ?1",
        None => "SELECT count(*) FROM users",
    }
}

/// sqlx: `store.enqueue_in(&mut *tx, …)`.
struct Sqlx {
    _dir: tempfile::TempDir,
    path: String,
    store: Arc<SqliteStore>,
    pool: SqlitePool,
}

impl Sqlx {
    async fn new() -> Self {
        let (_dir, path, store) = fresh();
        let options = SqliteConnectOptions::new()
            .filename(&path)
            .busy_timeout(Duration::from_secs(5));
        let pool = SqlitePoolOptions::new()
            .max_connections(2)
            .connect_with(options)
            .await
            .unwrap();
        Self {
            _dir,
            path,
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
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
        let insert =
            |email: String| sqlx::query("INSERT INTO users (email) VALUES (?1)").bind(email);
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
        count_rows(&self.path, users_sql(email), email)
    }

    async fn receipt_and(&self, ctx: &JobContext, action: InTx, commit: bool) -> Result<()> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
        sqlx::query("INSERT INTO receipts (job_id) VALUES (?1)")
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
        count_rows(&self.path, "SELECT count(*) FROM receipts", None)
    }
}

/// rusqlite: `store.enqueue_in_transaction(&tx, …)`.
struct Rusqlite {
    _dir: tempfile::TempDir,
    path: String,
    store: Arc<SqliteStore>,
}

impl Rusqlite {
    async fn new() -> Self {
        let (_dir, path, store) = fresh();
        Self { _dir, path, store }
    }

    fn connect(&self) -> rusqlite::Connection {
        let conn = rusqlite::Connection::open(&self.path).unwrap();
        conn.busy_timeout(Duration::from_secs(5)).unwrap();
        conn
    }
}

#[async_trait]
impl App for Rusqlite {
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
        let mut conn = self.connect();
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .unwrap();
        let insert = |email: &str| {
            tx.execute("INSERT INTO users (email) VALUES (?1)", [email])
                .unwrap()
        };
        insert(emails[0]);
        let mut answers = Vec::new();
        if batch {
            answers.push(self.store.enqueue_many_in_transaction(&tx, jobs));
        } else {
            for job in jobs {
                answers.push(self.store.enqueue_in_transaction(&tx, job).map(|o| vec![o]));
            }
        }
        for email in &emails[1..] {
            insert(email);
        }
        if commit {
            tx.commit().unwrap();
        } else {
            tx.rollback().unwrap();
        }
        answers
    }

    async fn users(&self, email: Option<&str>) -> i64 {
        count_rows(&self.path, users_sql(email), email)
    }

    async fn receipt_and(&self, ctx: &JobContext, action: InTx, commit: bool) -> Result<()> {
        let mut conn = self.connect();
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .unwrap();
        tx.execute("INSERT INTO receipts (job_id) VALUES (?1)", [ctx.job_id()])
            .unwrap();
        let reported = match action {
            InTx::Report(outcome) => self.store.report_in_transaction(&tx, ctx, outcome),
            InTx::Step(name, output) => self
                .store
                .record_step_in_transaction(&tx, ctx, &name, &output),
        };
        if commit && reported.is_ok() {
            tx.commit().unwrap();
        } else {
            tx.rollback().unwrap();
        }
        reported
    }

    async fn receipts(&self) -> i64 {
        count_rows(&self.path, "SELECT count(*) FROM receipts", None)
    }
}

/// diesel: `store.enqueue_in_diesel(conn, …)` inside `immediate_transaction`.
struct Diesel {
    _dir: tempfile::TempDir,
    path: String,
    store: Arc<SqliteStore>,
}

impl Diesel {
    async fn new() -> Self {
        let (_dir, path, store) = fresh();
        Self { _dir, path, store }
    }

    fn connect(&self) -> SqliteConnection {
        let mut conn = SqliteConnection::establish(&self.path).unwrap();
        diesel::sql_query("PRAGMA busy_timeout = 5000")
            .execute(&mut conn)
            .unwrap();
        conn
    }
}

/// What a diesel transaction's closure returns: the commit is decided by
/// `Ok` (commit) or `Err` (roll back), so a rollback that still has answers
/// carries them in `Rollback`.
enum Ended<T> {
    Rollback(T),
    Failed(diesel::result::Error),
}

impl<T> From<diesel::result::Error> for Ended<T> {
    fn from(e: diesel::result::Error) -> Self {
        Ended::Failed(e)
    }
}

#[async_trait]
impl App for Diesel {
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
        let mut conn = self.connect();
        let ended = conn.immediate_transaction(|conn| {
            let mut insert = |email: &str| {
                diesel::sql_query("INSERT INTO users (email) VALUES (?)")
                    .bind::<Text, _>(email)
                    .execute(conn)
            };
            insert(emails[0])?;
            let mut answers = Vec::new();
            if batch {
                answers.push(self.store.enqueue_many_in_diesel(conn, jobs));
            } else {
                for job in jobs {
                    answers.push(self.store.enqueue_in_diesel(conn, job).map(|o| vec![o]));
                }
            }
            for email in &emails[1..] {
                diesel::sql_query("INSERT INTO users (email) VALUES (?)")
                    .bind::<Text, _>(*email)
                    .execute(conn)?;
            }
            if commit {
                Ok(answers)
            } else {
                Err(Ended::Rollback(answers))
            }
        });
        match ended {
            Ok(answers) | Err(Ended::Rollback(answers)) => answers,
            Err(Ended::Failed(e)) => panic!("diesel: {e}"),
        }
    }

    async fn users(&self, email: Option<&str>) -> i64 {
        #[derive(QueryableByName)]
        struct Count {
            #[diesel(sql_type = BigInt)]
            n: i64,
        }
        let mut conn = self.connect();
        let count = match email {
            Some(email) => diesel::sql_query("SELECT count(*) AS n FROM users WHERE email = ?")
                .bind::<Text, _>(email)
                .get_result::<Count>(&mut conn),
            None => diesel::sql_query("SELECT count(*) AS n FROM users").get_result(&mut conn),
        };
        count.unwrap().n
    }

    async fn receipt_and(&self, ctx: &JobContext, action: InTx, commit: bool) -> Result<()> {
        let mut conn = self.connect();
        let ended = conn.immediate_transaction(|conn| {
            diesel::sql_query("INSERT INTO receipts (job_id) VALUES (?)")
                .bind::<Text, _>(ctx.job_id())
                .execute(conn)?;
            let reported = match action.clone() {
                InTx::Report(outcome) => self.store.report_in_diesel(conn, ctx, outcome),
                InTx::Step(name, output) => {
                    self.store.record_step_in_diesel(conn, ctx, &name, &output)
                }
            };
            match (commit, reported.is_ok()) {
                (true, true) => Ok(reported),
                _ => Err(Ended::Rollback(reported)),
            }
        });
        match ended {
            Ok(reported) | Err(Ended::Rollback(reported)) => reported,
            Err(Ended::Failed(e)) => panic!("diesel: {e}"),
        }
    }

    async fn receipts(&self) -> i64 {
        count_rows(&self.path, "SELECT count(*) FROM receipts", None)
    }
}

duraq_tests::app_client_suite!(sqlite_sqlx, async { Arc::new(Sqlx::new().await) });
duraq_tests::app_client_suite!(sqlite_rusqlite, async { Arc::new(Rusqlite::new().await) });
duraq_tests::app_client_suite!(sqlite_diesel, async { Arc::new(Diesel::new().await) });
