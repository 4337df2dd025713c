//! Canonical JSON and SHA-256 digests (`docs/idempotency.md`). Every store hashes through these
//! functions, so an idempotency scope made by one store is recognised by another.
//!
//! Canonical JSON: object keys sorted by their UTF-8 bytes, no insignificant
//! whitespace, strings escaped the way `serde_json` escapes them. Each digest input
//! starts with a version tag so that the format can change without old digests
//! silently matching new ones.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Version tag mixed into every digest.
pub const DIGEST_FORMAT: &str = "duraq.v1";

/// Writes `value` as canonical JSON.
///
/// ```
/// use duraq_core::canonical_json;
/// let v = serde_json::json!({"b": [1, {"d": 2, "c": null}], "a": "x"});
/// assert_eq!(canonical_json(&v), r#"{"a":"x","b":[1,{"c":null,"d":2}]}"#);
/// ```
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// Lower-case hex SHA-256 of `kind` and the canonical form of `value`, tagged with
/// [`DIGEST_FORMAT`].
///
/// ```
/// use duraq_core::digest_hex;
/// let a = digest_hex("args", &serde_json::json!({"x": 1, "y": 2}));
/// let b = digest_hex("args", &serde_json::json!({"y": 2, "x": 1}));
/// assert_eq!(a, b);
/// assert_eq!(a.len(), 64);
/// ```
pub fn digest_hex(kind: &str, value: &Value) -> String {
    let mut hasher = Sha256::new();
    hasher.update(DIGEST_FORMAT.as_bytes());
    hasher.update([0]);
    hasher.update(kind.as_bytes());
    hasher.update([0]);
    hasher.update(canonical_json(value).as_bytes());
    hex(&hasher.finalize())
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_form_escapes_and_sorts_by_bytes() {
        let v = json!({"é": 1, "z": "a\"b\n", "A": [true, 1.5, -3]});
        assert_eq!(
            canonical_json(&v),
            "{\"A\":[true,1.5,-3],\"z\":\"a\\\"b\\n\",\"é\":1}"
        );
    }

    #[test]
    fn kinds_separate_digests() {
        assert_ne!(
            digest_hex("args", &json!(1)),
            digest_hex("scope", &json!(1))
        );
    }
}
