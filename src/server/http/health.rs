//! `/healthz` (liveness: this process serves, answered without DynamoDB) and `/readyz`
//! (readiness: DynamoDB answers and every table is as the console expects it), which need
//! no key; `/metrics` for Prometheus, with
//! a `metrics:read` key (or on the `operations.metrics_listen` address, without one).

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::{Extension, Json};

use super::extract::{MetricsRead, Scoped};
use crate::model::users::{CurrentUser, Role};
use crate::server::contract::health::{Health, Ready};
use crate::server::state::AppState;

#[utoipa::path(
    get,
    path = "/healthz",
    tag = "console",
    responses(
        (status = 200, description = "The process serves (with what its own requests saw of DynamoDB lately)", body = Health),
    ),
    security(())
)]
/// Liveness, from the process: no DynamoDB request per check. A DynamoDB brownout must not
/// make a load balancer or ECS replace every console at once (a new one reaches DynamoDB no
/// better); readiness and the alarms say how DynamoDB is.
pub(crate) async fn healthz(State(state): State<AppState>) -> impl IntoResponse {
    use crate::server::store::Reach;
    let dynamodb = match state.store.requests().reach() {
        Reach::Ok => "ok",
        Reach::Failing => "failing",
        Reach::Unknown => "unknown",
    };
    (
        StatusCode::OK,
        Json(Health {
            status: "ok",
            dynamodb,
        }),
    )
}

#[utoipa::path(
    get,
    path = "/readyz",
    tag = "console",
    responses(
        (status = 200, description = "DynamoDB answers and every table, index, TTL and stream is as expected", body = Ready),
        (status = 503, description = "Not ready: each problem named (a missing index, say)", body = Ready)
    ),
    security(())
)]
pub(crate) async fn readyz(
    State(state): State<AppState>,
    user: Option<Extension<CurrentUser>>,
    headers: HeaderMap,
) -> impl IntoResponse {
    let problems = state.readiness.problems(&state.store, &state.clock).await;
    let status = if problems.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    // Only problems are detail: a ready console names none, so a key is looked up (a
    // DynamoDB read) only when there are some, and a flood of made-up keys at a ready
    // console costs nothing.
    let detail = !problems.is_empty()
        && (user.is_some_and(|u| u.role.allows(Role::Admin))
            || may_read_metrics(&state, &headers).await);
    let ready = Ready {
        status: if problems.is_empty() {
            "ready"
        } else {
            "not ready"
        },
        problems: detail.then_some(problems),
    };
    (status, Json(ready))
}

/// Whether the request carries an API key with `metrics:read`.
async fn may_read_metrics(state: &AppState, headers: &HeaderMap) -> bool {
    let Some(token) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    matches!(
        state.api_keys.resolve_api_key(token.trim()).await,
        Ok(Some(p)) if p.has_scope(crate::model::api_keys::ApiScope::MetricsRead)
    )
}

/// The Prometheus text format's media type.
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

#[utoipa::path(
    get,
    path = "/metrics",
    tag = "console",
    responses(
        (status = 200, description = "Every metric in the Prometheus text format (docs/operations.md)", body = String, content_type = "text/plain")
    ),
    security(("api_key" = ["metrics:read"])),
)]
pub(crate) async fn metrics(_auth: Scoped<MetricsRead>) -> impl IntoResponse {
    metrics_text().await
}

/// `/metrics` without a key, for the separate metrics address only.
pub(crate) async fn metrics_text() -> impl IntoResponse {
    (
        [(axum::http::header::CONTENT_TYPE, PROMETHEUS_TEXT)],
        crate::server::metrics::render(),
    )
}
