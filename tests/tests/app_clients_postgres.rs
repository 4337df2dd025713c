//! The application-client suite (`duraq_tests::app_clients`) against
//! `PostgresStore`, once per client it takes a transaction from: sqlx,
//! tokio-postgres, diesel-async, (sync) diesel and SeaORM, each in a fresh
//! schema of the `DATABASE_URL` server.

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

/// diesel-async: `store.enqueue_in(conn, …)` inside `conn.transaction(…)`.
mod diesel_async_app {
    use diesel::result::Error as DieselError;
    use diesel::sql_types::Text;
    use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

    use super::*;

    pub struct DieselAsync {
        schema: String,
        store: Arc<PostgresStore>,
    }

    impl DieselAsync {
        pub async fn new() -> Self {
            let (schema, store) = fresh().await;
            Self { schema, store }
        }

        async fn connect() -> AsyncPgConnection {
            AsyncPgConnection::establish(&url()).await.unwrap()
        }
    }

    /// A transaction's closure ends: committed, or rolled back on purpose.
    fn ended(result: std::result::Result<(), DieselError>) {
        match result {
            Ok(()) | Err(DieselError::RollbackTransaction) => {}
            Err(e) => panic!("diesel-async: {e}"),
        }
    }

    #[async_trait]
    impl App for DieselAsync {
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
            let mut conn = Self::connect().await;
            let (store, s) = (&self.store, &self.schema);
            let insert = move |email: &str| {
                diesel::sql_query(format!("INSERT INTO {s}.users (email) VALUES ($1)"))
                    .bind::<Text, _>(email.to_owned())
            };
            let mut answers = Vec::new();
            let out = &mut answers;
            let result = conn
                .transaction(async move |conn| {
                    insert(emails[0]).execute(conn).await?;
                    if batch {
                        out.push(store.enqueue_many_in(&mut *conn, jobs).await);
                    } else {
                        for job in jobs {
                            out.push(store.enqueue_in(&mut *conn, job).await.map(|o| vec![o]));
                        }
                    }
                    for email in &emails[1..] {
                        insert(email).execute(conn).await?;
                    }
                    if commit {
                        Ok(())
                    } else {
                        Err(DieselError::RollbackTransaction)
                    }
                })
                .await;
            ended(result);
            answers
        }

        async fn users(&self, email: Option<&str>) -> i64 {
            count_rows(&users_sql(&self.schema, email), email).await
        }

        async fn receipt_and(&self, ctx: &JobContext, action: InTx, commit: bool) -> Result<()> {
            let mut conn = Self::connect().await;
            let (store, s) = (&self.store, &self.schema);
            let mut reported = None;
            let out = &mut reported;
            let result = conn
                .transaction(async move |conn| {
                    diesel::sql_query(format!("INSERT INTO {s}.receipts (job_id) VALUES ($1)"))
                        .bind::<Text, _>(ctx.job_id().to_owned())
                        .execute(conn)
                        .await?;
                    let done = match action {
                        InTx::Report(outcome) => store.report_in(&mut *conn, ctx, outcome).await,
                        InTx::Step(name, output) => {
                            store.record_step_in(&mut *conn, ctx, &name, &output).await
                        }
                    };
                    let keep = commit && done.is_ok();
                    *out = Some(done);
                    if keep {
                        Ok(())
                    } else {
                        Err(DieselError::RollbackTransaction)
                    }
                })
                .await;
            ended(result);
            reported.expect("the transaction's closure ran")
        }

        async fn receipts(&self) -> i64 {
            count_rows(
                &format!("SELECT count(*) FROM {}.receipts", self.schema),
                None,
            )
            .await
        }
    }
}

/// diesel (sync): `store.enqueue_in(conn, …)` inside `conn.transaction(…)`,
/// on a blocking thread that drives the store's futures with
/// `Handle::block_on`, as an application on a sync diesel pool does.
mod diesel_app {
    use diesel::connection::Connection;
    use diesel::pg::PgConnection;
    use diesel::result::Error as DieselError;
    use diesel::sql_types::Text;
    use diesel::RunQueryDsl;
    use tokio::runtime::Handle;

    use super::*;

    pub struct Diesel {
        schema: String,
        store: Arc<PostgresStore>,
    }

    impl Diesel {
        pub async fn new() -> Self {
            let (schema, store) = fresh().await;
            Self { schema, store }
        }
    }

    fn ended(result: std::result::Result<(), DieselError>) {
        match result {
            Ok(()) | Err(DieselError::RollbackTransaction) => {}
            Err(e) => panic!("diesel: {e}"),
        }
    }

