//! Validated newtypes for the strings callers hand in. Once constructed they are
//! known-good, so stores never re-validate.

use serde::{Serialize, Serializer};
use std::fmt;

use crate::error::{Error, ErrorCode, Result};

/// Reserved prefix of the concurrency keys that capped queues use.
pub const QUEUE_CONCURRENCY_PREFIX: &str = "queue:";

macro_rules! string_newtype {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            /// The validated string.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }
    };
}

string_newtype!(
    /// A stable schedule key (SPEC §5): 1–255 characters, no control characters.
    ///
    /// ```
    /// use duraq_core::ScheduleKey;
    /// assert!(ScheduleKey::new("event:42:reminder:24h").is_ok());
    /// assert_eq!(ScheduleKey::new("").unwrap_err().code().as_str(), "invalid-schedule-key");
    /// ```
    ScheduleKey
);

impl ScheduleKey {
    /// Validates `key`.
    pub fn new(key: impl Into<String>) -> Result<Self> {
        let key = key.into();
        let chars = key.chars().count();
        if chars == 0 || chars > 255 || key.chars().any(char::is_control) {
            return Err(Error::invalid(
                ErrorCode::InvalidScheduleKey,
                "a schedule key must be 1 to 255 characters without control characters",
            ));
        }
        Ok(Self(key))
    }
}

string_newtype!(
    /// An idempotency key (SPEC §6): non-empty, at most 1024 bytes.
    ///
    /// ```
    /// use duraq_core::IdempotencyKey;
    /// assert!(IdempotencyKey::new("order-7:receipt").is_ok());
    /// assert!(IdempotencyKey::new("x".repeat(1025)).is_err());
    /// ```
    IdempotencyKey
);

impl IdempotencyKey {
    /// Validates `key`.
    pub fn new(key: impl Into<String>) -> Result<Self> {
        let key = key.into();
        if key.is_empty() || key.len() > 1024 {
            return Err(Error::invalid(
                ErrorCode::InvalidIdempotencyKey,
                "an idempotency key must be 1 to 1024 bytes",
            ));
        }
        Ok(Self(key))
    }
}

string_newtype!(
    /// A queue name: trimmed; empty means `default`.
    ///
    /// ```
    /// use duraq_core::QueueName;
    /// assert_eq!(QueueName::new("  mail ").as_str(), "mail");
    /// assert_eq!(QueueName::new("").as_str(), "default");
    /// ```
    QueueName
);

impl QueueName {
    /// The queue used when none is given.
    pub const DEFAULT: &'static str = "default";

    /// Normalizes `name` (never fails).
    pub fn new(name: impl AsRef<str>) -> Self {
        let trimmed = name.as_ref().trim();
        Self(if trimmed.is_empty() {
            Self::DEFAULT.to_owned()
        } else {
            trimmed.to_owned()
        })
    }

    /// The reserved concurrency key a capped queue gives its jobs.
    pub fn concurrency_key(&self) -> String {
        format!("{QUEUE_CONCURRENCY_PREFIX}{}", self.0)
    }
}

impl Default for QueueName {
    fn default() -> Self {
        Self(Self::DEFAULT.to_owned())
    }
}

string_newtype!(
    /// A job name: trimmed, 1–255 characters, no control characters.
    ///
    /// ```
    /// use duraq_core::JobName;
    /// assert_eq!(JobName::new(" send_email ").unwrap().as_str(), "send_email");
    /// assert_eq!(JobName::new(" ").unwrap_err().code().as_str(), "invalid-job-name");
    /// ```
    JobName
);

impl JobName {
    /// Validates `name`.
    pub fn new(name: impl AsRef<str>) -> Result<Self> {
        let name = name.as_ref().trim();
        let chars = name.chars().count();
        if chars == 0 || chars > 255 || name.chars().any(char::is_control) {
            return Err(Error::invalid(
                ErrorCode::InvalidJobName,
                "a job name must be 1 to 255 characters without control characters",
            ));
        }
        Ok(Self(name.to_owned()))
    }
}
