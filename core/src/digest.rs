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
/// use duraq_core::driver::canonical_json;
/// let v = serde_json::json!({"b": [1, {"d": 2, "c": null}], "a": "x"});
/// assert_eq!(canonical_json(&v), r#"{"a":"x","b":[1,{"c":null,"d":2}]}"#);
/// ```
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    // Only serde_json's output and ASCII punctuation were written: UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

/// Appends the canonical form of `value` to `out`, with no allocation per key
/// or scalar (a batch of 1,000 jobs writes 1,000 args).
pub(crate) fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            out.push(b'{');
            // serde_json's map iterates in key order already, unless a crate
            // in the build turns on its `preserve_order` feature.
            if map.keys().is_sorted_by(|a, b| a.as_bytes() <= b.as_bytes()) {
                write_entries(map.iter(), out);
            } else {
                let mut entries: Vec<_> = map.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                write_entries(entries.into_iter(), out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(v, out);
            }
            out.push(b']');
        }
        scalar => write_json(scalar, out),
    }
}

fn write_entries<'v>(entries: impl Iterator<Item = (&'v String, &'v Value)>, out: &mut Vec<u8>) {
    for (i, (k, v)) in entries.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_json(k, out);
        out.push(b':');
        write_canonical(v, out);
    }
}

/// serde_json's compact form of a string or scalar.
fn write_json<T: serde::Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) {
    // Cannot fail: serde_json errs only on I/O (none in memory) and on map
    // keys that are not strings (a string or a scalar has none).
    let _ = serde_json::to_writer(out, value);
}

/// Lower-case hex SHA-256 of `kind` and the canonical form of `value`, tagged with
/// [`DIGEST_FORMAT`].
///
/// ```
/// use duraq_core::driver::digest_hex;
/// let a = digest_hex("args", &serde_json::json!({"x": 1, "y": 2}));
/// let b = digest_hex("args", &serde_json::json!({"y": 2, "x": 1}));
/// assert_eq!(a, b);
/// assert_eq!(a.len(), 64);
/// ```
pub fn digest_hex(kind: &str, value: &Value) -> String {
    let mut canonical = Vec::new();
    write_canonical(value, &mut canonical);
    digest_of_canonical(kind, &canonical)
}

/// The digest of text already in canonical form (as [`canonical_json`] writes
/// it), the same as [`digest_hex`] of its value: a store that keeps the
/// canonical text digests it without serializing the value again.
///
/// ```
/// use duraq_core::driver::{canonical_json, digest_hex, digest_of_canonical};
/// let value = serde_json::json!({"y": [2], "x": 1});
/// let text = canonical_json(&value);
/// assert_eq!(digest_of_canonical("args", text.as_bytes()), digest_hex("args", &value));
/// ```
pub fn digest_of_canonical(kind: &str, canonical: &[u8]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(DIGEST_FORMAT.as_bytes());
    hasher.update([0]);
    hasher.update(kind.as_bytes());
    hasher.update([0]);
    hasher.update(canonical);
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

    /// The form as first written (a `String` per key and per scalar): the
    /// digests stored in databases were made with it, so the two must agree.
    fn reference(value: &Value) -> String {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<_> = map.iter().collect();
                entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                let items: Vec<String> = entries
                    .into_iter()
                    .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), reference(v)))
                    .collect();
                format!("{{{}}}", items.join(","))
            }
            Value::Array(items) => {
                let items: Vec<String> = items.iter().map(reference).collect();
                format!("[{}]", items.join(","))
            }
            scalar => scalar.to_string(),
        }
    }

    #[test]
    fn same_form_as_first_written() {
        let values = [
            json!(null),
            json!([]),
            json!({}),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(-0.0),
            json!(1e300),
            json!(0.1),
            json!("\u{0}\u{1f}\u{7f}\u{2028} \\ / \" é 😀"),
            json!({"b": {"é": [1, {"\n": null, "": false}]}, "a": "x", "B": [[], {}]}),
        ];
        for v in &values {
            assert_eq!(canonical_json(v), reference(v), "{v}");
            // Written after other text, it leaves that text alone.
            let mut out = b"prefix".to_vec();
            write_canonical(v, &mut out);
            assert_eq!(&out[6..], reference(v).as_bytes(), "{v}");
            assert_eq!(
                digest_of_canonical("args", &out[6..]),
                digest_hex("args", v),
                "{v}"
            );
        }
    }

    #[test]
    fn kinds_separate_digests() {
        assert_ne!(
            digest_hex("args", &json!(1)),
            digest_hex("scope", &json!(1))
        );
    }
}