    /// Runs `f` on a fresh connection, on a blocking thread.
    async fn blocking<T: Send + 'static>(
        f: impl FnOnce(&mut PgConnection, Handle) -> T + Send + 'static,
    ) -> T {
        let handle = Handle::current();
        tokio::task::spawn_blocking(move || {
            let mut conn = PgConnection::establish(&url()).unwrap();
            f(&mut conn, handle)
        })
        .await
        .unwrap()
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
            let (store, s) = (self.store.clone(), self.schema.clone());
            let emails: Vec<String> = emails.iter().map(|e| (*e).to_owned()).collect();
            blocking(move |conn, handle| {
                let insert = |email: &str| {
                    diesel::sql_query(format!("INSERT INTO {s}.users (email) VALUES ($1)"))
                        .bind::<Text, _>(email.to_owned())
                };
                let mut answers = Vec::new();
                let result = conn.transaction(|conn| {
                    insert(&emails[0]).execute(conn)?;
                    if batch {
                        answers.push(handle.block_on(store.enqueue_many_in(&mut *conn, jobs)));
                    } else {
                        for job in jobs {
                            let answer = handle.block_on(store.enqueue_in(&mut *conn, job));
                            answers.push(answer.map(|o| vec![o]));
                        }
                    }
                    for email in &emails[1..] {
                        insert(email).execute(conn)?;
                    }
                    if commit {
                        Ok(())
                    } else {
                        Err(DieselError::RollbackTransaction)
                    }
                });
                ended(result);
                answers
            })
            .await
        }

        async fn users(&self, email: Option<&str>) -> i64 {
            count_rows(&users_sql(&self.schema, email), email).await
        }

        async fn receipt_and(&self, ctx: &JobContext, action: InTx, commit: bool) -> Result<()> {
            let (store, s, ctx) = (self.store.clone(), self.schema.clone(), ctx.clone());
            blocking(move |conn, handle| {
                let mut reported = None;
                let result = conn.transaction(|conn| {
                    diesel::sql_query(format!("INSERT INTO {s}.receipts (job_id) VALUES ($1)"))
                        .bind::<Text, _>(ctx.job_id().to_owned())
                        .execute(conn)?;
                    let done = handle.block_on(async {
                        match action {
                            InTx::Report(outcome) => {
                                store.report_in(&mut *conn, &ctx, outcome).await
                            }
                            InTx::Step(name, output) => {
                                store.record_step_in(&mut *conn, &ctx, &name, &output).await
                            }
                        }
                    });
                    let keep = commit && done.is_ok();
                    reported = Some(done);
                    if keep {
                        Ok(())
                    } else {
                        Err(DieselError::RollbackTransaction)
                    }
                });
                ended(result);
                reported.expect("the transaction's closure ran")
            })
            .await
        }

        async fn receipts(&self) -> i64 {
            count_rows(
                &format!("SELECT count(*) FROM {}.receipts", self.schema),
                None,
            )
            .await
        }
    }
}

/// SeaORM: `store.enqueue_in(&mut txn, …)` on a transaction from
/// `db.begin()`, committed or rolled back by the application; the receipt's
/// transaction is `db.transaction_async(…)`'s, whose closure has a
/// `&DatabaseTransaction` (`&mut &*txn`).
mod sea_orm_app {
    use sea_orm::{
        ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DbBackend, Statement,
        TransactionError, TransactionTrait,
    };

    use super::*;

    pub struct SeaOrm {
        schema: String,
        store: Arc<PostgresStore>,
        db: DatabaseConnection,
    }

    impl SeaOrm {
        pub async fn new() -> Self {
            let (schema, store) = fresh().await;
            let mut options = ConnectOptions::new(url());
            options.max_connections(4).sqlx_logging(false);
            let db = Database::connect(options).await.unwrap();
            Self { schema, store, db }
        }
    }

    fn insert(table: &str, column: &str, schema: &str, value: &str) -> Statement {
        Statement::from_sql_and_values(
            DbBackend::Postgres,
            format!("INSERT INTO {schema}.{table} ({column}) VALUES ($1)"),
            [value.into()],
        )
    }

    /// The closure's way of asking for a rollback.
    #[derive(Debug)]
    struct Rollback;

