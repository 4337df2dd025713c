//! The scrubber on its own: every form an SMTP AUTH exchange carries a secret
//! in, repeated and overlapping occurrences, and the edge cases that must not
//! destroy the text (an empty secret) or leak a fragment (an overlap). The
//! base64 vectors are fixed literals (`base64` of the RFC 4616 PLAIN message,
//! of the LOGIN lines, of the XOAUTH2 string) so the hand-written encoder is
//! pinned to what lettre sends.

use std::time::Duration;

use duraq_mailer::{ProviderFailure, Scrubber, Secret, SmtpSettings, MASK};

fn joe() -> Scrubber {
    Scrubber::for_smtp(
        &SmtpSettings::new("127.0.0.1", 25).credentials("joe", Secret::new("secret")),
    )
}

#[test]
fn each_auth_form_is_masked() {
    let s = joe();
    for (form, blob) in [
        ("PLAIN", "AGpvZQBzZWNyZXQ="),
        ("LOGIN user", "am9l"),
        ("LOGIN password", "c2VjcmV0"),
        ("XOAUTH2", "dXNlcj1qb2UBYXV0aD1CZWFyZXIgc2VjcmV0AQE="),
    ] {
        let text = s.scrub(&format!("535 5.7.8 rejected {blob} ok"));
        assert!(!text.contains(blob.trim_end_matches('=')), "{form}: {text}");
        assert!(text.starts_with("535 5.7.8 rejected ***"), "{form}: {text}");
        assert!(text.ends_with(" ok"), "{form}: {text}");
    }
}

#[test]
fn a_truncated_or_unpadded_blob_is_masked() {
    let text = joe().scrub("535 echo: AGpvZQBzZWNyZXQ and AGpvZQBzZWNyZXQ=");
    assert!(!text.contains("AGpvZQBzZWNyZXQ"), "{text}");
}

#[test]
fn the_password_in_clear_is_masked_every_time_but_the_user_is_kept() {
    let text = joe().scrub("user joe: secret is wrong, secret!");
    assert_eq!(text, format!("user joe: {MASK} is wrong, {MASK}!"));
}

#[test]
fn any_auth_argument_is_masked_even_without_known_secrets() {
    let s = Scrubber::new();
    assert_eq!(
        s.scrub("535 AUTH PLAIN Zm9vYmFy rejected"),
        "535 AUTH PLAIN *** rejected"
    );
    // An upper-cased echo of the AUTH line, which no exact form matches.
    assert_eq!(
        s.scrub("535 AUTH PLAIN AGPVZQBZZWNYZXQ="),
        "535 AUTH PLAIN ***"
    );
    assert_eq!(s.scrub("x\tAUTH XOAUTH2 dXNlcj1q"), "x\tAUTH XOAUTH2 ***");
    // Capability lists and prose are left alone.
    for kept in [
        "250-AUTH PLAIN LOGIN XOAUTH2",
        "250-AUTH=PLAIN LOGIN",
        "535 5.7.8 Authentication credentials invalid",
        "535 auth credentials invalid",
        "AUTH LOGIN",
        "XOAUTH2 PLAIN Zm9v",
    ] {
        assert_eq!(s.scrub(kept), kept);
    }
}

#[test]
fn an_empty_secret_masks_nothing() {
    let text = "535 5.7.8 authentication failed";
    assert_eq!(
        Scrubber::new().with_secret(&Secret::new("")).scrub(text),
        text
    );
    let empty = SmtpSettings::new("h", 25).credentials("", Secret::new(""));
    assert_eq!(Scrubber::for_smtp(&empty).scrub(text), text);
    assert_eq!(Scrubber::new().scrub(""), "");
}

#[test]
fn a_short_secret_is_still_masked() {
    let s = Scrubber::new().with_secret(&Secret::new("x"));
    let text = s.scrub("box eA== x");
    assert!(!text.contains('x') && !text.contains("eA"), "{text}");
}

#[test]
fn overlapping_occurrences_leave_no_fragment() {
    let s = Scrubber::new().with_secret(&Secret::new("abcabc"));
    assert_eq!(s.scrub("<abcabcabc>"), "<***>");
    let both = Scrubber::new()
        .with_secret(&Secret::new("key-1234"))
        .with_secret(&Secret::new("1234-tail"));
    assert_eq!(both.scrub("[key-1234-tail]"), "[***]");
}

#[test]
fn an_api_key_in_clear_and_base64_is_masked_around_unicode() {
    let s = Scrubber::new().with_secret(&Secret::new("re_live_123abc"));
    let text = s.scrub("é re_live_123abc → Basic cmVfbGl2ZV8xMjNhYmM= ✓");
    assert_eq!(text, "é *** → Basic ***= ✓");
    assert!(!format!("{s:?}").contains("re_live"));
}

#[test]
fn the_resend_smtp_login_is_masked() {
    let settings =
        SmtpSettings::new("127.0.0.1", 25).credentials("resend", Secret::new("re_live_123abc"));
    let text = Scrubber::for_smtp(&settings).scrub("535 AHJlc2VuZAByZV9saXZlXzEyM2FiYw==");
    assert!(!text.contains("AHJlc2VuZAByZV9saXZlXzEyM2FiYw"), "{text}");
}

#[test]
fn provider_errors_are_scrubbed_and_keep_their_kind() {
    let s = joe();
    let err = s.provider_error(ProviderFailure::Permanent, "535 secret");
    assert_eq!(err.code(), "mail-delivery-rejected");
    assert!(!err.to_string().contains("secret") && err.to_string().contains("535"));
    let later = ProviderFailure::Transient {
        retry_after: Some(Duration::from_secs(3)),
    };
    let err = s.provider_error(later, "429 secret");
    assert_eq!(
        (err.code(), err.is_permanent()),
        ("mail-delivery-failed", false)
    );
    let job_error = err.into_job_error();
    assert_eq!(job_error.retry_delay(), Some(Duration::from_secs(3)));
    assert!(!job_error.message().contains("secret"));
}
