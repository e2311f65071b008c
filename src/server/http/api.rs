//! The REST API for machine clients: bearer API keys with scopes, problem+json errors.

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

use super::problem::Problem;
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

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/whoami", get(whoami))
        .route("/api/v1/kill-switches", get(kill_switches))
        .fallback(not_found)
}

async fn whoami(auth: ApiAuth) -> Json<serde_json::Value> {
    Json(json!({"name": auth.0.name, "scopes": auth.0.scopes}))
}

/// The middleware's workers read the switches before acting (design doc 1, section 3).
async fn kill_switches(State(state): State<AppState>, auth: ApiAuth) -> Result<Response, Problem> {
    auth.require("switches:read")?;
    let s = switches::load(&state.store, state.clock.now()).await?;
    Ok(Json(json!({
        "safe_mode": s.safe_mode.enabled,
        "automation_enabled": s.automation_enabled.enabled,
        "version": s.version,
    }))
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
