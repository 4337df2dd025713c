//! Masking configured secrets out of provider and server text.
//!
//! Why: SMTP servers and HTTP APIs sometimes echo what they were sent in their
//! error replies — `535 5.7.8 AUTH PLAIN AGpvZQBzZWNyZXQ= rejected`, or the
//! `Authorization` header. That text used to become the error message, and so
//! reached stderr, the worker log and `lastError` in the database (`SECURITY.md`).
//! A [`Scrubber`] knows the configured secrets and every form an SMTP AUTH
//! exchange carries them in, and [`Scrubber::provider_error`] is the one way
//! provider text becomes a [`MailError`], so it is masked before anything can
//! store or print it.
//!
//! Matching is exact (base64 is case-sensitive, and servers echo verbatim); an
//! uppercased echo of the AUTH line is still caught by the `AUTH <mechanism>
//! <argument>` rule. A secret is masked however short it is — masking an
//! unrelated fragment of a message is the price of never leaking it — but an
//! empty secret masks nothing.

use std::fmt;
use std::ops::Range;
use std::time::Duration;

use crate::error::MailError;
use crate::secret::Secret;
use crate::settings::SmtpSettings;

/// What replaces a secret.
pub const MASK: &str = "***";

/// SASL mechanism names, which may follow `AUTH` in a capability list
/// (`250-AUTH PLAIN LOGIN`) and are not credentials.
const MECHANISMS: &[&str] = &[
    "PLAIN",
    "LOGIN",
    "XOAUTH2",
    "OAUTHBEARER",
    "CRAM-MD5",
    "DIGEST-MD5",
    "GSSAPI",
    "NTLM",
    "ANONYMOUS",
    "EXTERNAL",
    "SCRAM-SHA-1",
    "SCRAM-SHA-256",
];

/// How a provider failure affects retries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProviderFailure {
    /// Retrying can never help (SMTP 5xx, HTTP 4xx): `mail-delivery-rejected`.
    Permanent,
    /// A later attempt may pass (connection, SMTP 4xx, HTTP 429/5xx):
    /// `mail-delivery-failed`, optionally after the provider's `retry_after`.
    Transient {
        /// The provider's requested wait (HTTP `Retry-After`), if any.
        retry_after: Option<Duration>,
    },
}

/// The configured secrets of one backend, in every form they can be echoed in.
/// `Debug` shows only how many forms it masks.
///
/// ```
/// use duraq_mailer::{Scrubber, Secret, SmtpSettings};
/// let settings = SmtpSettings::new("127.0.0.1", 25).credentials("joe", Secret::new("secret"));
/// let scrubber = Scrubber::for_smtp(&settings);
/// let text = scrubber.scrub("535 AUTH PLAIN AGpvZQBzZWNyZXQ= failed; password secret");
/// assert!(!text.contains("AGpvZQBzZWNyZXQ") && !text.contains("secret"));
/// assert!(text.starts_with("535 AUTH PLAIN ***"));
/// ```
#[derive(Clone, Default)]
pub struct Scrubber {
    needles: Vec<String>,
}

impl fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scrubber")
            .field("forms", &self.needles.len())
            .finish()
    }
}

impl Scrubber {
    /// A scrubber that knows no secret yet (it still masks AUTH arguments).
    pub fn new() -> Self {
        Self::default()
    }

    /// Masks `secret` in clear and base64 (the AUTH LOGIN password line, or a
    /// key sent as a Basic credential).
    pub fn with_secret(self, secret: &Secret) -> Self {
        let value = secret.expose();
        self.with_needle(value)
            .with_needle(&base64_prefix(value.as_bytes()))
    }

    /// Masks what SMTP AUTH sends for `user` and `password`: the PLAIN blob
    /// (`\0user\0password`), the LOGIN user and password lines, the XOAUTH2
    /// blob, and the password in clear. The user name alone is not a secret and
    /// stays readable.
    pub fn with_smtp_login(self, user: &str, password: Option<&Secret>) -> Self {
        let pass = password.map_or("", Secret::expose);
        let plain = format!("\0{user}\0{pass}");
        let xoauth2 = format!("user={user}\x01auth=Bearer {pass}\x01\x01");
        let this = match password {
            Some(p) => self.with_secret(p),
            None => self,
        };
        let this = this.with_needle(&base64_prefix(user.as_bytes()));
        if user.is_empty() && pass.is_empty() {
            return this;
        }
        this.with_needle(&base64_prefix(plain.as_bytes()))
            .with_needle(&base64_prefix(xoauth2.as_bytes()))
    }

