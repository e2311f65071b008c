//! `/healthz` (liveness: this console reaches DynamoDB) and `/readyz` (readiness: and every
//! table is as the console expects it), which need no key; `/metrics` for Prometheus, with
//! a `metrics:read` key (or on the `operations.metrics_listen` address, without one).

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;

use super::extract::{MetricsRead, Scoped};
use crate::server::contract::health::{Health, Ready};
use crate::server::state::AppState;
use crate::server::store::schema;

#[utoipa::path(
    get,
    path = "/healthz",
    tag = "console",
    responses(
        (status = 200, description = "DynamoDB answers", body = Health),
        (status = 503, description = "DynamoDB does not answer", body = Health)
    ),
    security(())
)]
pub(crate) async fn healthz(State(state): State<AppState>) -> impl IntoResponse {
    match tokio::time::timeout(Duration::from_secs(3), state.store.ping()).await {
        Ok(Ok(())) => (
            StatusCode::OK,
            Json(Health {
                status: "ok",
                dynamodb: "ok",
            }),
        ),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "health check: DynamoDB failed");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(Health {
                    status: "unavailable",
                    dynamodb: "error",
                }),
            )
        }
        Err(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(Health {
                status: "unavailable",
                dynamodb: "timeout",
            }),
        ),
    }
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
pub(crate) async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    let problems = match tokio::time::timeout(Duration::from_secs(5), check(&state)).await {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readiness check: DynamoDB failed");
            vec!["DynamoDB could not be asked (the console's log says why)".to_string()]
        }
        Err(_) => vec!["DynamoDB did not answer within 5 s".to_string()],
    };
    let status = if problems.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let ready = Ready {
        status: if problems.is_empty() {
            "ready"
        } else {
            "not ready"
        },
        problems,
    };
    (status, Json(ready))
}

/// Each check asks DynamoDB to describe every table and its TTL (two requests a table):
/// probe every 10 s or slower.
async fn check(state: &AppState) -> Result<Vec<String>, crate::server::store::StoreError> {
    schema::drift(&state.store).await
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
