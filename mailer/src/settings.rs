//! SMTP connection settings and how they are read from the environment. Reading
//! goes through a lookup function rather than `std::env` directly, so the rules
//! (defaults, TLS mode names, which errors) are testable without touching the
//! process environment.

use std::net::IpAddr;
use std::str::FromStr;
use std::time::Duration;

use crate::error::{MailError, MailResult};
use crate::secret::Secret;

/// How the SMTP connection is secured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsMode {
    /// Plain text (local relays and tests only).
    None,
    /// Plain connect, then a required `STARTTLS` (port 587).
    StartTls,
    /// TLS from the first byte (port 465).
    Tls,
}

impl FromStr for TlsMode {
    type Err = MailError;
    fn from_str(s: &str) -> MailResult<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "none" | "plain" => Ok(Self::None),
            "starttls" => Ok(Self::StartTls),
            "tls" | "wrapper" | "smtps" => Ok(Self::Tls),
            other => Err(MailError::Config {
                message: format!("unknown TLS mode {other:?} (none|starttls|tls)"),
            }),
        }
    }
}

/// Where and how to reach an SMTP server. `Debug` never shows the password.
///
/// ```
/// use duraq_mailer::{SmtpSettings, TlsMode};
/// let env = |k: &str| match k {
///     "DURAQ_SMTP_HOST" => Some("mail.example.com".to_string()),
///     "DURAQ_SMTP_PASSWORD" => Some("hunter2".to_string()),
///     _ => None,
/// };
/// let s = SmtpSettings::from_lookup(env).unwrap();
/// assert_eq!((s.port, s.tls), (587, TlsMode::StartTls));
/// assert!(!format!("{s:?}").contains("hunter2"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmtpSettings {
    /// The SMTP server's host name or address.
    pub host: String,
    /// The server's port (587 for STARTTLS, 465 for TLS, 25 for none).
    pub port: u16,
    /// How the connection is encrypted.
    pub tls: TlsMode,
    /// The AUTH user; credentials are refused over plaintext except to loopback.
    pub username: Option<String>,
    /// The AUTH password, printed as `***` and scrubbed from server replies.
    pub password: Option<Secret>,
    /// The sender frozen into payloads without one.
    pub default_from: Option<String>,
    /// Connection and command timeout (default 30 s).
    pub timeout: Option<Duration>,
}

impl SmtpSettings {
    /// `host:port` with STARTTLS, no credentials.
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        Self {
            host: host.into(),
            port,
            tls: TlsMode::StartTls,
            username: None,
            password: None,
            default_from: None,
            timeout: None,
        }
    }
    /// Sets the TLS mode.
    pub fn tls(mut self, tls: TlsMode) -> Self {
        self.tls = tls;
        self
    }
    /// Sets the credentials.
    pub fn credentials(mut self, username: impl Into<String>, password: Secret) -> Self {
        self.username = Some(username.into());
        self.password = Some(password);
        self
    }
    /// Sets the default sender.
    pub fn default_from(mut self, from: impl Into<String>) -> Self {
        self.default_from = Some(from.into());
        self
    }
    /// Sets the timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Refuses credentials over a plaintext connection (`SECURITY.md`): with a user
    /// name or password configured and [`TlsMode::None`], the host must be a
    /// loopback address (`127.0.0.0/8`, `::1`, `localhost`). Looks at the
    /// settings only — no name is resolved and nothing is connected.
    /// Errors: `mail-smtp-plaintext-auth`.
    ///
    /// ```
    /// use duraq_mailer::{Secret, SmtpSettings, TlsMode};
    /// let creds = |host: &str| SmtpSettings::new(host, 25).tls(TlsMode::None).credentials("joe", Secret::new("pw"));
    /// assert_eq!(creds("192.0.2.1").check_plaintext_auth().unwrap_err().code(), "mail-smtp-plaintext-auth");
    /// for host in ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LOCALHOST."] {
    ///     assert!(creds(host).check_plaintext_auth().is_ok(), "{host}");
    /// }
    /// assert!(creds("192.0.2.1").tls(TlsMode::StartTls).check_plaintext_auth().is_ok());
    /// assert!(SmtpSettings::new("192.0.2.1", 25).tls(TlsMode::None).check_plaintext_auth().is_ok());
    /// ```
    pub fn check_plaintext_auth(&self) -> MailResult<()> {
        let has_credentials = self.username.is_some() || self.password.is_some();
        if has_credentials && self.tls == TlsMode::None && !is_loopback_host(&self.host) {
            return Err(MailError::PlaintextAuth {
                host: self.host.clone(),
            });
        }
        Ok(())
    }

    /// Reads `DURAQ_SMTP_HOST` (required), `DURAQ_SMTP_PORT` (default by TLS
    /// mode: 587 STARTTLS, 465 TLS, 25 none), `DURAQ_SMTP_TLS`
    /// (`starttls`|`tls`|`none`, default `starttls`), `DURAQ_SMTP_USERNAME`,
    /// `DURAQ_SMTP_PASSWORD` and `DURAQ_MAIL_FROM` through `lookup`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> MailResult<Self> {
        let host = lookup("DURAQ_SMTP_HOST")
            .filter(|h| !h.trim().is_empty())
            .ok_or_else(|| MailError::Config {
                message: "DURAQ_SMTP_HOST is not set".into(),
            })?;
        Self::from_lookup_with_host(host, TlsMode::StartTls, lookup)
    }

    /// As [`SmtpSettings::from_lookup`] with a fixed default host and TLS mode
    /// (e.g. a provider's relay), which the variables may still override.
    pub fn from_lookup_with_host(
        default_host: impl Into<String>,
        default_tls: TlsMode,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> MailResult<Self> {
        let host = lookup("DURAQ_SMTP_HOST").unwrap_or_else(|| default_host.into());
        let tls = lookup("DURAQ_SMTP_TLS")
            .map(|t| t.parse())
            .transpose()?
            .unwrap_or(default_tls);
        let port = match lookup("DURAQ_SMTP_PORT") {
            Some(p) => p.trim().parse().map_err(|_| MailError::Config {
                message: format!("DURAQ_SMTP_PORT must be a port number, got {p:?}"),
            })?,
            None => match tls {
                TlsMode::StartTls => 587,
                TlsMode::Tls => 465,
                TlsMode::None => 25,
            },
        };
        let mut settings = Self::new(host, port).tls(tls);
        settings.username = lookup("DURAQ_SMTP_USERNAME");
        settings.password = lookup("DURAQ_SMTP_PASSWORD").map(Secret::new);
        settings.default_from = lookup("DURAQ_MAIL_FROM");
        Ok(settings)
    }
}

/// Whether `host` names the loopback interface without a resolver: an IPv4
/// address in `127.0.0.0/8`, `::1` (bracketed or not, or IPv4-mapped), or
/// `localhost`. Any other name could resolve anywhere.
fn is_loopback_host(host: &str) -> bool {
    let host = host.trim();
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    match bare.parse::<IpAddr>() {
        Ok(ip) => ip.to_canonical().is_loopback(),
        Err(_) => {
            let name = bare.strip_suffix('.').unwrap_or(bare);
            name.eq_ignore_ascii_case("localhost")
        }
    }
}