    /// The scrubber for an SMTP client on `settings`: the password and, with a
    /// user name, every AUTH form of the pair.
    pub fn for_smtp(settings: &SmtpSettings) -> Self {
        match (&settings.username, &settings.password) {
            (Some(user), password) => Self::new().with_smtp_login(user, password.as_ref()),
            (None, Some(password)) => Self::new().with_secret(password),
            (None, None) => Self::new(),
        }
    }

    fn with_needle(mut self, needle: &str) -> Self {
        if !needle.is_empty() && !self.needles.iter().any(|n| n == needle) {
            self.needles.push(needle.to_owned());
        }
        self
    }

    /// `text` with every occurrence of every known form, and every argument of
    /// an `AUTH <mechanism> <argument>` command, replaced by [`MASK`].
    /// Overlapping occurrences are merged, so no fragment of a secret survives.
    pub fn scrub(&self, text: &str) -> String {
        let mut ranges = auth_arguments(text);
        for needle in &self.needles {
            let mut from = 0;
            while let Some(at) = text[from..].find(needle.as_str()) {
                let start = from + at;
                ranges.push(start..start + needle.len());
                from = start + text[start..].chars().next().map_or(1, char::len_utf8);
            }
        }
        ranges.sort_by_key(|r| (r.start, r.end));
        let mut out = String::with_capacity(text.len());
        let mut done = 0;
        for r in ranges {
            if r.end <= done {
                continue;
            }
            if r.start >= done {
                out.push_str(&text[done..r.start]);
                out.push_str(MASK);
            }
            // Otherwise the range overlaps the mask just written and extends it.
            done = r.end;
        }
        out.push_str(&text[done..]);
        out
    }

    /// The one way provider or server text becomes a [`MailError`]: scrubbed,
    /// then `mail-delivery-rejected` or `mail-delivery-failed` by `failure`.
    pub fn provider_error(&self, failure: ProviderFailure, text: &str) -> MailError {
        let message = self.scrub(text);
        match failure {
            ProviderFailure::Permanent => MailError::Rejected { message },
            ProviderFailure::Transient { retry_after } => MailError::Transient {
                message,
                retry_after,
            },
        }
    }
}

/// Byte ranges of the arguments of `AUTH <MECHANISM> <argument>` in `text`.
/// The mechanism must look like one (upper-case letters, digits, `-`, `_`), so
/// prose such as "auth credentials invalid" is left alone.
fn auth_arguments(text: &str) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let lower = text.to_ascii_lowercase();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = lower[from..].find("auth") {
        let start = from + at;
        from = start + 4;
        if start > 0 && bytes[start - 1].is_ascii_alphanumeric() {
            continue;
        }
        let mech = skip_blanks(bytes, from);
        let mech_end = token_end(bytes, mech);
        let arg = skip_blanks(bytes, mech_end);
        let arg_end = token_end(bytes, arg);
        let is_mech = |r: Range<usize>| {
            !r.is_empty()
                && bytes[r]
                    .iter()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b"-_".contains(b))
        };
        if mech == from || arg == mech_end || !is_mech(mech..mech_end) || arg_end == arg {
            continue;
        }
        if MECHANISMS.contains(&&text[arg..arg_end]) {
            continue;
        }
        out.push(arg..arg_end);
        from = arg_end;
    }
    out
}

fn skip_blanks(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len() && (bytes[at] == b' ' || bytes[at] == b'\t') {
        at += 1;
    }
    at
}

fn token_end(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len() && !bytes[at].is_ascii_whitespace() {
        at += 1;
    }
    at
}

/// Standard base64 (RFC 4648, the alphabet lettre sends AUTH data in) without
/// the `=` padding: a prefix of the padded form, so masking it also masks an
/// echo the server truncated or stripped of padding. Written here rather than
/// taken from the `base64` crate to keep `duraq-mailer`'s dependencies as they
/// are; the tests pin it to known AUTH blobs.
fn base64_prefix(input: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}
