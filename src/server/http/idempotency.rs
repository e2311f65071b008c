//! `Idempotency-Key` for the REST endpoints (IETF httpapi draft), on the engine:
//! a replay returns the first answer — its status, its own headers and its body byte for
//! byte — with `Idempotent-Replayed: true`. Our own documented answers are stored whole
//! (the allow-list of docs/idempotency.md, "What is stored", is for what an operation
//! calling outside services returns, and applies in the engine's `run`); a request while
//! the first is still running gets 409 with `Retry-After`; the same key with another body
//! gets 422; endpoints that require a key answer 400 without one. Keys are scoped to the
//! API key that sent them, so no client can read another's stored response.

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::problem::Problem;
use crate::server::domain::idempotency::sent_keys::IdempotencyKey;
use crate::server::services::idempotency::{
    is_correlation_id, sha256_hex, Begin, Call, Engine, KeyInputs, Stored, Ticket,
};
use crate::server::state::AppState;

pub const HEADER: &str = "idempotency-key";
/// The measurements clients' name for the same header (docs/measurements.md, "Request
/// keys"); answers echo it back.
pub const X_HEADER: &str = "x-idempotency-key";

/// The claimed key of the request being handled (its HMAC hash), for handlers.
#[derive(Clone, Debug)]
pub struct ClaimedKey(pub String);
pub const REPLAYED: &str = "idempotent-replayed";
/// Requests larger than this are refused before anything is claimed.
pub const BODY_LIMIT: usize = 256 * 1024;
const STORED_RESPONSE_LIMIT: usize = 64 * 1024;

/// For endpoints where a retry without a key would be unsafe.
pub async fn require_key(state: State<AppState>, req: Request, next: Next) -> Response {
    handle(state, req, next, true).await
}

/// For endpoints that dedupe by content anyway; a key, when sent, is honoured.
pub async fn optional_key(state: State<AppState>, req: Request, next: Next) -> Response {
    handle(state, req, next, false).await
}

fn bearer(req: &Request) -> Option<String> {
    req.headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|v| v.trim().to_string())
}

async fn handle(
    State(state): State<AppState>,
    req: Request,
    next: Next,
    required: bool,
) -> Response {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return next.run(req).await;
    }
    // Authentication first: nothing is claimed for a caller the handler would refuse.
    let Some(token) = bearer(&req) else {
        return next.run(req).await;
    };
    let principal = match state.api_keys.resolve_api_key(&token).await {
        Ok(Some(p)) => p,
        Ok(None) => return next.run(req).await,
        Err(e) => return Problem::from(e).into_response(),
    };
    let echo = req.headers().get(X_HEADER).cloned();
    let key = match sent_key(&req, echo.as_ref(), required) {
        Ok(Some(key)) => key,
        Ok(None) => {
            let (mut parts, body) = req.into_parts();
            parts.extensions.insert(principal);
            return next.run(Request::from_parts(parts, body)).await;
        }
        Err(refused) => return refused.into_response(),
    };
    let (mut parts, body) = req.into_parts();
    let bytes = match axum::body::to_bytes(body, BODY_LIMIT).await {
        Ok(b) => b,
        Err(_) => return too_large(),
    };
    // Only a route the router matched has a scope: nothing a client sends makes one.
    let Some(keyed) = Keyed::of(&parts, &token, &key, &bytes) else {
        parts.extensions.insert(principal);
        return next
            .run(Request::from_parts(parts, Body::from(bytes)))
            .await;
    };
    let engine = &state.idempotency;
    let ticket = match engine.begin(&keyed.call()).await {
        Err(e) => return Problem::from(e).into_response(),
        Ok(Begin::Claimed(ticket)) => ticket,
        Ok(Begin::Replayed(stored)) => return echoed(replay(stored), echo),
        Ok(Begin::InProgress { retry_after }) => return in_progress(retry_after),
        Ok(Begin::Mismatch) => return key_reused(),
    };
    parts.extensions.insert(principal);
    // Handlers whose work spans several writes resume it under this key.
    parts.extensions.insert(ClaimedKey(ticket.key_hash.clone()));
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    match keep(engine, &ticket, response).await {
        Ok(answer) => echoed(answer, echo),
        Err(unavailable) => unavailable.into_response(),
    }
}

