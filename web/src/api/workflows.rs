//! `POST /api/v1/workflows`: the body is a workflow file (`docs/workflows.md`),
//! `{"name", "idempotencyKey"?, "steps": [{"step", "job", "args", "after",
//! "onDependencyFailure", …options}]}`, and the answer is what `duraq
//! workflows enqueue FILE` prints, `{"workflowId", "jobs": {step: jobId},
//! "replayed"}`: 201 when the steps were inserted, 200 when the request
//! replayed an earlier one with the same `idempotencyKey`.
//!
//! Why the file's own parser ([`crate::workflow_file`]): a workflow posted
//! here and one enqueued from a file are one thing, read and refused alike.
//! Its shape refusals (`invalid-workflow-file`: an unknown key, a key of the
//! wrong type, no `"name"`) are 400 like the jobs endpoint's `unknown-key`,
//! since the request is not of the API's shape; a value that is not allowed
//! (an option's code, `invalid-args`, a workflow's own checks such as
//! `workflow-cycle`) is 422, a conflict with what is stored 409. Every step
//! is checked, then all are inserted in one transaction, or none.

use axum::body::Body;
use axum::extract::State as AxumState;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use duraq_core::enqueue_workflow;
use serde_json::Value;

use super::body::{idempotency_header, read_json, with_idempotency_header};
use super::error::{json_response, ApiError};
use super::jobs::producer;
use crate::job_options::values::ValueError;
use crate::workflow_file::{workflow_from_json, INVALID};
use crate::State;

/// `POST /api/v1/workflows`.
pub async fn create(
    AxumState(state): AxumState<State>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let producer = producer(&state)?;
    let header_key = idempotency_header(&headers)?;
    let mut value = read_json(&headers, body).await?;
    if let Value::Object(fields) = &mut value {
        with_idempotency_header(fields, header_key, "")?;
    }
    let workflow = workflow_from_json(value, state.options.args_check).map_err(refused)?;
    let outcome = (enqueue_workflow(producer.as_ref(), workflow).await)
        .map_err(|e| ApiError::store(&state, "", e))?;
    let status = if outcome.replayed {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let body = serde_json::to_value(&outcome).unwrap_or(Value::Null);
    Ok(json_response(status, &body))
}

/// A refusal of the file's parser: its shape 400, a value 422.
fn refused(e: ValueError) -> ApiError {
    if e.code == INVALID {
        ApiError::bad_request(e.code, e.message)
    } else {
        ApiError::invalid(e.code, e.message)
    }
}

#[cfg(test)]
mod tests {
    use crate::workflow_file::{option_keys, workflow_keys, STEP_KEYS};
    use serde_json::Value;

    fn sorted(keys: impl Iterator<Item = String>) -> Vec<String> {
        let mut keys: Vec<String> = keys.collect();
        keys.sort_unstable();
        keys
    }

    fn documented(object: &Value) -> Vec<String> {
        sorted(object["properties"].as_object().unwrap().keys().cloned())
    }

    /// `docs/http-api/workflow.schema.json` names every key a workflow and
    /// its steps take, and only those.
    #[test]
    fn the_schema_lists_every_key() {
        let schema: Value =
            serde_json::from_str(include_str!("../../../docs/http-api/workflow.schema.json"))
                .unwrap();
        let read = sorted(workflow_keys().iter().map(|k| k.to_string()));
        assert_eq!(documented(&schema), read);
        let step = STEP_KEYS.iter().chain(option_keys()).map(|k| k.to_string());
        assert_eq!(documented(&schema["$defs"]["step"]), sorted(step));
    }
}