    impl std::fmt::Display for Rollback {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("rolled back on purpose")
        }
    }

    #[async_trait]
    impl App for SeaOrm {
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
            let mut txn = self.db.begin().await.unwrap();
            txn.execute_raw(insert("users", "email", s, emails[0]))
                .await
                .unwrap();
            let mut answers = Vec::new();
            if batch {
                answers.push(self.store.enqueue_many_in(&mut txn, jobs).await);
            } else {
                for job in jobs {
                    answers.push(self.store.enqueue_in(&mut txn, job).await.map(|o| vec![o]));
                }
            }
            for email in &emails[1..] {
                txn.execute_raw(insert("users", "email", s, email))
                    .await
                    .unwrap();
            }
            if commit {
                txn.commit().await.unwrap();
            } else {
                txn.rollback().await.unwrap();
            }
            answers
        }

        async fn users(&self, email: Option<&str>) -> i64 {
            count_rows(&users_sql(&self.schema, email), email).await
        }

        async fn receipt_and(&self, ctx: &JobContext, action: InTx, commit: bool) -> Result<()> {
            let (store, s) = (&self.store, &self.schema);
            let mut reported = None;
            let out = &mut reported;
            let result = self
                .db
                .transaction_async(async move |txn| {
                    txn.execute_raw(insert("receipts", "job_id", s, ctx.job_id()))
                        .await
                        .unwrap();
                    let done = match action {
                        InTx::Report(outcome) => store.report_in(&mut &*txn, ctx, outcome).await,
                        InTx::Step(name, output) => {
                            store.record_step_in(&mut &*txn, ctx, &name, &output).await
                        }
                    };
                    let keep = commit && done.is_ok();
                    *out = Some(done);
                    if keep {
                        Ok(())
                    } else {
                        Err(Rollback)
                    }
                })
                .await;
            match result {
                Ok(()) | Err(TransactionError::Transaction(Rollback)) => {}
                Err(e) => panic!("SeaORM: {e}"),
            }
            reported.expect("the transaction's closure ran")
        }

        async fn receipts(&self) -> i64 {
            count_rows(
                &format!("SELECT count(*) FROM {}.receipts", self.schema),
                None,
            )
            .await
        }
    }

    /// SeaORM's edges, through `Executor` directly on a transaction: values
    /// cross in binary format both ways with their exact types (an array
    /// with a `NULL` element included, which SeaORM cannot bind as an
    /// array), a server error keeps its SQLSTATE's meaning (`23505` is
    /// duraq's `idempotency-conflict`), and a parameter of a type no duraq
    /// statement binds is refused before anything is sent.
    #[tokio::test]
    async fn sea_orm_edges() {
        use duraq_core::ErrorCode;
        use duraq_store_postgres::client::{Column, Executor, Param};

        let db = Database::connect(url()).await.unwrap();
        let mut txn = db.begin().await.unwrap();
        let conn: &mut dyn Executor = &mut txn;
        let text = |s: &str| Param {
            type_oid: 25,
            value: Some(s.as_bytes().to_vec()),
        };
        conn.batch("CREATE TEMP TABLE duraq_edges (k text PRIMARY KEY)")
            .await
            .unwrap();
        let insert = "INSERT INTO duraq_edges (k) VALUES ($1)";
        assert_eq!(conn.execute(insert, &[text("a")]).await.unwrap(), 1);
        conn.batch("SAVEPOINT edge").await.unwrap();
        let refused = conn.execute(insert, &[text("a")]).await.unwrap_err();
        assert_eq!(refused.code(), ErrorCode::IdempotencyConflict, "{refused}");
        conn.batch("ROLLBACK TO SAVEPOINT edge").await.unwrap();

        // A one-dimensional array in binary format: header, then elements.
        let array = |element_oid: i32, elements: &[Option<&[u8]>]| {
            let nulls = i32::from(elements.iter().any(Option::is_none));
            let mut bytes = Vec::new();
            for n in [1, nulls, element_oid, elements.len() as i32, 1] {
                bytes.extend_from_slice(&n.to_be_bytes());
            }
            for element in elements {
                match element {
                    Some(b) => {
                        bytes.extend_from_slice(&(b.len() as i32).to_be_bytes());
                        bytes.extend_from_slice(b);
                    }
                    None => bytes.extend_from_slice(&(-1i32).to_be_bytes()),
                }
            }
            bytes
        };
        let texts = array(25, &[Some(b"x \"y\\"), None, Some(b"")]);
        let ints = array(
            20,
            &[Some(&7i64.to_be_bytes()), Some(&(-1i64).to_be_bytes())],
        );
        let param = |type_oid, value: &[u8]| Param {
            type_oid,
            value: Some(value.to_vec()),
        };
        let params = [
            param(20, &7i64.to_be_bytes()),
            Param {
                type_oid: 25,
                value: None,
            },
            param(1009, &texts),
            param(1016, &ints),
            param(3802, b"\x01{\"a\":[1,null]}"),
            param(16, &[1]),
        ];
        let rows = conn
            .query(
                "SELECT $1::int8 AS n, $2::text AS s, $3 AS t, $4 AS i, $5 AS j, $6 AS b, k \
                 FROM duraq_edges",
                &params,
            )
            .await
            .unwrap();
        let column = |name: &str, type_oid| Column {
            name: name.to_owned(),
            type_oid,
        };
        assert_eq!(
            rows.columns,
            [
                column("n", 20),
                column("s", 25),
                column("t", 1009),
                column("i", 1016),
                column("j", 3802),
                column("b", 16),
                column("k", 25),
            ]
        );
        let row = vec![
            Some(7i64.to_be_bytes().to_vec()),
            None,
            Some(texts),
            Some(ints),
            Some(b"\x01{\"a\": [1, null]}".to_vec()),
            Some(vec![1]),
            Some(b"a".to_vec()),
        ];
        assert_eq!(rows.values, [row]);
        let none = conn
            .query("SELECT k FROM duraq_edges WHERE k = $1", &[text("b")])
            .await
            .unwrap();
        assert!(none.values.is_empty());

        let point = param(600, &[0; 16]);
        let refused = conn.query("SELECT $1", &[point]).await.unwrap_err();
        assert_eq!(refused.code(), ErrorCode::Backend);
        assert!(refused.to_string().contains("type oid 600"), "{refused}");
        txn.rollback().await.unwrap();
    }
}

