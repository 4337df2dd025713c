//! The mail payload (`docs/mail.md`) and its versioned digest. The payload is what a
//! `duraq.mail.deliver` job carries in its args, so it is plain serde data with
//! duraq's camelCase names. The digest covers exactly the provider-relevant
//! fields (addresses, subject, bodies, headers): changing any of them under one
//! delivery operation id is a conflict, while the `mailer`/`action` identity is
//! bookkeeping and does not move the digest.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::{MailError, MailResult};

/// Version tag of [`MailPayload::digest`]; bump it when the digested fields change.
pub const PAYLOAD_DIGEST_KIND: &str = "mail.payload.v1";

/// Header names the payload sets through its own fields; a caller header with one
/// of these names would duplicate or contradict them.
const STRUCTURAL_HEADERS: &[&str] = &[
    "from",
    "to",
    "cc",
    "bcc",
    "reply-to",
    "subject",
    "content-type",
    "content-transfer-encoding",
    "mime-version",
    "date",
    "sender",
];

/// One mail, as rendered by the application.
///
/// ```
/// use duraq_mailer::MailPayload;
/// let mail = MailPayload::new("Welcome")
///     .to("ada@example.com")
///     .text("Hello Ada")
///     .header("X-Campaign", "onboarding")
///     .identity("UserMailer", "welcome");
/// assert!(mail.validate().is_ok());
/// assert_eq!(mail.digest().len(), 64);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MailPayload {
    /// Recipients (`Ada <ada@example.com>` or a bare address); at least one of
    /// `to`, `cc` and `bcc` is required.
    pub to: Vec<String>,
    /// Carbon-copy recipients.
    pub cc: Vec<String>,
    /// Blind-copy recipients: envelope only, never written into a header.
    pub bcc: Vec<String>,
    /// The sender; `None` lets the backend freeze its default at preparation.
    pub from: Option<String>,
    /// Addresses replies should go to.
    pub reply_to: Vec<String>,
    /// The subject line.
    pub subject: String,
    /// The HTML body; with `text` too, the mail is sent as alternatives.
    pub html: Option<String>,
    /// The plain-text body.
    pub text: Option<String>,
    /// Extra headers, name → value.
    pub headers: BTreeMap<String, String>,
    /// The application's mailer class (identity, not sent).
    pub mailer: Option<String>,
    /// The mailer action (identity, not sent).
    pub action: Option<String>,
}

impl MailPayload {
    /// A payload with `subject` and nothing else.
    pub fn new(subject: impl Into<String>) -> Self {
        Self {
            subject: subject.into(),
            ..Self::default()
        }
    }
    /// Adds a `To` recipient.
    pub fn to(mut self, address: impl Into<String>) -> Self {
        self.to.push(address.into());
        self
    }
    /// Adds a `Cc` recipient.
    pub fn cc(mut self, address: impl Into<String>) -> Self {
        self.cc.push(address.into());
        self
    }
    /// Adds a `Bcc` recipient.
    pub fn bcc(mut self, address: impl Into<String>) -> Self {
        self.bcc.push(address.into());
        self
    }
    /// Sets the sender.
    pub fn from(mut self, address: impl Into<String>) -> Self {
        self.from = Some(address.into());
        self
    }
    /// Adds a `Reply-To` address.
    pub fn reply_to(mut self, address: impl Into<String>) -> Self {
        self.reply_to.push(address.into());
        self
    }
    /// Sets the HTML body.
    pub fn html(mut self, body: impl Into<String>) -> Self {
        self.html = Some(body.into());
        self
    }
    /// Sets the plain-text body.
    pub fn text(mut self, body: impl Into<String>) -> Self {
        self.text = Some(body.into());
        self
    }
    /// Sets an extra header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }
    /// Sets the `mailer`/`action` identity.
    pub fn identity(mut self, mailer: impl Into<String>, action: impl Into<String>) -> Self {
        self.mailer = Some(mailer.into());
        self.action = Some(action.into());
        self
    }

