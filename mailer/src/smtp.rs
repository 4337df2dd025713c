//! Generic SMTP on lettre (tokio, rustls). [`SmtpClient`] turns a payload into a
//! MIME message and sends it over one fresh connection per mail (no pool: a
//! connection is opened only when a mail is really sent, which is what tests
//! and the "no connection after expiry" promise rely on). [`SmtpBackend`] is the
//! generic backend on it: no idempotency capability, so at-least-once.
//!
//! Credentials are refused over plaintext to anything but loopback when the
//! client is built, and every server reply that becomes an error or a stored
//! message id passes the client's [`Scrubber`] first, because servers echo the
//! AUTH line (`SECURITY.md`).

use std::time::Duration;

use async_trait::async_trait;
use lettre::message::header::{HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use duraq_core::inspect::error_chain;

use crate::backend::{freeze_sender, Delivered, MailBackend};
use crate::error::{MailError, MailResult};
use crate::payload::MailPayload;
use crate::scrub::{ProviderFailure, Scrubber};
use crate::settings::{SmtpSettings, TlsMode};

/// Sends payloads to one SMTP server.
#[derive(Clone)]
pub struct SmtpClient {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    settings: SmtpSettings,
    scrubber: Scrubber,
}

impl std::fmt::Debug for SmtpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmtpClient")
            .field("settings", &self.settings)
            .finish()
    }
}

impl SmtpClient {
    /// A client for `settings`; does no I/O. Errors: `mail-smtp-plaintext-auth`
    /// (credentials over plaintext to a host that is not loopback, see
    /// [`SmtpSettings::check_plaintext_auth`]), `mail-config-invalid` (TLS setup).
    pub fn new(settings: SmtpSettings) -> MailResult<Self> {
        settings.check_plaintext_auth()?;
        let config = |e: lettre::transport::smtp::Error| MailError::Config {
            message: error_chain(&e),
        };
        let tls = match settings.tls {
            TlsMode::None => Tls::None,
            TlsMode::StartTls => {
                Tls::Required(TlsParameters::new(settings.host.clone()).map_err(config)?)
            }
            TlsMode::Tls => {
                Tls::Wrapper(TlsParameters::new(settings.host.clone()).map_err(config)?)
            }
        };
        let mut builder =
            AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(settings.host.clone())
                .port(settings.port)
                .tls(tls)
                .timeout(Some(settings.timeout.unwrap_or(Duration::from_secs(30))));
        if let Some(user) = &settings.username {
            let password = settings
                .password
                .as_ref()
                .map(|p| p.expose().to_owned())
                .unwrap_or_default();
            builder = builder.credentials(Credentials::new(user.clone(), password));
        }
        Ok(Self {
            transport: builder.build(),
            scrubber: Scrubber::for_smtp(&settings),
            settings,
        })
    }

    /// The settings.
    pub fn settings(&self) -> &SmtpSettings {
        &self.settings
    }

    /// Sends `payload` (which must have a sender) with `extra` headers appended.
    /// Everything that can be refused is refused before the connection opens.
    pub async fn send(
        &self,
        payload: &MailPayload,
        extra: &[(&str, &str)],
    ) -> MailResult<Delivered> {
        let message = build_message(payload, extra)?;
        let response = self.transport.send(message).await.map_err(|e| {
            let failure = if e.is_permanent() {
                ProviderFailure::Permanent
            } else {
                ProviderFailure::Transient { retry_after: None }
            };
            let (host, port) = (&self.settings.host, self.settings.port);
            let text = format!("SMTP {host}:{port}: {}", error_chain(&e));
            self.scrubber.provider_error(failure, &text)
        })?;
        // The reply is stored as the provider's message id: scrub it too.
        let reply = self
            .scrubber
            .scrub(&response.message().collect::<Vec<_>>().join(" "));
        Ok(Delivered {
            provider_message_id: (!reply.is_empty()).then_some(reply),
        })
    }
}

/// Builds the MIME message of a prepared payload plus `extra` headers.
/// Errors: `mail-delivery-from-missing`, `mail-invalid-payload`.
pub fn build_message(payload: &MailPayload, extra: &[(&str, &str)]) -> MailResult<Message> {
    payload.validate()?;
    let from = payload.from.as_deref().ok_or(MailError::FromMissing)?;
    let mut builder = Message::builder()
        .from(mailbox(from)?)
        .subject(payload.subject.clone());
    for a in &payload.to {
        builder = builder.to(mailbox(a)?);
    }
    for a in &payload.cc {
        builder = builder.cc(mailbox(a)?);
    }
    for a in &payload.bcc {
        builder = builder.bcc(mailbox(a)?);
    }
    for a in &payload.reply_to {
        builder = builder.reply_to(mailbox(a)?);
    }
    let headers = payload
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()));
    for (name, value) in headers.chain(extra.iter().copied()) {
        let name = HeaderName::new_from_ascii(name.to_owned())
            .map_err(|_| MailError::invalid(format!("invalid header name {name:?}")))?;
        builder = builder.raw_header(HeaderValue::new(name, value.to_owned()));
    }
    let built = match (&payload.text, &payload.html) {
        (Some(text), Some(html)) => builder.multipart(MultiPart::alternative_plain_html(
            text.clone(),
            html.clone(),
        )),
        (None, Some(html)) => builder.singlepart(SinglePart::html(html.clone())),
        (Some(text), None) => builder.singlepart(SinglePart::plain(text.clone())),
        (None, None) => return Err(MailError::invalid("an html or a text body is required")),
    };
    built.map_err(|e| MailError::invalid(e.to_string()))
}

fn mailbox(address: &str) -> MailResult<Mailbox> {
    address
        .parse()
        .map_err(|e| MailError::invalid(format!("invalid address {address:?}: {e}")))
}

/// Generic SMTP: no idempotency capability (at-least-once).
///
/// ```
/// use duraq_mailer::{MailBackend, SmtpBackend, SmtpSettings, TlsMode};
/// let settings = SmtpSettings::new("smtp.example.com", 587).tls(TlsMode::StartTls).default_from("app@example.com");
/// let backend = SmtpBackend::new(settings).unwrap();
/// assert!(backend.idempotency().is_none());
/// ```
#[derive(Clone, Debug)]
pub struct SmtpBackend {
    client: SmtpClient,
}

impl SmtpBackend {
    /// A backend for `settings`; errors as [`SmtpClient::new`].
    pub fn new(settings: SmtpSettings) -> MailResult<Self> {
        Ok(Self {
            client: SmtpClient::new(settings)?,
        })
    }
}

#[async_trait]
impl MailBackend for SmtpBackend {
    fn prepare(&self, payload: MailPayload) -> MailResult<MailPayload> {
        payload.validate()?;
        freeze_sender(payload, self.client.settings().default_from.as_deref())
    }

    async fn send(
        &self,
        payload: &MailPayload,
        _idempotency_key: Option<&str>,
    ) -> MailResult<Delivered> {
        let payload = self.prepare(payload.clone())?;
        self.client.send(&payload, &[]).await
    }
}
