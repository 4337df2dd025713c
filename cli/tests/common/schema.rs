//! The subset of JSON Schema that `cli/tests/schemas/` uses: `type` (one or a
//! list), `enum`, `properties`, `required`, `additionalProperties: false`,
//! `items`, `anyOf` and `$ref` to a sibling file. Sixty lines here instead of a
//! schema crate with its regex and URL stacks in every test build.

use std::path::PathBuf;

use serde_json::Value;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/schemas")
}

/// The schema file `name` (e.g. `jobs-list.json`).
pub fn load(name: &str) -> Value {
    let path = dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Panics with the path of the first violation of `schema` by `value`.
pub fn assert_matches(schema_file: &str, value: &Value) {
    if let Err(why) = check(&load(schema_file), value, "$") {
        panic!("{schema_file}: {why}\nvalue: {value}");
    }
}

fn type_ok(ty: &str, v: &Value) -> bool {
    match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "null" => v.is_null(),
        other => panic!("unsupported type {other}"),
    }
}

fn check(schema: &Value, v: &Value, at: &str) -> Result<(), String> {
    if let Some(file) = schema.get("$ref").and_then(Value::as_str) {
        return check(&load(file), v, at);
    }
    if let Some(options) = schema.get("anyOf").and_then(Value::as_array) {
        if !options.iter().any(|s| check(s, v, at).is_ok()) {
            return Err(format!("{at}: matches none of anyOf"));
        }
    }
    match schema.get("type") {
        Some(Value::String(t)) if !type_ok(t, v) => return Err(format!("{at}: not {t}")),
        Some(Value::Array(ts)) if !ts.iter().any(|t| type_ok(t.as_str().unwrap_or(""), v)) => {
            return Err(format!("{at}: not any of {ts:?}"));
        }
        _ => {}
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.contains(v) {
            return Err(format!("{at}: {v} not in {allowed:?}"));
        }
    }
    if let (Some(obj), Some(props)) = (
        v.as_object(),
        schema.get("properties").and_then(Value::as_object),
    ) {
        for key in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let key = key.as_str().unwrap_or_default();
            if !obj.contains_key(key) {
                return Err(format!("{at}: missing {key}"));
            }
        }
        for (key, value) in obj {
            match props.get(key) {
                Some(sub) => check(sub, value, &format!("{at}.{key}"))?,
                None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    return Err(format!("{at}: unexpected key {key}"));
                }
                None => {}
            }
        }
    }
    if let (Some(items), Some(schema)) = (v.as_array(), schema.get("items")) {
        for (i, item) in items.iter().enumerate() {
            check(schema, item, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}
