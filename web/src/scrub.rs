//! Masking secrets in text shown to people: whole occurrences only.
//!
//! A secret is replaced by `***` where it occurs as a whole: an edge of the
//! secret that is a letter or digit must not touch another letter or digit. A
//! substring match would mask the `e` of every "database" for a one-letter
//! token (`no SQLit*** databas*** at …`) and so both garble the message and
//! reveal the secret. Tokens shorter than [`MIN_TOKEN_BYTES`] are refused at
//! start (`web-token-too-short`), so what is masked is long enough to be one.

/// The shortest dashboard token accepted: 16 bytes.
pub const MIN_TOKEN_BYTES: usize = 16;

/// What replaces a secret.
const MASK: &str = "***";

/// `text` with every whole occurrence of each non-empty secret replaced by `***`.
///
/// ```
/// use duraq_web::mask_secrets;
/// assert_eq!(mask_secrets("no database e at e.db", ["e"]), "no database *** at ***.db");
/// assert_eq!(
///     mask_secrets("postgres://u:hunter2@db/x", ["hunter2"]),
///     "postgres://u:***@db/x"
/// );
/// ```
pub fn mask_secrets<'a>(text: &str, secrets: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = text.to_string();
    for secret in secrets {
        if !secret.is_empty() && out.contains(secret) {
            out = mask_one(&out, secret);
        }
    }
    out
}

fn mask_one(text: &str, secret: &str) -> String {
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let first_is_word = word(secret.chars().next());
    let last_is_word = word(secret.chars().next_back());
    let mut out = String::with_capacity(text.len());
    let mut done = 0;
    let mut from = 0;
    while let Some(at) = text[from..].find(secret) {
        let start = from + at;
        let end = start + secret.len();
        let before = text[..start].chars().next_back();
        let after = text[end..].chars().next();
        let glued = (first_is_word && word(before)) || (last_is_word && word(after));
        if !glued {
            out.push_str(&text[done..start]);
            out.push_str(MASK);
            done = end;
            from = end;
        } else {
            from = start + text[start..].chars().next().map_or(1, char::len_utf8);
        }
    }
    out.push_str(&text[done..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_occurrences_are_masked() {
        let msg = "no SQLite database at /tmp/e/jobs.db";
        assert_eq!(
            mask_secrets(msg, ["e"]),
            "no SQLite database at /tmp/***/jobs.db"
        );
        assert_eq!(
            mask_secrets("tokentoken token", ["token"]),
            "tokentoken ***"
        );
        assert_eq!(mask_secrets("a=s3cr3t;b", ["s3cr3t"]), "a=***;b");
        assert_eq!(mask_secrets("x-!k!-y", ["-!k!-"]), "x***y");
        assert_eq!(mask_secrets("xx", [""]), "xx");
        assert_eq!(mask_secrets("été é", ["é"]), "été ***");
    }
}