    /// Whether the payload has a header named `name`, ignoring ASCII case.
    pub fn has_header(&self, name: &str) -> bool {
        self.headers.keys().any(|k| k.eq_ignore_ascii_case(name))
    }

    /// Checks what every backend needs: a recipient, a body, and header names and
    /// values that cannot inject lines. Errors: `mail-invalid-payload`.
    pub fn validate(&self) -> MailResult<()> {
        if self.to.is_empty() && self.cc.is_empty() && self.bcc.is_empty() {
            return Err(MailError::invalid(
                "at least one recipient (to, cc or bcc) is required",
            ));
        }
        if self.html.is_none() && self.text.is_none() {
            return Err(MailError::invalid("an html or a text body is required"));
        }
        let single_line = |s: &str| !s.contains(['\r', '\n']);
        let addresses = self
            .to
            .iter()
            .chain(&self.cc)
            .chain(&self.bcc)
            .chain(&self.reply_to);
        if !addresses
            .chain(self.from.as_ref())
            .all(|a| single_line(a) && !a.trim().is_empty())
        {
            return Err(MailError::invalid(
                "addresses must be non-empty single lines",
            ));
        }
        if !single_line(&self.subject) {
            return Err(MailError::invalid("the subject must be a single line"));
        }
        for (name, value) in &self.headers {
            let name_ok = !name.is_empty()
                && name.len() <= 76
                && name.bytes().all(|b| b.is_ascii_graphic() && b != b':');
            if !name_ok {
                return Err(MailError::invalid(format!("invalid header name {name:?}")));
            }
            if STRUCTURAL_HEADERS
                .iter()
                .any(|s| name.eq_ignore_ascii_case(s))
            {
                return Err(MailError::invalid(format!(
                    "header {name:?} is set through the payload's own fields"
                )));
            }
            if !single_line(value) {
                return Err(MailError::invalid(format!(
                    "header {name:?} must be a single line"
                )));
            }
        }
        Ok(())
    }

    /// The versioned SHA-256 digest (lower-case hex) of every provider-relevant
    /// field; equal payloads have equal digests whatever the header order.
    pub fn digest(&self) -> String {
        duraq_core::driver::digest_hex(
            PAYLOAD_DIGEST_KIND,
            &json!({
                "to": self.to, "cc": self.cc, "bcc": self.bcc, "from": self.from,
                "replyTo": self.reply_to, "subject": self.subject, "html": self.html,
                "text": self.text, "headers": self.headers,
            }),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> MailPayload {
        MailPayload::new("s").to("a@example.com").text("t")
    }

    #[test]
    fn every_provider_field_moves_the_digest_and_identity_does_not() {
        let d = base().digest();
        for changed in [
            base().to("b@example.com"),
            base().cc("c@example.com"),
            base().bcc("d@example.com"),
            base().from("f@example.com"),
            base().reply_to("r@example.com"),
            MailPayload {
                subject: "other".into(),
                ..base()
            },
            base().html("<p>x</p>"),
            base().text("other"),
            base().header("X-A", "1"),
        ] {
            assert_ne!(changed.digest(), d, "{changed:?}");
        }
        assert_eq!(base().identity("M", "a").digest(), d);
    }

    #[test]
    fn validation_refuses_injection_and_structural_headers() {
        assert!(base().header("X-Ok", "v").validate().is_ok());
        for bad in [
            MailPayload::new("s").text("t"),
            MailPayload::new("s").to("a@example.com"),
            base().header("X-A", "v\r\nBcc: x@example.com"),
            base().header("Bad Name", "v"),
            base().header("X".repeat(77), "v"),
            base().header("subject", "v"),
            MailPayload {
                subject: "a\nb".into(),
                ..base()
            },
        ] {
            assert_eq!(
                bad.validate().unwrap_err().code(),
                "mail-invalid-payload",
                "{bad:?}"
            );
        }
    }
}
