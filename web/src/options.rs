//! [`WebOptions`]: what a router may do and where it lives.
//!
//! The token is held so that `Debug` never prints it (it would otherwise reach a
//! log line the first time someone writes `{options:?}`).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use duraq_core::Producer;

use crate::builtin_args::ArgsCheck;

/// How a [`crate::router`] behaves.
///
/// ```
/// use duraq_web::WebOptions;
/// let opts = WebOptions::new().read_only(true).token("s3cret").mount_path("/admin/jobs/");
/// assert!(opts.is_read_only());
/// assert_eq!(opts.base(), "/admin/jobs");
/// assert!(!format!("{opts:?}").contains("s3cret"));
/// ```
#[derive(Clone)]
pub struct WebOptions {
    pub(crate) read_only: bool,
    pub(crate) token: Option<String>,
    pub(crate) mount_path: String,
    pub(crate) poll_interval: Duration,
    pub(crate) secrets: Vec<String>,
    pub(crate) allowed_hosts: Vec<String>,
    pub(crate) max_live_streams: usize,
    pub(crate) producer: Option<Arc<dyn Producer>>,
    pub(crate) args_check: ArgsCheck,
}

impl Default for WebOptions {
    fn default() -> Self {
        Self {
            read_only: false,
            token: None,
            mount_path: String::new(),
            poll_interval: Duration::from_secs(1),
            secrets: Vec::new(),
            allowed_hosts: Vec::new(),
            max_live_streams: Self::DEFAULT_LIVE_STREAMS,
            producer: None,
            args_check: crate::builtin_args::check_args,
        }
    }
}

impl WebOptions {
    /// The default cap on open live-update streams: 100.
    pub const DEFAULT_LIVE_STREAMS: usize = 100;

    /// Read-write, no token, mounted at `/`, live counts polled every second.
    pub fn new() -> Self {
        Self::default()
    }

    /// Hide every action (retry, cancel) and answer every POST with 403.
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// Require this token on every request (`Authorization: Bearer`, or a
    /// `?token=` login that sets an HttpOnly cookie). An empty token means none.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        let token = token.into();
        self.token = (!token.is_empty()).then_some(token);
        self
    }

    /// Where the router is nested (`/admin/jobs`), so that links and redirects
    /// lead back into it; default the root.
    pub fn mount_path(mut self, path: impl Into<String>) -> Self {
        let path = path.into();
        let trimmed = path.trim_end_matches('/');
        self.mount_path = if trimmed.is_empty() || trimmed.starts_with('/') {
            trimmed.to_string()
        } else {
            format!("/{trimmed}")
        };
        self
    }

    /// How often the live-count task reads the counts (default 1 s, at least 50 ms).
    pub fn poll_interval(mut self, every: Duration) -> Self {
        self.poll_interval = every.max(Duration::from_millis(50));
        self
    }

    /// Texts never to show (a database password): replaced by `***` in every
    /// error and `lastError` the pages render. The token is always among them.
    pub fn secrets<I, S>(mut self, secrets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.secrets.extend(
            secrets
                .into_iter()
                .map(Into::into)
                .filter(|s| !s.is_empty()),
        );
        self
    }

    /// `text` with every whole occurrence of a configured secret (and the
    /// token) replaced by `***` ([`crate::mask_secrets`]).
    pub fn scrub(&self, text: &str) -> String {
        let secrets = self.secrets.iter().chain(self.token.iter());
        crate::mask_secrets(text, secrets.map(String::as_str))
    }

    /// Without a token, serve requests whose `Host` is also one of these names
    /// (any port), besides the loopback names and addresses: the name a
    /// reverse proxy or an SSH tunnel forwards. Every other `Host` is answered
    /// 421, so a web page whose domain rebinds to 127.0.0.1 reads nothing.
    pub fn allowed_hosts<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_hosts
            .extend(names.into_iter().map(Into::into).filter(|n| !n.is_empty()));
        self
    }

    /// At most this many live-update streams (`/events`, one per open page)
    /// at once; more are answered 503 (default
    /// [`WebOptions::DEFAULT_LIVE_STREAMS`], at least 1).
    pub fn max_live_streams(mut self, streams: usize) -> Self {
        self.max_live_streams = streams.max(1);
        self
    }

    /// Let the HTTP API enqueue through `producer` (`POST /api/v1/jobs`,
    /// `docs/http-api.md`); without it those answer 501. Pass the same
    /// `Arc<dyn Store>` as the router's store (it converts). A read-only
    /// router refuses them whatever this says.
    pub fn producer(mut self, producer: Arc<dyn Producer>) -> Self {
        self.producer = Some(producer);
        self
    }

    /// How the HTTP API checks a job's args before enqueuing it (422
    /// `invalid-args`, nothing written): by default the built-in jobs'
    /// ([`crate::builtin_args::check_args`]); a program with more built-in
    /// handlers (the `duraq` program's `duraq.mail.deliver`) gives a check
    /// that runs that one and its own.
    pub fn args_check(mut self, check: ArgsCheck) -> Self {
        self.args_check = check;
        self
    }

    /// Whether actions are hidden and POSTs refused.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Whether a token is required.
    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    /// The mount path without a trailing slash (`""` at the root).
    pub fn base(&self) -> &str {
        &self.mount_path
    }
}

impl fmt::Debug for WebOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebOptions")
            .field("read_only", &self.read_only)
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("mount_path", &self.mount_path)
            .field("poll_interval", &self.poll_interval)
            .field("secrets", &self.secrets.len())
            .field("allowed_hosts", &self.allowed_hosts)
            .field("max_live_streams", &self.max_live_streams)
            .field("producer", &self.producer.is_some())
            .finish()
    }
}
