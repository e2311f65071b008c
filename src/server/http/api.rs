//! The REST API for machine clients: bearer API keys with scopes, problem+json errors.

use axum::body::Bytes;
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

use super::idempotency;
use super::openapi::{Event, EventAnswer, ProblemResponse, SwitchChange, Switches, WhoAmI};
use super::problem::Problem;
use crate::model::switches::Switch;
use crate::server::domain::kill_switches::{change, ChangeRequest, Ttls};
use crate::server::domain::sessions::{resolve_api_key, ApiPrincipal};
use crate::server::state::AppState;
use crate::server::store::switches;

/// The caller of a REST endpoint, from `Authorization: Bearer <key>`.
pub struct ApiAuth(pub ApiPrincipal);

impl ApiAuth {
    /// 403 unless the key carries `scope`.
    pub fn require(&self, scope: &str) -> Result<&ApiPrincipal, Problem> {
        if self.0.has_scope(scope) {
            Ok(&self.0)
        } else {
            Err(
                Problem::forbidden(format!("This API key lacks the scope {scope}."))
                    .with("required_scope", scope),
            )
        }
    }
}

impl FromRequestParts<AppState> for ApiAuth {
    type Rejection = Problem;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        // The idempotency layer has already resolved it.
        if let Some(principal) = parts.extensions.get::<ApiPrincipal>() {
            return Ok(ApiAuth(principal.clone()));
        }
        let key = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .ok_or_else(|| {
                Problem::unauthorized("Send an API key: Authorization: Bearer <key>.")
            })?;
        match resolve_api_key(&state.store, key, state.clock.now()).await? {
            Some(principal) => Ok(ApiAuth(principal)),
            None => Err(Problem::unauthorized("This API key is not valid.")),
        }
    }
}

pub fn routes(state: &AppState) -> Router<AppState> {
    Router::new()
        .route("/api/v1/whoami", get(whoami))
        .route(
            "/api/v1/kill-switches",
            get(kill_switches)
                .post(change_kill_switch)
                .route_layer(from_fn_with_state(state.clone(), idempotency::require_key)),
        )
        .route("/api/v1/events", axum::routing::post(post_event))
        .merge(super::conversations::routes(state))
        .merge(super::inbox::routes(state))
        .merge(super::measurements::routes(state))
        .fallback(not_found)
}

/// A request body of at most `limit` bytes, or 413 problem+json.
pub async fn read_body(body: axum::body::Body, limit: usize) -> Result<Bytes, Problem> {
    axum::body::to_bytes(body, limit).await.map_err(|_| {
        Problem::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload-too-large",
            "Payload too large",
            format!("The body is at most {} KiB.", limit / 1024),
        )
        .with("limit_bytes", limit)
    })
}

/// The helpdesk webhook's body limit.
pub const EVENT_BODY_LIMIT: usize = 256 * 1024;

#[utoipa::path(
    post,
    path = "/api/v1/events",
    tag = "events",
    request_body(content = Event, content_type = "application/json"),
    responses(
        (status = 200, description = "Processed now, or a duplicate delivery", body = EventAnswer),
        (status = 409, response = ProblemResponse),
        (status = 503, response = ProblemResponse)
    ),
    security(("api_key" = ["events:write"])),
)]
/// The helpdesk posts each customer message here (scope `events:write`). It is processed
/// before the answer: 200 means it is durably recorded; a duplicate delivery answers 200
/// with `"duplicate": true` and does nothing else.
pub(crate) async fn post_event(
    State(state): State<AppState>,
    auth: ApiAuth,
    body: axum::body::Body,
) -> Result<Response, Problem> {
    let principal = auth.require("events:write")?;
    let bytes = read_body(body, EVENT_BODY_LIMIT).await?;
    let incoming = crate::server::domain::events::parse(&bytes)?;
    let actor = format!("api:{}", principal.name);
    use crate::server::domain::ingest::{IngestError, Outcome};
    match state.ingest.ingest(&incoming, &actor).await {
        Ok(Outcome::Processed {
            record,
            decision,
            actions,
        }) => Ok(Json(json!({
            "event_key": record.event_id,
            "duplicate": false,
            "status": record.status,
            "mode": decision.mode,
            "safe_mode": record.safe_mode,
            "intent": decision.intent,
            "team": decision.team,
            "confidence": decision.confidence,
            "tags": decision.tags,
            "risk_flags": decision.risk_flags,
            "actions": actions,
        }))
        .into_response()),
        Ok(Outcome::Duplicate { record }) => Ok(Json(json!({
            "event_key": record.event_id,
            "duplicate": true,
            "status": record.status,
            "intent": record.intent,
        }))
        .into_response()),
        Err(IngestError::InProgress { retry_after }) => {
            Err(Problem::from(crate::model::AppError::InProgress {
                retry_after_secs: retry_after as u64,
            }))
        }
        Err(e @ (IngestError::DeliveryFailed(_) | IngestError::SimulatedCrash)) => {
            Err(Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "retry-later",
                "Retry later",
                e.to_string(),
            )
            .header(header::RETRY_AFTER, "5")
            .with("retry_after", 5))
        }
        Err(IngestError::Store(e)) => Err(e.into()),
    }
}

