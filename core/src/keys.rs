//! Validated newtypes for the strings callers hand in. Once constructed they are
//! known-good, so stores never re-validate.

use serde::{Serialize, Serializer};
use std::fmt;

use crate::error::{Error, ErrorCode, Result};

/// Reserved prefix of the concurrency keys that capped queues use.
pub const QUEUE_CONCURRENCY_PREFIX: &str = "queue:";

/// What separates the queues of a list (`--queues mail,sms`), and so the one
/// character a queue name may not hold.
const QUEUE_LIST_SEPARATOR: char = ',';

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

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.0
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
    /// A stable schedule key (`docs/schedule-keys.md`): 1–255 characters, no control characters.
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
        check_name(&key, ErrorCode::InvalidScheduleKey, "a schedule key")?;
        Ok(Self(key))
    }
}

string_newtype!(
    /// An idempotency key (`docs/idempotency.md`): non-empty, at most 1024 bytes.
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
    /// A queue name: trimmed; empty means `default`; otherwise 1–255 characters
    /// without control characters, like a job name (`SECURITY.md`), and without
    /// a comma, so that every queue can be named in a list (`--queues a,b`).
    ///
    /// ```
    /// use duraq_core::QueueName;
    /// assert_eq!(QueueName::new("  mail ").unwrap().as_str(), "mail");
    /// assert_eq!(QueueName::new("").unwrap().as_str(), "default");
    /// assert_eq!(QueueName::new("a\x1b[2J").unwrap_err().code().as_str(), "invalid-queue");
    /// assert_eq!(QueueName::new("mail,sms").unwrap_err().code().as_str(), "invalid-queue");
    /// ```
    QueueName
);

impl QueueName {
    /// The queue used when none is given.
    pub const DEFAULT: &'static str = "default";

    /// Normalizes and validates `name`; an empty (or blank) name means
    /// [`QueueName::DEFAULT`], as an unset option does.
    pub fn new(name: impl AsRef<str>) -> Result<Self> {
        let trimmed = name.as_ref().trim();
        if trimmed.is_empty() {
            return Ok(Self::default());
        }
        check_name(trimmed, ErrorCode::InvalidQueue, "a queue name")?;
        if trimmed.contains(QUEUE_LIST_SEPARATOR) {
            return Err(Error::invalid(
                ErrorCode::InvalidQueue,
                "a queue name must not contain a comma (a list of queues could not name it)",
            ));
        }
        Ok(Self(trimmed.to_owned()))
    }

    /// A queue someone named on purpose (a command-line value, a path): like
    /// [`QueueName::new`], except that an empty or blank name is
    /// `invalid-queue` instead of `default`, so that a mistyped or
    /// unexpanded name (`duraq queues pause "$Q"`) never reaches the real
    /// default queue.
    ///
    /// ```
    /// use duraq_core::QueueName;
    /// assert_eq!(QueueName::named(" mail ").unwrap().as_str(), "mail");
    /// assert_eq!(QueueName::named("default").unwrap().as_str(), "default");
    /// assert_eq!(QueueName::named(" ").unwrap_err().code().as_str(), "invalid-queue");
    /// ```
    pub fn named(name: impl AsRef<str>) -> Result<Self> {
        if name.as_ref().trim().is_empty() {
            return Err(Error::invalid(
                ErrorCode::InvalidQueue,
                "a queue name must not be empty",
            ));
        }
        Self::new(name)
    }

    /// The reserved concurrency key a capped queue gives its jobs.
    pub fn concurrency_key(&self) -> String {
        queue_concurrency_key(&self.0)
    }
}

/// The reserved concurrency key (`queue:<name>`) of a capped queue named `queue`.
pub fn queue_concurrency_key(queue: &str) -> String {
    format!("{QUEUE_CONCURRENCY_PREFIX}{queue}")
}

impl Default for QueueName {
    fn default() -> Self {
        Self(Self::DEFAULT.to_owned())
    }
}

/// The most characters a job name, queue name, concurrency key or schedule key
/// may have: short enough for every store's unique indexes.
pub const MAX_NAME_CHARS: usize = 255;

/// The one rule for names and keys (`SECURITY.md`): 1–255 characters, no control
/// characters. `what` starts the message ("a queue name").
pub(crate) fn check_name(name: &str, code: ErrorCode, what: &str) -> Result<()> {
    let chars = name.chars().count();
    if chars == 0 || chars > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        return Err(Error::invalid(
            code,
            format!("{what} must be 1 to {MAX_NAME_CHARS} characters without control characters"),
        ));
    }
    Ok(())
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
        check_name(name, ErrorCode::InvalidJobName, "a job name")?;
        Ok(Self(name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The queue name rule as a table: what each way of naming a queue
    /// accepts (the normalized name) or refuses (`invalid-queue`), for every
    /// store and every caller, since stores take only a [`QueueName`].
    #[test]
    fn the_queue_name_rule() {
        let longest = "🦀".repeat(MAX_NAME_CHARS);
        let too_long = "q".repeat(MAX_NAME_CHARS + 1);
        // (name, by `new` (unset or empty means default), by `named`)
        let cases: [(&str, Option<&str>, Option<&str>); 14] = [
            ("mail", Some("mail"), Some("mail")),
            ("  mail\t", Some("mail"), Some("mail")),
            ("default", Some("default"), Some("default")),
            ("a b", Some("a b"), Some("a b")),
            ("mail:eu/1", Some("mail:eu/1"), Some("mail:eu/1")),
            (&longest, Some(&longest), Some(&longest)),
            ("", Some("default"), None),
            ("   ", Some("default"), None),
            ("a,b", None, None),
            (",", None, None),
            (" mail, ", None, None),
            ("a\u{1b}[2J", None, None),
            ("line\nbreak", None, None),
            (&too_long, None, None),
        ];
        for (name, by_new, by_named) in cases {
            for (how, got, want) in [
                ("new", QueueName::new(name), by_new),
                ("named", QueueName::named(name), by_named),
            ] {
                match (got, want) {
                    (Ok(q), Some(want)) => assert_eq!(q.as_str(), want, "{how}({name:?})"),
                    (Err(e), None) => {
                        assert_eq!(e.code(), ErrorCode::InvalidQueue, "{how}({name:?})")
                    }
                    (got, want) => panic!("{how}({name:?}) gave {got:?}, expected {want:?}"),
                }
            }
        }
    }
}