/// The key the request sent (`Idempotency-Key`, or `X-Idempotency-Key`), trimmed.
/// `Ok(None)`: none, and none is required. `Err`: the 400 to answer.
fn sent_key(
    req: &Request,
    echo: Option<&HeaderValue>,
    required: bool,
) -> Result<Option<IdempotencyKey>, Problem> {
    match req.headers().get(HEADER).or(echo) {
        None if required => Err(Problem::invalid(
            "Idempotency-Key",
            "This endpoint needs an Idempotency-Key header: a unique value per request, \
             sent again unchanged when the request is retried.",
        )),
        None => Ok(None),
        // Bytes that are not text at all read as empty, and are refused as such.
        Some(v) => Ok(Some(IdempotencyKey::parse(v.to_str().unwrap_or_default())?)),
    }
}

/// A keyed request as the engine sees it: its scope is the route template and the method
/// (one the route serves: the layer wraps only those), its key is bound to the API key
/// that sent it, and its fingerprint covers method, URI and body.
struct Keyed {
    scope: String,
    inputs: KeyInputs,
    fingerprint: String,
}

/// The methods a keyed route can serve, by name: a scope is made of one of these.
fn method_name(method: &Method) -> Option<&'static str> {
    Some(match *method {
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        _ => return None,
    })
}

impl Keyed {
    fn of(parts: &Parts, token: &str, key: &IdempotencyKey, body: &[u8]) -> Option<Keyed> {
        let route = parts.extensions.get::<MatchedPath>()?.as_str();
        let method = method_name(&parts.method)?;
        let mut request_digest = format!("{method} {}\n", parts.uri).into_bytes();
        request_digest.extend_from_slice(body);
        Some(Keyed {
            scope: format!("http:{method} {route}"),
            // A well-formed `X-Correlation-Id` is kept with the key (a malformed one is
            // the route's to refuse).
            inputs: KeyInputs::new()
                .id("principal", sha256_hex(token.as_bytes()))
                .id("key", &**key)
                .correlated(
                    parts
                        .headers
                        .get("x-correlation-id")
                        .and_then(|v| v.to_str().ok())
                        .filter(|c| is_correlation_id(c)),
                ),
            fingerprint: sha256_hex(&request_digest),
        })
    }

    fn call(&self) -> Call<'_> {
        Call {
            tenant: "api",
            scope: &self.scope,
            inputs: &self.inputs,
            fingerprint: Some(self.fingerprint.clone()),
        }
    }
}

fn too_large() -> Response {
    Problem::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload-too-large",
        "Payload too large",
        format!("The body is larger than {} KiB.", BODY_LIMIT / 1024),
    )
    .into_response()
}

/// 409: the first request with this key is still running.
fn in_progress(retry_after: std::time::Duration) -> Response {
    let secs = retry_after.as_secs().max(1);
    Problem::new(
        StatusCode::CONFLICT,
        "in-progress",
        "Request in progress",
        "A request with this Idempotency-Key is still being processed; retry after the \
         time in Retry-After.",
    )
    .header(header::RETRY_AFTER, &secs.to_string())
    .with("retry_after", secs)
    .into_response()
}

/// 422: the key came with another request before.
fn key_reused() -> Response {
    Problem::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency-key-reused",
        "Idempotency-Key reused",
        "This Idempotency-Key was already used with a different request.",
    )
    .into_response()
}

