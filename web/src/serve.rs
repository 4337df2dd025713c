//! Starting a server safely: the listen-address rule and a serve helper.
//!
//! The dashboard can retry and cancel any job and shows every job's args, so it
//! may listen beyond the loopback interface only with a token, and a token must
//! be long enough to be a secret. The rule lives here, not in the CLI, so an
//! application that serves the router itself can apply the same check.

use std::future::Future;
use std::net::SocketAddr;

use axum::Router;
use tokio::net::TcpListener;

use crate::accept::ServeLimits;
use crate::error::{Result, WebError};
use crate::scrub::MIN_TOKEN_BYTES;

/// Whether `addr` is reachable only from this machine (127.0.0.0/8, ::1).
pub fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// Refuses a non-loopback `addr` without a token (`web-token-required`), a
/// token a cookie or header cannot carry (`invalid-web-token`: empty, or with
/// spaces, quotes, `;`, `,`, `\` or non-ASCII characters), and a token shorter
/// than 16 bytes (`web-token-too-short`: it could be guessed, and masking it
/// in messages would mask parts of words).
///
/// ```
/// use duraq_web::check_listen;
/// assert!(check_listen("127.0.0.1:8080".parse().unwrap(), None).is_ok());
/// let err = check_listen("0.0.0.0:8080".parse().unwrap(), None).unwrap_err();
/// assert_eq!(err.code(), "web-token-required");
/// assert!(check_listen("0.0.0.0:8080".parse().unwrap(), Some("a-long-random-token")).is_ok());
/// let short = check_listen("127.0.0.1:8080".parse().unwrap(), Some("s3cret")).unwrap_err();
/// assert_eq!(short.code(), "web-token-too-short");
/// ```
pub fn check_listen(addr: SocketAddr, token: Option<&str>) -> Result<()> {
    if let Some(token) = token {
        let bad = |c: char| !c.is_ascii_graphic() || matches!(c, '"' | ';' | ',' | '\\');
        if token.is_empty() {
            return Err(WebError::InvalidToken {
                reason: "it is empty",
            });
        }
        if token.chars().any(bad) {
            return Err(WebError::InvalidToken {
                reason: "use visible ASCII without spaces, quotes, ';', ',' or '\\'",
            });
        }
        if token.len() < MIN_TOKEN_BYTES {
            return Err(WebError::TokenTooShort {
                min: MIN_TOKEN_BYTES,
            });
        }
        return Ok(());
    }
    if is_loopback(&addr) {
        Ok(())
    } else {
        Err(WebError::TokenRequired { addr })
    }
}

/// Serves `app` on `listener` within `limits` (a header-read timeout and a
/// cap on open connections, see [`ServeLimits`]) until `shutdown` resolves,
/// then stops at once: the dashboard's requests are short reads, and its
/// server-sent event streams never end on their own, so a graceful drain would
/// wait for every open tab.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    crate::accept::run(listener, app, limits, shutdown).await;
    Ok(())
}
