//! What a stored response may hold: an allow-list, whatever the operation returned, and a
//! short reason when it stopped. No messages, prompts or personal details reach the store.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::server::store::idempotency::KeyItem;

/// A stored result, as replayed.
#[derive(Clone, Debug, PartialEq)]
pub struct Stored {
    pub status: Option<u16>,
    /// The body: for the HTTP layer the answer's bytes exactly, else sanitized JSON.
    pub json: String,
    /// The answer's own headers (HTTP layer), as a JSON list of `[name, value]`.
    pub headers: Option<String>,
}

impl Stored {
    /// What a succeeded key holds.
    pub(super) fn of(item: &KeyItem) -> Stored {
        Stored {
            status: item.response_status,
            json: item.response_json.clone().unwrap_or_else(|| "{}".into()),
            headers: item.response_headers.clone(),
        }
    }
}

/// Names that never reach the store, at any depth.
const BLOCKED: &[&str] = &[
    "_internal",
    "debug",
    "prompt",
    "prompts",
    "system_prompt",
    "systemPrompt",
    "error",
    "errors",
    "message",
    "stack",
    "stacktrace",
    "trace",
    "provider",
    "model",
    "requestId",
    "request_id",
    "text",
    "body",
    "raw",
    "content",
    "userText",
    "user_text",
    "email",
    "phone",
];

/// What an operation's response may leave behind: the allow-list (docs/idempotency.md,
/// "What is stored").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SafeResponse {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ok: Option<bool>,
    #[serde(
        rename = "stopReason",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub stop_reason: Option<String>,
    #[serde(
        rename = "createdActionRequestIds",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub created_action_request_ids: Vec<i64>,
    #[serde(rename = "traceId", default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    #[serde(
        rename = "needsHuman",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub needs_human: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached: Option<bool>,
    /// A primitive, or a flat object of primitives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

fn is_primitive(v: &Value) -> bool {
    matches!(
        v,
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_)
    )
}

impl SafeResponse {
    /// Keeps the allow-list and drops everything else, whatever the operation returned.
    pub fn sanitize(v: &Value) -> SafeResponse {
        let get = |k: &str| v.get(k);
        let data = match get("data") {
            Some(d) if is_primitive(d) => Some(d.clone()),
            Some(Value::Object(m)) => Some(Value::Object(
                m.iter()
                    .filter(|(k, v)| !BLOCKED.contains(&k.as_str()) && is_primitive(v))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            )),
            _ => None,
        };
        SafeResponse {
            ok: get("ok").and_then(Value::as_bool),
            stop_reason: get("stopReason")
                .and_then(Value::as_str)
                .map(str::to_string),
            created_action_request_ids: get("createdActionRequestIds")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_i64).collect())
                .unwrap_or_default(),
            trace_id: get("traceId").and_then(Value::as_str).map(str::to_string),
            needs_human: get("needsHuman").and_then(Value::as_bool),
            cached: get("cached").and_then(Value::as_bool),
            data,
        }
    }
}

/// A short, customer-safe name for why an operation stopped (no messages, no text).
pub trait StopReason {
    fn stop_reason(&self) -> String;

    /// The operation refused on purpose, as the client's own business (a conflict, an
    /// invalid or forbidden request): counted as a client error, not a failure.
    fn answered(&self) -> bool {
        matches!(
            self.stop_reason().as_str(),
            "invalid" | "conflict" | "not_found" | "refused" | "too_large"
        )
    }
}

impl StopReason for String {
    fn stop_reason(&self) -> String {
        self.clone()
    }
}

impl StopReason for crate::model::AppError {
    fn stop_reason(&self) -> String {
        use crate::model::AppError as E;
        match self {
            E::Invalid { .. } => "invalid",
            E::Conflict(_) => "conflict",
            E::NotFound => "not_found",
            E::Forbidden | E::Unauthenticated => "refused",
            E::TooLarge(_) => "too_large",
            E::InProgress { .. } => "in_progress",
            _ => "error",
        }
        .into()
    }
}

#[cfg(test)]
mod tests;
