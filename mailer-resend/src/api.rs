//! Resend over its HTTP API: `POST {base_url}/emails` with the payload as JSON,
//! `Authorization: Bearer <key>`, `Idempotency-Key: <operation id>` and a
//! `User-Agent` (Resend refuses requests without one). Answers decide retries:
//! 2xx is delivered; 409 `concurrent_idempotent_requests`, 429 (after its
//! `retry-after`) and 5xx are transient; 409 `invalid_idempotent_request` and
//! every other 4xx are permanent, with Resend's message as the error.
//!
//! The API key lives in a [`Secret`]: it is written into the request header and
//! nowhere else. Every provider text that becomes an error or a stored message
//! id passes `duraq-mailer`'s [`Scrubber`] — the same one the SMTP backends use
//! — so an echo of the key, in clear or base64, is masked (`SECURITY.md`).

use std::time::Duration;

use async_trait::async_trait;
use duraq_core::inspect::error_chain;
use duraq_mailer::{
    freeze_sender, Delivered, IdempotencyCapability, MailBackend, MailError, MailPayload,
    MailResult, ProviderFailure, Scrubber, Secret,
};
use serde::Serialize;
use serde_json::Value;

use crate::id::{refuse_reserved_header, validate_resend_id, RESEND_API_KIND, RESEND_RETENTION_MS};

/// Resend's public API.
pub const RESEND_API_BASE_URL: &str = "https://api.resend.com";
/// The `User-Agent` sent with every request.
pub const USER_AGENT: &str = concat!("duraq-mailer-resend/", env!("CARGO_PKG_VERSION"));

/// Settings of [`ResendApiBackend`]; `Debug` never shows the key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResendApiSettings {
    /// Default [`RESEND_API_BASE_URL`]; tests point it at a local listener.
    pub base_url: String,
    /// The API key (`RESEND_API_KEY`), sent as `Authorization: Bearer`; never
    /// printed, logged or stored, and scrubbed from the provider's replies.
    pub api_key: Secret,
    /// The sender frozen into mails without one (`DURAQ_MAIL_FROM`); Resend
    /// refuses a mail without a sender.
    pub default_from: Option<String>,
    /// Request timeout (default 30 s).
    pub timeout: Duration,
}

impl ResendApiSettings {
    /// Settings for the public API with `api_key`.
    pub fn new(api_key: Secret) -> Self {
        Self {
            base_url: RESEND_API_BASE_URL.to_owned(),
            api_key,
            default_from: None,
            timeout: Duration::from_secs(30),
        }
    }

    /// Reads `RESEND_API_KEY` (required), `DURAQ_RESEND_BASE_URL` and
    /// `DURAQ_MAIL_FROM` through `lookup`. Errors: `mail-config-invalid`.
    ///
    /// ```
    /// use duraq_mailer_resend::ResendApiSettings;
    /// let s = ResendApiSettings::from_lookup(|k| (k == "RESEND_API_KEY").then(|| "re_123".to_string())).unwrap();
    /// assert_eq!(s.base_url, "https://api.resend.com");
    /// assert!(!format!("{s:?}").contains("re_123"));
    /// assert!(ResendApiSettings::from_lookup(|_| None).is_err());
    /// ```
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> MailResult<Self> {
        let key = lookup("RESEND_API_KEY")
            .filter(|k| !k.trim().is_empty())
            .ok_or_else(|| MailError::Config {
                message: "RESEND_API_KEY is not set".into(),
            })?;
        let mut settings = Self::new(Secret::new(key));
        if let Some(url) = lookup("DURAQ_RESEND_BASE_URL") {
            settings.base_url = url;
        }
        settings.default_from = lookup("DURAQ_MAIL_FROM");
        Ok(settings)
    }
}

/// Resend via HTTP: provider kind `resend-api`, retention 24 h.
///
/// ```
/// use duraq_mailer::{MailBackend, Secret};
/// use duraq_mailer_resend::{ResendApiBackend, ResendApiSettings};
/// let backend = ResendApiBackend::new(ResendApiSettings::new(Secret::new("re_123"))).unwrap();
/// assert_eq!(backend.idempotency().unwrap().retention_ms, 86_400_000);
/// assert!(!format!("{backend:?}").contains("re_123"));
/// ```
#[derive(Clone, Debug)]
pub struct ResendApiBackend {
    http: reqwest::Client,
    settings: ResendApiSettings,
    scrubber: Scrubber,
}

