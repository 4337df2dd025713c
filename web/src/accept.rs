//! The accept loop behind [`crate::serve`]: bounded connections for a server
//! that anyone who can reach the port may connect to, token or not.
//!
//! - Every connection must finish a request's headers within the header-read
//!   timeout (hyper's, which also covers an idle keep-alive connection), so a
//!   slow client cannot hold a connection, and its file descriptor, for long.
//! - At most [`ServeLimits::max_connections`] connections are open. A new one
//!   beyond the cap closes the oldest connection that is idle (still waiting
//!   for its headers, or between requests), so a flood of half-sent requests
//!   cannot lock out a client that sends a whole request at once: its request
//!   is in progress, not idle, by the time the flood needs room again. When
//!   every connection is busy (requests and live-update streams in progress)
//!   the new one gets a 503 and is closed.
//!
//! A connection is busy from the moment its request's headers are parsed until
//! its response body has been written (or dropped).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::Body;
use axum::Router;
use http_body_util::BodyExt;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tower::ServiceExt;

/// How many connections a server holds and how long a client may take to
/// send a request's headers.
///
/// ```
/// use std::time::Duration;
/// use duraq_web::ServeLimits;
/// let limits = ServeLimits::new().max_connections(64).header_read_timeout(Duration::from_secs(5));
/// assert_eq!(limits.connections(), 64);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServeLimits {
    max_connections: usize,
    header_read_timeout: Duration,
}

impl Default for ServeLimits {
    fn default() -> Self {
        Self {
            max_connections: Self::DEFAULT_CONNECTIONS,
            header_read_timeout: Self::DEFAULT_HEADER_READ_TIMEOUT,
        }
    }
}

impl ServeLimits {
    /// The default cap on open connections: 256 (well under the usual limit
    /// of 1,024 open files).
    pub const DEFAULT_CONNECTIONS: usize = 256;
    /// The default time a client has to send a request's headers: 10 s.
    pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// At most `n` open connections (at least 1).
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// Close a connection whose request headers are not complete within `d`
    /// (at least 1 ms).
    pub fn header_read_timeout(mut self, d: Duration) -> Self {
        self.header_read_timeout = d.max(Duration::from_millis(1));
        self
    }

    /// The connection cap.
    pub fn connections(&self) -> usize {
        self.max_connections
    }
}

/// One open connection, as the registry sees it.
struct Open {
    /// Requests in progress (headers parsed, body not yet written).
    busy: Arc<AtomicUsize>,
    /// Held only to be dropped: that closes the connection.
    _close: oneshot::Sender<()>,
}

/// The open connections, oldest first (ids grow).
#[derive(Default)]
struct Registry {
    open: Mutex<BTreeMap<u64, Open>>,
    next: AtomicUsize,
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Open>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a new connection when there is room or an idle one can be
    /// closed to make some; `None` when every open connection is busy.
    fn admit(&self, cap: usize) -> Option<(u64, Arc<AtomicUsize>, oneshot::Receiver<()>)> {
        let mut open = self.lock();
        if open.len() >= cap {
            let idle = open
                .iter()
                .find(|(_, c)| c.busy.load(Ordering::Acquire) == 0)
                .map(|(id, _)| *id)?;
            // Dropping the sender closes that connection.
            open.remove(&idle);
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed) as u64;
        let busy = Arc::new(AtomicUsize::new(0));
        let (close, closed) = oneshot::channel();
        let entry = Open {
            busy: busy.clone(),
            _close: close,
        };
        open.insert(id, entry);
        Some((id, busy, closed))
    }

    fn forget(&self, id: u64) {
        self.lock().remove(&id);
    }
}

/// Counts a request as in progress until dropped (with its response body).
struct Busy(Arc<AtomicUsize>);

impl Busy {
    fn new(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::AcqRel);
        Self(count.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

const REFUSED: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\n\
    retry-after: 1\r\ncontent-length: 0\r\n\r\n";

/// Accepts connections on `listener` and serves `app` on each within
/// `limits`, until `shutdown` resolves; then closes every connection.
pub(crate) async fn run(
    listener: TcpListener,
    app: Router,
    limits: ServeLimits,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let registry = Arc::new(Registry::default());
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors (or a connection reset before it
                    // was accepted): wait a moment rather than spin.
                    tracing::warn!("dashboard: accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Some((id, busy, closed)) = registry.admit(limits.max_connections) else {
            let _ = stream.try_write(REFUSED);
            continue;
        };
        let http = http.clone();
        let app = app.clone();
        let registry = registry.clone();
        tokio::spawn(async move {
            serve_one(&http, stream, app, busy, closed).await;
            registry.forget(id);
        });
    }
    // Dropping every sender closes every connection.
    registry.lock().clear();
}

async fn serve_one(
    http: &http1::Builder,
    stream: TcpStream,
    app: Router,
    busy: Arc<AtomicUsize>,
    closed: oneshot::Receiver<()>,
) {
    let service = hyper::service::service_fn(move |request: hyper::Request<_>| {
        let app = app.clone();
        let guard = Busy::new(&busy);
        async move {
            let response = app.oneshot(request.map(Body::new)).await?;
            // The request stays busy until its body is written or dropped.
            Ok::<_, std::convert::Infallible>(response.map(|body| {
                Body::new(body.map_frame(move |frame| {
                    let _ = &guard;
                    frame
                }))
            }))
        }
    });
    let connection = http.serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        served = connection => {
            if let Err(e) = served {
                tracing::debug!("dashboard: connection ended: {e}");
            }
        }
        _ = closed => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_registry_closes_its_oldest_idle_connection_or_refuses() {
        let registry = Registry::default();
        let (first, first_busy, mut first_closed) = registry.admit(2).unwrap();
        let (_, second_busy, mut second_closed) = registry.admit(2).unwrap();
        // Full: the oldest idle one (the first) makes room.
        let (third, third_busy, _third_closed) = registry.admit(2).unwrap();
        assert!(
            matches!(
                first_closed.try_recv(),
                Err(oneshot::error::TryRecvError::Closed)
            ),
            "the first was closed"
        );
        assert!(matches!(
            second_closed.try_recv(),
            Err(oneshot::error::TryRecvError::Empty)
        ));
        registry.forget(first);
        // Both open ones busy: no room.
        let _a = Busy::new(&second_busy);
        let _b = Busy::new(&third_busy);
        assert!(registry.admit(2).is_none());
        drop(_b);
        assert!(registry.admit(2).is_some(), "the third is idle again");
        assert!(!registry.lock().contains_key(&third));
        drop(first_busy);
    }
}