/// The diesel clients' own edges, through `Executor` directly: values cross
/// in binary format both ways, a server error keeps its SQLSTATE's meaning
/// (`23505` is duraq's `idempotency-conflict`), and a parameter of a type no
/// duraq statement binds is refused before anything is sent.
mod diesel_executor {
    use duraq_core::ErrorCode;
    use duraq_store_postgres::client::{Column, Executor, Param};

    use super::*;

    fn text(s: &str) -> Param {
        Param {
            type_oid: 25,
            value: Some(s.as_bytes().to_vec()),
        }
    }

    /// `null_text_oid`: the type oid the client reports for a text column
    /// that is `NULL` in every row (diesel-async cannot tell: 0).
    async fn edges(conn: &mut dyn Executor, null_text_oid: u32) {
        conn.batch("CREATE TEMP TABLE duraq_edges (k text PRIMARY KEY)")
            .await
            .unwrap();
        let insert = "INSERT INTO duraq_edges (k) VALUES ($1)";
        assert_eq!(conn.execute(insert, &[text("a")]).await.unwrap(), 1);
        let refused = conn.execute(insert, &[text("a")]).await.unwrap_err();
        assert_eq!(refused.code(), ErrorCode::IdempotencyConflict, "{refused}");

        let seven = Param {
            type_oid: 20,
            value: Some(7i64.to_be_bytes().to_vec()),
        };
        let null = Param {
            type_oid: 25,
            value: None,
        };
        let rows = conn
            .query(
                "SELECT $1::int8 AS n, $2::text AS s, k FROM duraq_edges",
                &[seven, null],
            )
            .await
            .unwrap();
        let column = |name: &str, type_oid| Column {
            name: name.to_owned(),
            type_oid,
        };
        assert_eq!(
            rows.columns,
            [column("n", 20), column("s", null_text_oid), column("k", 25)]
        );
        let row = vec![Some(7i64.to_be_bytes().to_vec()), None, Some(b"a".to_vec())];
        assert_eq!(rows.values, [row]);
        let none = conn
            .query("SELECT k FROM duraq_edges WHERE k = $1", &[text("b")])
            .await
            .unwrap();
        assert!(none.values.is_empty());

        let point = Param {
            type_oid: 600,
            value: Some(vec![0; 16]),
        };
        let refused = conn.query("SELECT $1", &[point]).await.unwrap_err();
        assert_eq!(refused.code(), ErrorCode::Backend);
        assert!(refused.to_string().contains("type oid 600"), "{refused}");
    }

    #[tokio::test]
    async fn diesel_async_edges() {
        use diesel_async::{AsyncConnection, AsyncPgConnection};
        let mut conn = AsyncPgConnection::establish(&url()).await.unwrap();
        edges(&mut conn, 0).await;
    }

    #[tokio::test]
    async fn diesel_edges() {
        use diesel::{Connection, PgConnection};
        // Blocks this test's thread while each statement runs, as documented.
        let mut conn = PgConnection::establish(&url()).unwrap();
        edges(&mut conn, 25).await;
    }
}

duraq_tests::app_client_suite!(postgres_sqlx, async { Arc::new(Sqlx::new().await) });
duraq_tests::app_client_suite!(postgres_tokio, async {
    Arc::new(TokioPostgres::new().await)
});
duraq_tests::app_client_suite!(postgres_diesel_async, async {
    Arc::new(diesel_async_app::DieselAsync::new().await)
});
duraq_tests::app_client_suite!(postgres_diesel, async {
    Arc::new(diesel_app::Diesel::new().await)
});
duraq_tests::app_client_suite!(postgres_sea_orm, async {
    Arc::new(sea_orm_app::SeaOrm::new().await)
});
