//! The handler registry: job name → handler. A worker claims exactly the names it
//! holds (`docs/jobs.md`), so the registry is also the worker's claim filter. Names are
//! validated like enqueued names and each may be registered once: a second handler
//! for one name would make which code runs depend on registration order.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use super::handler::{JobContext, JobError, JobHandler, JobResult, JsonHandler, Typed};
use super::WorkerError;
use crate::keys::JobName;

/// A registered handler plus its optional backoff override.
#[derive(Clone)]
pub(crate) struct Entry {
    pub(crate) handler: Arc<dyn JsonHandler>,
    pub(crate) backoff: Option<Arc<dyn Fn(u32) -> Option<Duration> + Send + Sync>>,
}

impl Entry {
    /// The retry delay after failed attempt `attempt`: registry override, then the
    /// handler's own, else `None` (the store's policy).
    pub(crate) fn backoff(&self, attempt: u32) -> Option<Duration> {
        match &self.backoff {
            Some(f) => f(attempt),
            None => self.handler.backoff(attempt),
        }
    }
}

/// Job name → handler.
///
/// ```
/// use duraq_core::{ErrorCode, JobResult, Registry};
/// let registry = Registry::new()
///     .register_fn("duraq.noop", |_ctx, _args| async { Ok(()) })
///     .unwrap()
///     .register_fn("app.later", |ctx, _args| async move {
///         Ok(ctx.reschedule_in(std::time::Duration::from_secs(60)))
///     })
///     .unwrap();
/// assert_eq!(registry.names(), vec!["app.later".to_string(), "duraq.noop".to_string()]);
/// let dup = registry.register_fn("duraq.noop", |_ctx, _args| async { Ok(JobResult::Completed) });
/// assert_eq!(dup.unwrap_err().code(), ErrorCode::DuplicateHandler);
/// ```
#[derive(Clone, Default)]
pub struct Registry {
    entries: BTreeMap<String, Entry>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("names", &self.names())
            .finish()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a typed handler under its args type's name
    /// ([`crate::JobArgs::NAME`]). It runs on the JSON path: the registry wraps it
    /// in a [`JsonHandler`] that decodes the args first.
    ///
    /// Errors: `duplicate-handler` when the name is taken, `invalid-job-name`.
    pub fn register<H: JobHandler>(self, handler: H) -> Result<Self, WorkerError> {
        self.register_json(<H::Args as crate::JobArgs>::NAME, Typed(handler))
    }

    /// Registers an untyped handler over the raw JSON args under `name`.
    ///
    /// Errors: as [`Registry::register`].
    pub fn register_json<H: JsonHandler>(
        self,
        name: &str,
        handler: H,
    ) -> Result<Self, WorkerError> {
        self.insert(name, Arc::new(handler))
    }

    /// Registers a closure `|ctx: JobContext, args: Value| async { … }` returning
    /// `Result<R, JobError>` where `R` is `()` or a [`JobResult`].
    ///
    /// Errors: as [`Registry::register`].
    pub fn register_fn<F, Fut, R>(self, name: &str, f: F) -> Result<Self, WorkerError>
    where
        F: Fn(JobContext, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, JobError>> + Send + 'static,
        R: Into<JobResult>,
    {
        self.register_json(name, FnHandler(f))
    }

    /// Overrides the retry delay of an already registered name: `f(attempt)` is the
    /// delay after failed attempt `attempt` (1-based); `None` keeps the store's
    /// policy. Wins over the handler's own [`JobHandler::backoff`].
    ///
    /// Errors: `invalid-worker-config` when `name` has no handler.
    pub fn backoff<F>(mut self, name: &str, f: F) -> Result<Self, WorkerError>
    where
        F: Fn(u32) -> Option<Duration> + Send + Sync + 'static,
    {
        let name = JobName::new(name)?;
        let entry = self.entries.get_mut(name.as_str()).ok_or_else(|| {
            WorkerError::InvalidConfig(format!("no handler registered for {name}"))
        })?;
        entry.backoff = Some(Arc::new(f));
        Ok(self)
    }

    /// The registered names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.entries.keys().cloned().collect()
    }

    /// Whether `name` has a handler.
    pub fn contains(&self, name: &str) -> bool {
        self.entries.contains_key(name.trim())
    }

    /// How many handlers are registered.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no handler is registered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Entry> {
        self.entries.get(name)
    }

    fn insert(mut self, name: &str, handler: Arc<dyn JsonHandler>) -> Result<Self, WorkerError> {
        let name = JobName::new(name)?;
        if self.entries.contains_key(name.as_str()) {
            return Err(WorkerError::DuplicateHandler(name.as_str().to_owned()));
        }
        self.entries.insert(
            name.as_str().to_owned(),
            Entry {
                handler,
                backoff: None,
            },
        );
        Ok(self)
    }
}

struct FnHandler<F>(F);

#[async_trait]
impl<F, Fut, R> JsonHandler for FnHandler<F>
where
    F: Fn(JobContext, Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, JobError>> + Send + 'static,
    R: Into<JobResult>,
{
    async fn perform(&self, ctx: &JobContext, args: Value) -> Result<JobResult, JobError> {
        (self.0)(ctx.clone(), args).await.map(Into::into)
    }
}
