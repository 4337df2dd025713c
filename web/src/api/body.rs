//! Reading a request body into a job: the JSON itself (`application/json`, at
//! most [`MAX_BODY`] bytes) and one job of it, `{"job", "args", …options}`.
//!
//! The options are a workflow step's keys read by the one parser of options
//! ([`crate::job_options`]), so `"runIn": "5m"` means here what it means in a
//! workflow file or after `--run-in`. Every key is checked before any store
//! call: an unknown key would otherwise be a silent change of what runs
//! (a misspelt `"runIn"` would run at once). Shape mistakes are 400, values
//! that are not allowed 422 with the flag's or core's code, and a built-in
//! job's args its handler would refuse 422 `invalid-args`
//! ([`crate::WebOptions::args_check`]), as `duraq enqueue` refuses them.

use axum::body::Body;
use axum::http::{header, HeaderMap};
use duraq_core::{After, DependencyFailure, NewJob};
use serde_json::{Map, Value};

use super::error::ApiError;
use crate::job_options::{enqueue_options, serde_fields, JobOptions, Spelling};

/// The largest body read: 1 MiB (a job's args are small; a batch of many
/// jobs is several requests).
pub const MAX_BODY: usize = 1 << 20;

/// The keys of a job besides its options ([`JobOptions`]'s keys).
pub const JOB_KEYS: &[&str] = &[
    "job",
    "args",
    "idempotencyKey",
    "dedupeWhileQueued",
    "after",
    "onDependencyFailure",
];

/// The body as JSON: 415 unless it is declared `application/json` (a
/// cross-site HTML form cannot send that type), 413 over [`MAX_BODY`], 400
/// `invalid-json` when it does not parse.
pub async fn read_json(headers: &HeaderMap, body: Body) -> Result<Value, ApiError> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return Err(ApiError::new(
            axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            "send the body as Content-Type: application/json",
        ));
    }
    let too_large = || {
        ApiError::new(
            axum::http::StatusCode::PAYLOAD_TOO_LARGE,
            "body-too-large",
            format!("the body is larger than {MAX_BODY} bytes"),
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        return Err(too_large());
    }
    let bytes = axum::body::to_bytes(body, MAX_BODY)
        .await
        .map_err(|_| too_large())?;
    serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::bad_request("invalid-json", format!("the body is not JSON: {e}")))
}

/// The `Idempotency-Key` header, if given; 400 when it is not visible ASCII.
pub fn idempotency_header(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let key = value.to_str().map_err(|_| {
        ApiError::bad_request("invalid-request", "Idempotency-Key is not visible ASCII")
    })?;
    Ok(Some(key.to_owned()))
}

/// One job of a request; `at` names it in messages (`""` or `jobs[2]: `),
/// `header_key` is the `Idempotency-Key` header of a single enqueue.
pub fn job_from(
    state: &crate::State,
    at: &str,
    value: Value,
    header_key: Option<String>,
) -> Result<NewJob, ApiError> {
    let Value::Object(mut fields) = value else {
        let message = format!("{at}a job is a JSON object {{\"job\": …}}");
        return Err(ApiError::bad_request("invalid-request", message));
    };
    let options = serde_fields::<JobOptions>();
    if let Some(key) =
        (fields.keys()).find(|k| !JOB_KEYS.contains(&k.as_str()) && !options.contains(&k.as_str()))
    {
        let message = format!("{at}unknown key {key:?} (the keys are in docs/http-api.md)");
        return Err(ApiError::bad_request("unknown-key", message));
    }
    let job = match fields.remove("job") {
        Some(Value::String(job)) => job,
        _ => return Err(shape(at, "needs \"job\", the job's name as a string")),
    };
    let args = fields.remove("args").unwrap_or(Value::Array(vec![]));
    (state.options.args_check)(&job, &args)
        .map_err(|m| ApiError::invalid("invalid-args", format!("{at}args: {m}")))?;
    with_idempotency_header(&mut fields, header_key, at)?;
    let idempotency_key = take::<String>(&mut fields, at, "idempotencyKey", "a string")?;
    let dedupe = take::<bool>(&mut fields, at, "dedupeWhileQueued", "true or false")?;
    let after = take::<Vec<String>>(&mut fields, at, "after", "a list of job ids")?;
    let policy = take::<String>(&mut fields, at, "onDependencyFailure", "a string")?;
    let flags: JobOptions =
        serde_json::from_value(Value::Object(fields)).map_err(|e| shape(at, &e.to_string()))?;
    let mut opts = enqueue_options(&flags, Spelling::Json)
        .map_err(|e| ApiError::invalid(e.error.code, format!("{at}{}", e.error.message)))?;
    opts.idempotency_key = idempotency_key;
    opts.deduplicate_while_queued = dedupe.unwrap_or(false);
    opts.after = after
        .unwrap_or_default()
        .into_iter()
        .map(After::Id)
        .collect();
    opts.on_dependency_failure = policy
        .map(|p| p.parse::<DependencyFailure>())
        .transpose()
        .map_err(|e| ApiError::store(state, at, e))?;
    NewJob::new(&job, args, opts).map_err(|e| ApiError::store(state, at, e))
}

/// Removes `key` and reads it as a `T`; 400 naming the key when it is not one.
fn take<T: serde::de::DeserializeOwned>(
    fields: &mut Map<String, Value>,
    at: &str,
    key: &str,
    what: &str,
) -> Result<Option<T>, ApiError> {
    fields
        .remove(key)
        .map(|v| serde_json::from_value(v).map_err(|_| shape(at, &format!("{key:?} is {what}"))))
        .transpose()
}

/// Puts an `Idempotency-Key` header into the body as its `idempotencyKey`,
/// so a job or a workflow reads one key however it was given; both given and
/// different is `invalid-request`.
pub fn with_idempotency_header(
    fields: &mut Map<String, Value>,
    header: Option<String>,
    at: &str,
) -> Result<(), ApiError> {
    let Some(key) = header else {
        return Ok(());
    };
    match fields.get("idempotencyKey") {
        Some(given) if given != key.as_str() => Err(shape(
            at,
            "Idempotency-Key and \"idempotencyKey\" differ: give one",
        )),
        _ => {
            fields.insert("idempotencyKey".into(), Value::String(key));
            Ok(())
        }
    }
}

fn shape(at: &str, why: &str) -> ApiError {
    ApiError::bad_request("invalid-request", format!("{at}{why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `docs/http-api/job.schema.json` names every key a job takes, and only those.
    #[test]
    fn the_schema_lists_every_key() {
        let schema: Value =
            serde_json::from_str(include_str!("../../../docs/http-api/job.schema.json")).unwrap();
        let mut documented: Vec<&str> = schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut read: Vec<&str> = (JOB_KEYS.iter())
            .chain(serde_fields::<JobOptions>())
            .copied()
            .collect();
        documented.sort_unstable();
        read.sort_unstable();
        assert_eq!(documented, read);
    }
}