#[utoipa::path(
    get,
    path = "/api/v1/whoami",
    tag = "console",
    responses(
        (status = 200, description = "OK", body = WhoAmI)
    ),
    security(("api_key" = [])),
)]
pub(crate) async fn whoami(auth: ApiAuth) -> Json<serde_json::Value> {
    Json(json!({"name": auth.0.name, "scopes": auth.0.scopes}))
}

#[utoipa::path(
    get,
    path = "/api/v1/kill-switches",
    tag = "console",
    responses(
        (status = 200, description = "OK", body = Switches)
    ),
    security(("api_key" = ["switches:read"])),
)]
/// The middleware's workers read the switches before acting (design doc 1, section 3).
pub(crate) async fn kill_switches(
    State(state): State<AppState>,
    auth: ApiAuth,
) -> Result<Response, Problem> {
    auth.require("switches:read")?;
    let s = switches::load(&state.store, state.clock.now()).await?;
    Ok(Json(json!({
        "safe_mode": s.safe_mode.enabled,
        "automation_enabled": s.automation_enabled.enabled,
        "version": s.version,
    }))
    .into_response())
}

#[utoipa::path(
    post,
    path = "/api/v1/kill-switches",
    tag = "console",
    request_body(content = SwitchChange, content_type = "application/json"),
    params(
        ("Idempotency-Key" = String, Header, description = "Required: a unique value per request, sent again unchanged on retry")
    ),
    responses(
        (status = 200, description = "OK", body = Switches)
    ),
    security(("api_key" = ["switches:write"])),
)]
/// Incident tooling may flip a switch too (scope `switches:write`), with the same rules as
/// the console: a reason, a confirmation for the risky directions, the version it saw, and
/// an `Idempotency-Key`.
pub(crate) async fn change_kill_switch(
    State(state): State<AppState>,
    auth: ApiAuth,
    body: Bytes,
) -> Result<Response, Problem> {
    let principal = auth.require("switches:write")?;
    let v: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|e| Problem::invalid("body", format!("The body is not JSON: {e}.")))?;
    let field = |name: &str| v.get(name).filter(|x| !x.is_null());
    let switch = field("switch").and_then(|x| x.as_str()).ok_or_else(|| {
        Problem::invalid("switch", "Give switch: safe_mode or automation_enabled.")
    })?;
    let req = ChangeRequest {
        switch: Switch::parse(switch)?,
        enable: field("enable")
            .and_then(|x| x.as_bool())
            .ok_or_else(|| Problem::invalid("enable", "Give enable: true or false."))?,
        expected_version: field("expected_version")
            .and_then(|x| x.as_u64())
            .ok_or_else(|| {
                Problem::invalid(
                    "expected_version",
                    "Give the version you read, a whole number.",
                )
            })?,
        reason: field("reason")
            .and_then(|x| x.as_str())
            .unwrap_or_default()
            .to_string(),
        confirmed: field("confirm").and_then(|x| x.as_bool()).unwrap_or(false),
    };
    let ttls = Ttls {
        audit_days: state.config.ttl.audit_days,
        settings_days: state.config.ttl.settings_days,
    };
    let actor = format!("api:{}", principal.name);
    let key = crate::server::ids::random_hex(8);
    let next = change(
        &state.store,
        &req,
        &actor,
        &key,
        &ttls,
        state.clock.now(),
        &key,
    )
    .await
    .map_err(crate::model::AppError::from)?;
    tracing::info!(actor = %actor, switch = req.switch.key(), enabled = req.enable, version = next.version, "kill switch changed");
    Ok((
        StatusCode::OK,
        Json(json!({
            "safe_mode": next.safe_mode.enabled,
            "automation_enabled": next.automation_enabled.enabled,
            "version": next.version,
        })),
    )
        .into_response())
}

async fn not_found() -> Problem {
    Problem::new(
        StatusCode::NOT_FOUND,
        "not-found",
        "Not found",
        "No such endpoint.",
    )
}