#[derive(Serialize)]
struct EmailBody<'a> {
    from: &'a str,
    to: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    cc: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    bcc: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    reply_to: &'a [String],
    subject: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    html: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    headers: &'a std::collections::BTreeMap<String, String>,
}

impl ResendApiBackend {
    /// A backend on `settings`. Errors: `mail-config-invalid`.
    pub fn new(settings: ResendApiSettings) -> MailResult<Self> {
        let http = reqwest::Client::builder()
            .user_agent(USER_AGENT)
            .timeout(settings.timeout)
            .build()
            .map_err(|e| MailError::Config {
                message: format!("HTTP client: {}", error_chain(&e)),
            })?;
        let scrubber = Scrubber::new().with_secret(&settings.api_key);
        Ok(Self {
            http,
            settings,
            scrubber,
        })
    }

    /// A backend configured from the process environment.
    pub fn from_env() -> MailResult<Self> {
        Self::new(ResendApiSettings::from_lookup(|k| std::env::var(k).ok())?)
    }

    fn url(&self) -> String {
        format!("{}/emails", self.settings.base_url.trim_end_matches('/'))
    }
}

#[async_trait]
impl MailBackend for ResendApiBackend {
    fn idempotency(&self) -> Option<IdempotencyCapability> {
        Some(IdempotencyCapability::new(
            RESEND_API_KIND,
            RESEND_RETENTION_MS,
        ))
    }

    fn validate_operation_id(&self, id: &str) -> MailResult<()> {
        validate_resend_id(id)
    }

    fn prepare(&self, payload: MailPayload) -> MailResult<MailPayload> {
        payload.validate()?;
        refuse_reserved_header(&payload)?;
        freeze_sender(payload, self.settings.default_from.as_deref())
    }

    async fn send(
        &self,
        payload: &MailPayload,
        idempotency_key: Option<&str>,
    ) -> MailResult<Delivered> {
        let p = self.prepare(payload.clone())?;
        if let Some(key) = idempotency_key {
            validate_resend_id(key)?;
        }
        let body = EmailBody {
            from: p.from.as_deref().unwrap_or_default(),
            to: &p.to,
            cc: &p.cc,
            bcc: &p.bcc,
            reply_to: &p.reply_to,
            subject: &p.subject,
            html: p.html.as_deref(),
            text: p.text.as_deref(),
            headers: &p.headers,
        };
        let mut request = self
            .http
            .post(self.url())
            .bearer_auth(self.settings.api_key.expose())
            .json(&body);
        if let Some(key) = idempotency_key {
            request = request.header("Idempotency-Key", key);
        }
        let response = request.send().await.map_err(|e| {
            // The chain keeps the cause ("connection refused"); no URL in it.
            let text = format!(
                "Resend API request failed: {}",
                error_chain(&e.without_url())
            );
            self.scrubber
                .provider_error(ProviderFailure::Transient { retry_after: None }, &text)
        })?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let text = response.text().await.unwrap_or_default();
        let json: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if status.is_success() {
            let id = json.get("id").and_then(Value::as_str);
            let id = id.map(|id| self.scrubber.scrub(id));
            return Ok(Delivered {
                provider_message_id: id,
            });
        }
        let name = json.get("name").and_then(Value::as_str).unwrap_or("");
        let detail = json
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| text.chars().take(300).collect(), str::to_owned);
        let text = format!("Resend API answered {status} {name}: {detail}");
        let transient = status.is_server_error()
            || status == reqwest::StatusCode::TOO_MANY_REQUESTS
            || (status == reqwest::StatusCode::CONFLICT
                && name == "concurrent_idempotent_requests");
        let failure = if transient {
            ProviderFailure::Transient {
                retry_after: retry_after.filter(|_| status.as_u16() == 429),
            }
        } else {
            ProviderFailure::Permanent
        };
        Err(self.scrubber.provider_error(failure, &text))
    }
}
