//! A string that never shows itself. Passwords and API keys live in a [`Secret`]
//! so that no `Debug` output, log line or error message can carry them: the only
//! way to read the value is the explicit [`Secret::expose`].

use std::fmt;

/// A credential; `Debug` and `Display` print `***`.
///
/// ```
/// use duraq_mailer::Secret;
/// let key = Secret::new("re_live_abc");
/// assert_eq!(format!("{key:?} {key}"), "*** ***");
/// assert_eq!(key.expose(), "re_live_abc");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}
