//! Resend's rules for idempotency keys, shared by the SMTP and API backends:
//! 1–256 characters, no control characters (a control character could end the
//! header line it travels in), and a caller may never set the header itself.

use duraq_mailer::{MailError, MailPayload, MailResult};

/// Provider kind of [`crate::ResendSmtpBackend`].
pub const RESEND_SMTP_KIND: &str = "resend-smtp";
/// Provider kind of [`crate::ResendApiBackend`].
pub const RESEND_API_KIND: &str = "resend-api";
/// How long Resend remembers an idempotency key: 24 hours.
pub const RESEND_RETENTION_MS: i64 = 24 * 60 * 60 * 1000;
/// The SMTP header carrying the key.
pub const RESEND_IDEMPOTENCY_HEADER: &str = "Resend-Idempotency-Key";
/// Longest accepted key, in characters.
pub const MAX_ID_CHARS: usize = 256;

/// Checks an operation id against Resend's key rules.
/// Errors: `mail-delivery-idempotency-key-invalid`.
///
/// ```
/// use duraq_mailer_resend::validate_resend_id;
/// assert!(validate_resend_id("order-42:receipt").is_ok());
/// assert!(validate_resend_id(&"é".repeat(256)).is_ok());
/// for bad in ["", "a\nb", "tab\there"] {
///     assert_eq!(validate_resend_id(bad).unwrap_err().code(), "mail-delivery-idempotency-key-invalid");
/// }
/// assert!(validate_resend_id(&"x".repeat(257)).is_err());
/// ```
pub fn validate_resend_id(id: &str) -> MailResult<()> {
    let chars = id.chars().count();
    let problem = if chars == 0 {
        Some("must not be empty".to_owned())
    } else if chars > MAX_ID_CHARS {
        Some(format!(
            "must be at most {MAX_ID_CHARS} characters, got {chars}"
        ))
    } else if id.chars().any(char::is_control) {
        Some("must not contain control characters".to_owned())
    } else {
        None
    };
    match problem {
        Some(p) => Err(MailError::IdempotencyKeyInvalid {
            message: format!("a Resend idempotency key {p}"),
        }),
        None => Ok(()),
    }
}

/// Refuses a caller header named `Resend-Idempotency-Key` in any case.
/// Errors: `mail-delivery-idempotency-header-reserved`.
pub fn refuse_reserved_header(payload: &MailPayload) -> MailResult<()> {
    match payload
        .headers
        .keys()
        .find(|k| k.eq_ignore_ascii_case(RESEND_IDEMPOTENCY_HEADER))
    {
        Some(name) => Err(MailError::HeaderReserved { name: name.clone() }),
        None => Ok(()),
    }
}