/// Stores the handler's answer under the claim and hands it on. Errors a retry may cure
/// (and answers too large to keep) leave the key retryable; everything else is the answer.
/// `Err`: the answer's body could not be read; the 503 to send instead (without the
/// echoed key).
async fn keep(engine: &Engine, ticket: &Ticket, response: Response) -> Result<Response, Problem> {
    let (res_parts, res_body) = response.into_parts();
    // Read whole: the client gets every byte, whether or not the answer can be stored.
    let res_bytes = match axum::body::to_bytes(res_body, usize::MAX).await {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(error = %e, "an answer's body could not be read");
            let _ = engine.fail(ticket, "unreadable_response").await;
            return Err(Problem::from(crate::model::AppError::Unavailable {
                retry_after_secs: 1,
            }));
        }
    };
    let status = res_parts.status.as_u16();
    let retryable = res_parts.status.is_server_error() || matches!(status, 408 | 409 | 425 | 429);
    let result = if status == 409 {
        // The client's business conflict, answered on purpose: open for its correction.
        engine.refuse(ticket, "http_409").await
    } else if retryable {
        engine.fail(ticket, &format!("http_{status}")).await
    } else {
        match std::str::from_utf8(&res_bytes) {
            Ok(body) if body.len() <= STORED_RESPONSE_LIMIT => {
                let stored = Stored {
                    status: Some(status),
                    json: body.to_string(),
                    headers: Some(answer_headers(&res_parts.headers)),
                };
                engine.succeed(ticket, &stored).await
            }
            // Too large (or not text) to keep: the next call with the key runs again.
            _ => engine.fail(ticket, "response_too_large").await,
        }
    };
    if let Err(e) = result {
        tracing::warn!(error = %e, "could not record the idempotent result");
    }
    Ok(Response::from_parts(res_parts, Body::from(res_bytes)))
}

/// Headers of one connection or one request, not of the answer: a replay leaves them out
/// and sets its own (`Content-Length` from the body, `Idempotent-Replayed`, the echoed
/// `X-Idempotency-Key`).
pub const NOT_REPLAYED: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "te",
    "trailer",
    "content-length",
    "date",
    "server",
    "set-cookie",
    "retry-after",
    X_HEADER,
    REPLAYED,
];

/// The answer's own headers, as stored: a JSON list of `[name, value]`, in order.
fn answer_headers(headers: &axum::http::HeaderMap) -> String {
    let kept: Vec<(&str, &str)> = headers
        .iter()
        .filter(|(name, _)| !NOT_REPLAYED.contains(&name.as_str()))
        .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)))
        .collect();
    serde_json::to_string(&kept).unwrap_or_else(|_| "[]".into())
}

/// Answers carry `X-Idempotency-Key` back when the request sent it.
fn echoed(mut res: Response, key: Option<HeaderValue>) -> Response {
    if let Some(k) = key {
        res.headers_mut().insert(X_HEADER, k);
    }
    res
}

/// The first answer again: its status, its headers and its body byte for byte.
fn replay(stored: Stored) -> Response {
    let status = stored
        .status
        .and_then(|s| StatusCode::from_u16(s).ok())
        .unwrap_or(StatusCode::OK);
    let mut res = Response::new(Body::from(stored.json));
    *res.status_mut() = status;
    let headers: Option<Vec<(String, String)>> = stored
        .headers
        .as_deref()
        .and_then(|h| serde_json::from_str(h).ok());
    match headers {
        Some(list) => {
            for (name, value) in list {
                if let (Ok(n), Ok(v)) = (
                    header::HeaderName::from_bytes(name.as_bytes()),
                    HeaderValue::from_str(&value),
                ) {
                    res.headers_mut().append(n, v);
                }
            }
        }
        // Kept before answers kept their headers.
        None => {
            let content_type = if status.is_client_error() || status.is_server_error() {
                "application/problem+json"
            } else {
                "application/json"
            };
            res.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        }
    }
    res.headers_mut()
        .insert(REPLAYED, HeaderValue::from_static("true"));
    res
}
