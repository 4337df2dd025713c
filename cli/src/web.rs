//! `duraq web`: serves the dashboard (`duraq-web`'s router) on `--listen`, and
//! the listen rule shared with `duraq worker --metrics-listen`.
//!
//! The dashboard reads and acts on existing jobs, and its HTTP API
//! (`/api/v1`, `docs/http-api.md`) enqueues into the same store, so the store
//! is opened with `Database::open_existing` (a mistyped `--database` is
//! `database-not-found`, never a new empty database) and handed to the router
//! as its producer too. Beyond the loopback
//! interface a token (`DURAQ_WEB_TOKEN`) is required: the check happens before
//! the database is opened or a port bound, and fails with `web-token-required`.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use duraq_core::inspect::error_chain;
use duraq_web::{check_listen, router, serve, ServeLimits, WebError, WebOptions};
use tokio::net::TcpListener;

use crate::db::Database;
use crate::error::CliError;
use crate::parse::duration_ms;
use crate::signals::Signals;

#[derive(Debug, Args)]
pub struct WebArgs {
    /// Address to serve on; beyond the loopback interface DURAQ_WEB_TOKEN is required.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Hide retry, cancel, pause and resume; every POST is refused.
    #[arg(long)]
    pub read_only: bool,
    /// Without a token, also answer requests for this host name (a reverse
    /// proxy's or tunnel's), besides localhost, 127.0.0.1 and ::1; repeatable.
    /// Any other Host is refused (421), which defeats DNS rebinding.
    #[arg(long = "allowed-host", value_name = "NAME")]
    pub allowed_hosts: Vec<String>,
    /// Open connections served at once; beyond it the oldest idle one is
    /// closed, or the new one answered 503 when none is idle.
    #[arg(long, value_name = "N", default_value_t = duraq_web::ServeLimits::DEFAULT_CONNECTIONS)]
    pub max_connections: usize,
    /// Time a client has to send a request's headers before it is disconnected.
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    pub header_read_timeout: String,
    /// Live-update streams (one per open dashboard page) served at once;
    /// more are answered 503.
    #[arg(long, value_name = "N", default_value_t = duraq_web::WebOptions::DEFAULT_LIVE_STREAMS)]
    pub max_live_streams: usize,
}

/// The token from `DURAQ_WEB_TOKEN` (empty means none).
pub fn token() -> Option<String> {
    std::env::var("DURAQ_WEB_TOKEN")
        .ok()
        .filter(|t| !t.is_empty())
}

/// A `duraq-web` error with its own stable code and cause chain.
pub fn web_error(e: WebError) -> anyhow::Error {
    CliError::new(e.code(), error_chain(&e)).into()
}

/// Resolves `listen` (`127.0.0.1:8080`, `localhost:8080`, `[::1]:9000`) and
/// applies the token rule to every address it names, then binds the first.
pub async fn bind(flag: &str, listen: &str, token: Option<&str>) -> Result<TcpListener> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host(listen)
        .await
        .map_err(|e| {
            CliError::new(
                "invalid-listen-address",
                format!("{flag} {listen:?} is not HOST:PORT ({e})"),
            )
        })?
        .collect();
    let Some(first) = addrs.first().copied() else {
        return Err(CliError::new(
            "invalid-listen-address",
            format!("{flag} {listen:?} names no address"),
        )
        .into());
    };
    for addr in &addrs {
        check_listen(*addr, token).map_err(web_error)?;
    }
    TcpListener::bind(first).await.map_err(|source| {
        web_error(WebError::Io {
            addr: first.to_string(),
            source,
        })
    })
}

pub async fn run(db: &Database, a: WebArgs) -> Result<()> {
    let token = token();
    // Validate before opening anything: a refused address leaves no trace.
    let header_timeout = duration_ms("--header-read-timeout", &a.header_read_timeout)?;
    let limits = ServeLimits::new()
        .max_connections(a.max_connections)
        .header_read_timeout(Duration::from_millis(header_timeout.max(1) as u64));
    let signals = Signals::new()?;
    let listener = bind("--listen", &a.listen, token.as_deref()).await?;
    let store = db.open_existing(false).await?;
    let mut options = WebOptions::new()
        .read_only(a.read_only)
        .allowed_hosts(a.allowed_hosts)
        .max_live_streams(a.max_live_streams)
        .secrets(crate::db::password(&db_url(db)))
        .producer(store.clone())
        .args_check(crate::builtin::check_args);
    if let Some(token) = &token {
        options = options.token(token.clone());
    }
    let local = listener.local_addr()?;
    eprintln!(
        "duraq web: serving the dashboard on http://{local}/{}{}; Ctrl-C to stop",
        if a.read_only { " (read-only)" } else { "" },
        if token.is_some() {
            "; open it with ?token=… once, or send Authorization: Bearer"
        } else {
            ""
        },
    );
    let mut signals = signals;
    let app = router(store.clone(), options);
    let served = serve(listener, app, limits, async move {
        signals.next().await;
    })
    .await
    .map_err(web_error);
    crate::db::close(&store).await;
    served
}

/// The URL a `Database` came from, for the password to scrub.
fn db_url(db: &Database) -> String {
    match db {
        Database::Postgres { url, .. } => url.clone(),
        _ => String::new(),
    }
}
