//! The application under test: typed jobs and handlers the kit's tests run.
//! Each handler records what it saw in a shared `Seen`, so a test can tell
//! whether (and how often) the real handler ran. Shared by `kit.rs` and
//! `inline.rs`, each of which uses part of it.
#![allow(dead_code)]

/// Pastes each named case (`async fn case(make: MakeKit)`) into a
/// `mod memory` and a `mod sqlite` test, one kit constructor each.
macro_rules! both {
    ($($case:ident),+ $(,)?) => {
        mod memory {
            $( #[tokio::test] async fn $case() { super::$case(duraq_testkit::TestKit::memory).await } )+
        }
        mod sqlite {
            $( #[tokio::test] async fn $case() { super::$case(duraq_testkit::TestKit::sqlite_temp).await } )+
        }
    };
}

use std::sync::{Arc, Mutex};
use std::time::Duration;

use duraq_core::{EnqueueOptions, JobArgs, JobContext, JobError, JobHandler, JobResult, Registry};
use duraq_testkit::{Error, TestKit};
use serde::{Deserialize, Serialize};

/// A kit constructor: `TestKit::memory` or `TestKit::sqlite_temp`.
pub type MakeKit = fn(Registry) -> Result<TestKit, Error>;

/// What the handlers saw: (job name, a number from the args, attempt).
pub type Seen = Arc<Mutex<Vec<(&'static str, i64, u32)>>>;

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct SendWelcome {
    pub user_id: i64,
}
impl JobArgs for SendWelcome {
    const NAME: &'static str = "send_welcome";
    fn options() -> EnqueueOptions {
        EnqueueOptions::new().queue("mail")
    }
}
/// Completes; discards user 0 (no such user).
pub struct Welcomer(pub Seen);
#[duraq_core::async_trait]
impl JobHandler for Welcomer {
    type Args = SendWelcome;
    async fn perform(&self, ctx: &JobContext, args: SendWelcome) -> Result<JobResult, JobError> {
        self.0
            .lock()
            .unwrap()
            .push((SendWelcome::NAME, args.user_id, ctx.attempt()));
        if args.user_id == 0 {
            return Err(JobError::new("no such user").discard());
        }
        Ok(JobResult::Completed)
    }
}

/// Fails its first `fails` attempts; 3 retries, 30 s apart.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Flaky {
    pub fails: u32,
}
pub const FLAKY_BACKOFF: Duration = Duration::from_secs(30);
impl JobArgs for Flaky {
    const NAME: &'static str = "flaky";
    fn options() -> EnqueueOptions {
        EnqueueOptions::new().max_retries(3)
    }
    fn backoff(_attempt: u32) -> Option<Duration> {
        Some(FLAKY_BACKOFF)
    }
}
pub struct FlakyHandler(pub Seen);
#[duraq_core::async_trait]
impl JobHandler for FlakyHandler {
    type Args = Flaky;
    async fn perform(&self, ctx: &JobContext, args: Flaky) -> Result<JobResult, JobError> {
        self.0
            .lock()
            .unwrap()
            .push((Flaky::NAME, i64::from(args.fails), ctx.attempt()));
        if ctx.attempt() <= args.fails {
            return Err(JobError::new("upstream unavailable"));
        }
        Ok(JobResult::Completed)
    }
}

/// Signs a user up: enqueues their welcome mail through the job's own store.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct SignUp {
    pub user_id: i64,
}
impl JobArgs for SignUp {
    const NAME: &'static str = "sign_up";
}
pub struct SignUpHandler(pub Seen);
#[duraq_core::async_trait]
impl JobHandler for SignUpHandler {
    type Args = SignUp;
    async fn perform(&self, ctx: &JobContext, args: SignUp) -> Result<JobResult, JobError> {
        self.0
            .lock()
            .unwrap()
            .push((SignUp::NAME, args.user_id, ctx.attempt()));
        let job = SendWelcome {
            user_id: args.user_id,
        }
        .job()?;
        ctx.store().enqueue(job).await?;
        Ok(JobResult::Completed)
    }
}

/// Panics: the attempt fails, the kit goes on.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Explode;
impl JobArgs for Explode {
    const NAME: &'static str = "explode";
    fn options() -> EnqueueOptions {
        EnqueueOptions::new().max_retries(0)
    }
}
pub struct Exploder;
#[duraq_core::async_trait]
impl JobHandler for Exploder {
    type Args = Explode;
    async fn perform(&self, _ctx: &JobContext, _args: Explode) -> Result<JobResult, JobError> {
        panic!("boom");
    }
}

/// Snoozes by zero, forever: a drain cannot settle.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Forever;
impl JobArgs for Forever {
    const NAME: &'static str = "forever";
}
pub struct ForeverHandler;
#[duraq_core::async_trait]
impl JobHandler for ForeverHandler {
    type Args = Forever;
    async fn perform(&self, ctx: &JobContext, _args: Forever) -> Result<JobResult, JobError> {
        Ok(ctx.reschedule_in(Duration::ZERO))
    }
}

/// Never registered: `perform` cannot run it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Unhandled;
impl JobArgs for Unhandled {
    const NAME: &'static str = "unhandled";
}

/// A kit from `make` with every handler above, and what they see.
pub fn kit(make: MakeKit) -> (TestKit, Seen) {
    let seen = Seen::default();
    (make(registry(&seen)).unwrap(), seen)
}

/// Every handler above, reporting to `seen`.
pub fn registry(seen: &Seen) -> Registry {
    Registry::new()
        .register(Welcomer(seen.clone()))
        .unwrap()
        .register(FlakyHandler(seen.clone()))
        .unwrap()
        .register(SignUpHandler(seen.clone()))
        .unwrap()
        .register(Exploder)
        .unwrap()
        .register(ForeverHandler)
        .unwrap()
}

/// The (name, number, attempt) triples seen so far.
pub fn seen(seen: &Seen) -> Vec<(&'static str, i64, u32)> {
    seen.lock().unwrap().clone()
}
