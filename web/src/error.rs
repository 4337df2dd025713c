//! The one error type of `duraq-web`, with stable codes.
//!
//! Why an enum of its own: the CLI maps it to `error[<code>]` and exit status 1,
//! and an application nesting the router gets typed answers from
//! [`crate::check_listen`] and [`crate::serve`] instead of strings. Store errors
//! keep their own code (`job-not-found`, `database-busy`, …) through
//! [`WebError::code`], so a page and the CLI name a failure the same way.

use std::net::SocketAddr;

/// What can go wrong while starting or serving the dashboard.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WebError {
    /// A non-loopback listen address was asked for without a token: anyone on
    /// the network could read every job and retry or cancel it.
    #[error(
        "refusing to listen on {addr} without a token: set DURAQ_WEB_TOKEN to listen \
         beyond the loopback interface"
    )]
    TokenRequired {
        /// The address that was refused.
        addr: SocketAddr,
    },
    /// The token is unusable (empty, or holding characters a header cannot carry).
    #[error("invalid web token: {reason}")]
    InvalidToken {
        /// Why (never the token itself).
        reason: &'static str,
    },
    /// The token is shorter than it must be to be a secret.
    #[error("the web token is too short: use at least {min} random bytes (`openssl rand -hex 16` makes one)")]
    TokenTooShort {
        /// The shortest length accepted, in bytes.
        min: usize,
    },
    /// The listen address could not be bound or served.
    #[error("cannot serve on {addr}")]
    Io {
        /// The address.
        addr: String,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The store answered with an error.
    #[error(transparent)]
    Store(#[from] duraq_core::Error),
    /// The operating system had no randomness for the CSRF token.
    #[error("no random bytes for the CSRF token: {0}")]
    Random(String),
}

impl WebError {
    /// The stable code: `web-token-required`, `invalid-web-token`,
    /// `web-token-too-short`,
    /// `web-listen-failed`, `web-random-unavailable`, or the store error's own.
    pub fn code(&self) -> &'static str {
        match self {
            Self::TokenRequired { .. } => "web-token-required",
            Self::InvalidToken { .. } => "invalid-web-token",
            Self::TokenTooShort { .. } => "web-token-too-short",
            Self::Io { .. } => "web-listen-failed",
            Self::Store(e) => e.code().as_str(),
            Self::Random(_) => "web-random-unavailable",
        }
    }
}

/// `Result` with [`WebError`].
pub type Result<T, E = WebError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable() {
        let addr: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        assert_eq!(
            WebError::TokenRequired { addr }.code(),
            "web-token-required"
        );
        assert_eq!(
            WebError::InvalidToken { reason: "empty" }.code(),
            "invalid-web-token"
        );
        assert_eq!(
            WebError::TokenTooShort { min: 16 }.code(),
            "web-token-too-short"
        );
        let missing = duraq_core::Error::job_not_found("x");
        assert_eq!(WebError::from(missing).code(), "job-not-found");
    }
}
