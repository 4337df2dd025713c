//! Resend over SMTP. The operation id travels as exactly one
//! `Resend-Idempotency-Key` header, which Resend honours for 24 hours; the
//! caller may never set that header, so the key on the wire is always the one
//! the operation record guards. The relay defaults to `smtp.resend.com:465`
//! (TLS), user `resend`, the API key as password. The key is masked out of any
//! server reply by the client's scrubber, and `DURAQ_SMTP_TLS=none` to anything
//! but a loopback host is refused (`mail-smtp-plaintext-auth`), as for generic
//! SMTP.

use async_trait::async_trait;
use duraq_mailer::{
    freeze_sender, Delivered, IdempotencyCapability, MailBackend, MailPayload, MailResult, Secret,
    SmtpClient, SmtpSettings, TlsMode,
};

use crate::id::{
    refuse_reserved_header, validate_resend_id, RESEND_IDEMPOTENCY_HEADER, RESEND_RETENTION_MS,
    RESEND_SMTP_KIND,
};

/// The Resend SMTP relay host.
pub const RESEND_SMTP_HOST: &str = "smtp.resend.com";

/// Resend via SMTP: provider kind `resend-smtp`, retention 24 h.
///
/// ```
/// use duraq_mailer::{MailBackend, MailPayload, SmtpSettings};
/// use duraq_mailer_resend::ResendSmtpBackend;
/// let backend = ResendSmtpBackend::new(SmtpSettings::new("smtp.resend.com", 465)).unwrap();
/// assert_eq!(backend.idempotency().unwrap().provider_kind, "resend-smtp");
/// let mail = MailPayload::new("s").to("a@example.com").text("t");
/// assert_eq!(backend.prepare(mail.clone()).unwrap_err().code(), "mail-delivery-from-missing");
/// let mail = mail.from("app@example.com").header("resend-idempotency-key", "x");
/// assert_eq!(backend.prepare(mail).unwrap_err().code(), "mail-delivery-idempotency-header-reserved");
/// ```
#[derive(Clone, Debug)]
pub struct ResendSmtpBackend {
    client: SmtpClient,
}

impl ResendSmtpBackend {
    /// A backend on explicit settings (tests point it at a local listener).
    pub fn new(settings: SmtpSettings) -> MailResult<Self> {
        Ok(Self {
            client: SmtpClient::new(settings)?,
        })
    }

    /// Settings from `lookup`: the `DURAQ_SMTP_*` variables of
    /// [`SmtpSettings::from_lookup`] with host `smtp.resend.com`, TLS on 465,
    /// user `resend` and password `RESEND_API_KEY` as defaults.
    pub fn settings_from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> MailResult<SmtpSettings> {
        let mut settings =
            SmtpSettings::from_lookup_with_host(RESEND_SMTP_HOST, TlsMode::Tls, &lookup)?;
        if settings.username.is_none() {
            settings.username = Some("resend".to_owned());
        }
        if settings.password.is_none() {
            settings.password = lookup("RESEND_API_KEY").map(Secret::new);
        }
        Ok(settings)
    }

    /// A backend configured from the process environment.
    pub fn from_env() -> MailResult<Self> {
        Self::new(Self::settings_from_lookup(|k| std::env::var(k).ok())?)
    }
}

#[async_trait]
impl MailBackend for ResendSmtpBackend {
    fn idempotency(&self) -> Option<IdempotencyCapability> {
        Some(IdempotencyCapability::new(
            RESEND_SMTP_KIND,
            RESEND_RETENTION_MS,
        ))
    }

    fn validate_operation_id(&self, id: &str) -> MailResult<()> {
        validate_resend_id(id)
    }

    fn prepare(&self, payload: MailPayload) -> MailResult<MailPayload> {
        payload.validate()?;
        refuse_reserved_header(&payload)?;
        freeze_sender(payload, self.client.settings().default_from.as_deref())
    }

    async fn send(
        &self,
        payload: &MailPayload,
        idempotency_key: Option<&str>,
    ) -> MailResult<Delivered> {
        let payload = self.prepare(payload.clone())?;
        match idempotency_key {
            Some(key) => {
                validate_resend_id(key)?;
                self.client
                    .send(&payload, &[(RESEND_IDEMPOTENCY_HEADER, key)])
                    .await
            }
            None => self.client.send(&payload, &[]).await,
        }
    }
}
